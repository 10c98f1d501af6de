"""A JSON-over-HTTP server on a free loopback port, for tests that need a fake LLM server."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackJSONServer:
    """Answers every POST with ``respond(request) -> (status, body)`` or ``(status, body,
    headers)``; records each request as ``{"path", "headers", "body"}``. ``url`` is its ``/v1``
    root."""

    def __init__(self, respond: Callable[[dict[str, Any]], tuple[Any, ...]]) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                request = {"path": self.path, "headers": dict(self.headers),
                           "body": json.loads(self.rfile.read(length))}
                server.requests.append(request)
                status, body, *extra = respond(request)
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for name, value in (extra[0] if extra else {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the reader's timeout tests)

            def log_message(self, *args: object) -> None:
                pass  # keep test output clean

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
