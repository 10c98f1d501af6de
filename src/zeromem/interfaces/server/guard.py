"""Who may reach the server through a browser: the Host and Origin checks.

A server on 127.0.0.1 is still reachable from every web page its user opens: a page can send
a "simple" cross-site POST (a form or multipart upload needs no CORS preflight), and a page
whose DNS name is re-pointed at 127.0.0.1 (DNS rebinding) reads the answers as its own. An
API key does not stop either when the server runs with ``--no-auth``, and the Host is not part
of a key. So every request, keys or no keys, must come

* to a Host this server answers to: the address it is bound to, the loopback names, or one
  of ``--allow-host`` (``*``: any) — else 421 Misdirected Request;
* from no Origin (curl, SDKs, MCP clients, the inspector's own GETs), from the server's own
  origin (the inspector), or from one of ``--allow-origin`` (``*``: any) — else 403.

An allowed foreign origin also gets the CORS headers a browser needs to read the answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import errors

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
ANY = "*"
_WILDCARD_BINDS = ("0.0.0.0", "::", "")  # "every interface": no Host is named so
_CORS_METHODS = b"GET, POST, PATCH, DELETE, OPTIONS"
_CORS_HEADERS = b"authorization, content-type"


def host_name(value: str) -> str:
    """The name part of a Host header or bind address: no port, no IPv6 brackets, lowercase."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        return value.partition(":")[0]
    return value  # a bare IPv6 address or a name without a port


def allowed_hosts(bound: str, extra: Iterable[str]) -> frozenset[str]:
    """The Host names a server bound to ``bound`` answers to (``*`` among them: any)."""
    names = {host_name(h) for h in extra if h.strip()}
    if host_name(bound) not in _WILDCARD_BINDS:
        names.add(host_name(bound))
    return frozenset(names | set(LOOPBACK_NAMES))


def normal_origin(value: str) -> str:
    """An origin as browsers send it: scheme://host[:port], lowercase, no trailing slash."""
    return value.strip().rstrip("/").lower()


class RequestGuard:
    """Refuse foreign Hosts (421) and cross-site Origins (403) before any route runs."""

    def __init__(self, app: ASGIApp, *, hosts: frozenset[str], origins: Iterable[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = frozenset(normal_origin(o) for o in origins if o.strip())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if host and ANY not in self.hosts and host_name(host) not in self.hosts:
            await _refuse(send, 421, "MisdirectedRequest",
                          f"this server does not answer to the Host {host[:100]!r} (a page whose DNS "
                          "name points here is refused): use http://127.0.0.1:PORT, or start "
                          "`zeromem serve` with --allow-host NAME for the name you use")
            return
        origin = headers.get(b"origin")
        if origin is None:
            await self.app(scope, receive, send)
            return
        shown = origin.decode("latin-1")
        wanted = normal_origin(shown)
        # The inspector's own requests; https where a TLS proxy in front serves this Host.
        if host and wanted in (f"http://{host}".lower(), f"https://{host}".lower()):
            await self.app(scope, receive, send)
            return
        if ANY not in self.origins and wanted not in self.origins:
            await _refuse(send, 403, "CrossOriginRefused",
                          f"requests from the web page origin {shown[:100]!r} are refused (any page "
                          "the user opens could otherwise write to this memory): call the API "
                          "from a program, or start `zeromem serve` with --allow-origin ORIGIN")
            return
        if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            await _preflight(send, origin)
            return
        await self.app(scope, receive, _with_cors(send, origin))


def _with_cors(send: Send, origin: bytes) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), (b"access-control-allow-origin", origin),
                                  (b"vary", b"Origin")]
        await send(message)
    return wrapped


async def _preflight(send: Send, origin: bytes) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": [
        (b"access-control-allow-origin", origin), (b"access-control-allow-methods", _CORS_METHODS),
        (b"access-control-allow-headers", _CORS_HEADERS), (b"access-control-max-age", b"600"),
        (b"vary", b"Origin")]})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, status: int, type_: str, message: str) -> None:
    response = errors.error_response(status, type_, message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(response.body)).encode())]})
    await send({"type": "http.response.body", "body": response.body})
