"""``zeromem bench tenants --citus-add-node HOST:PORT``: add a Citus worker and rebalance while
the tenants bench serves (docs/postgres.md, "Citus").

The store (``--db``) is a Citus coordinator's database that zeromem has distributed. At
``at_s`` into the load, a thread adds the node (``citus_add_node``), starts the background
rebalance (``citus_rebalance_start``: shard groups move with logical replication, reads and
writes go on) and polls ``citus_rebalance_status`` until it ends. The requests are then split
into before / during / after, each with its request rate and latency percentiles; the store's
placement (shard groups and scopes per node) is read before and after.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

POLL_S = 0.5


class Rebalance(threading.Thread):
    """Adds ``node`` ("host:port") to the cluster of ``url`` at ``at_s`` after ``started``
    (a perf_counter value) and rebalances; ``marks`` holds the times, ``error`` what failed."""

    def __init__(self, url: str, node: str, at_s: float, started: float, timeout_s: float = 600.0) -> None:
        super().__init__(name="zeromem-rebalance", daemon=True)
        host, _, port = node.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--citus-add-node takes HOST:PORT, got {node!r}")
        self.url, self.host, self.port = url, host, int(port)
        self.at_s, self.started, self.timeout_s = at_s, started, timeout_s
        self.marks: dict[str, float] = {}
        self.error: str | None = None
        self.state: str | None = None

    def _now(self) -> float:
        return round(time.perf_counter() - self.started, 3)

    def run(self) -> None:
        import psycopg

        time.sleep(max(0.0, self.started + self.at_s - time.perf_counter()))
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                self.marks["added"] = self._now()
                conn.execute("SELECT citus_add_node(%s, %s)", (self.host, self.port))
                conn.execute("SELECT citus_rebalance_start()")
                self.marks["started"] = self._now()
                deadline = time.monotonic() + self.timeout_s
                while time.monotonic() < deadline:
                    row = conn.execute("SELECT state FROM citus_rebalance_status() ORDER BY job_id DESC"
                                       " LIMIT 1").fetchone()
                    self.state = None if row is None else str(row[0])
                    if self.state in (None, "finished", "failed", "cancelled"):
                        break
                    time.sleep(POLL_S)
                self.marks["done"] = self._now()
                if self.state not in (None, "finished"):
                    self.error = f"the rebalance ended {self.state}"
        except psycopg.Error as exc:
            self.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"


def phases(requests: list[dict[str, Any]], marks: dict[str, float], wall_s: float) -> dict[str, Any]:
    """Request rate and latency before the node was added, while shards moved, and after."""
    added = min(marks.get("added", wall_s), wall_s)
    done = min(max(marks.get("done", wall_s), added), wall_s)  # a rebalance may outlast the load
    spans = {"before": (0.0, added), "during": (added, done), "after": (done, wall_s)}
    out: dict[str, Any] = {}
    for name, (low, high) in spans.items():
        ms = np.array([r["ms"] for r in requests if low <= r["t"] < high], dtype=np.float64)
        seconds = max(high - low, 1e-9)
        out[name] = {"seconds": round(high - low, 2), "requests": int(ms.size),
                     "req_s": round(ms.size / seconds, 2) if high > low else None,
                     "p50_ms": round(float(np.percentile(ms, 50)), 1) if ms.size else None,
                     "p95_ms": round(float(np.percentile(ms, 95)), 1) if ms.size else None,
                     "writes": sum(1 for r in requests if low <= r["t"] < high and r["kind"] == "write")}
    return out


def shards_per_node(placement: dict[str, Any] | None) -> dict[str, Any] | None:
    if placement is None:
        return None
    return {n["node"]: {"shards": n["shards"], "scopes": n["scopes"]} for n in placement["nodes"]}
