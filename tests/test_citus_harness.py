"""tests/citus_cluster.py without a cluster: where the Citus source archive is missing, the
Citus tests skip with a reason that says where it was looked for."""

from __future__ import annotations

import pytest

import citus_cluster
from pg_server import Unavailable


def test_a_missing_archive_is_a_clear_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("ZEROMEM_CITUS_SRC", str(tmp_path / "nowhere.tar.gz"))
    with pytest.raises(Unavailable, match=r"ZEROMEM_CITUS_SRC names .*nowhere\.tar\.gz, which is not a file"):
        citus_cluster.build()
    monkeypatch.delenv("ZEROMEM_CITUS_SRC")
    monkeypatch.setattr(citus_cluster, "ROOT", tmp_path / "repo")
    with pytest.raises(Unavailable, match=r"no Citus source archive \(citus-\*-src.tar.gz\) in .*shared/vendor"):
        citus_cluster.source_archive()
