"""Security headers on every response: the inspector may not be framed, sniffed or made to
load anything from elsewhere.

The inspector is plain files and one script from this server (no inline script or style,
no CDN), so its policy allows ``'self'`` only. FastAPI's /docs and /redoc pages load Swagger
and ReDoc from a CDN with inline script: they get every header but the script policy.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

INSPECTOR_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
                 "frame-ancestors 'none'")
DOCS_CSP = "frame-ancestors 'none'; base-uri 'none'"
DOCS_PATHS = ("/docs", "/redoc")
COMMON = ((b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
          (b"referrer-policy", b"no-referrer"), (b"cross-origin-opener-policy", b"same-origin"))


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        docs = str(scope.get("path", "")).startswith(DOCS_PATHS)
        policy = (DOCS_CSP if docs else INSPECTOR_CSP).encode()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                added = [(n, v) for n, v in (*COMMON, (b"content-security-policy", policy))
                         if n not in present]
                message["headers"] = [*message.get("headers", []), *added]
            await send(message)

        await self.app(scope, receive, with_headers)
