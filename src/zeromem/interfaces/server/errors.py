"""Errors as HTTP: the library's own error classes and messages, each with one status code.

Every error body is ``{"error": {"type": <class name>, "message": <the library's message>}}``,
so a client can branch on ``type`` exactly as Python code catches the class.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ...errors import (
    EmbedderMismatch,
    InvalidInput,
    ModelUnavailable,
    NotFound,
    StoreError,
    ZeromemError,
)
from ...reader.base import ReaderError

_log = logging.getLogger("zeromem.server")

# Most specific first: EmbedderMismatch is a StoreError.
STATUS: list[tuple[type[Exception], int]] = [
    (InvalidInput, 400),
    (NotFound, 404),
    (EmbedderMismatch, 409),
    (StoreError, 409),  # locked by another writer, closed, newer schema: retry or fix the store
    (ModelUnavailable, 503),
    (ReaderError, 502),  # the reader's LLM server failed; memory itself is fine
    (ZeromemError, 400),
]


class ApiError(Exception):
    """An error the server itself raises (auth, size limits, missing configuration)."""

    def __init__(self, status: int, type_: str, message: str) -> None:
        super().__init__(message)
        self.status, self.type, self.message = status, type_, message


def error_response(status: int, type_: str, message: str, headers: dict[str, str] | None = None
                   ) -> JSONResponse:
    return JSONResponse({"error": {"type": type_, "message": message}}, status_code=status,
                        headers=headers)


def status_of(exc: Exception) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def install(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into the error body above."""

    @app.exception_handler(ZeromemError)
    async def _library(_: Request, exc: ZeromemError) -> JSONResponse:
        return error_response(status_of(exc), type(exc).__name__, str(exc))

    @app.exception_handler(ApiError)
    async def _api(_: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.type, exc.message, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors()[:10]:
            where = ".".join(str(part) for part in err.get("loc", ()) if part != "body")
            problems.append(f"{where or 'body'}: {err.get('msg')}")
        return error_response(422, "InvalidRequest", "; ".join(problems) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, "HTTPError", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        _log.exception("zeromem server: unexpected error")
        return error_response(500, "InternalError", f"{type(exc).__name__}: the server logged the details")
