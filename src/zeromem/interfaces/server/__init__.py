"""The REST memory service (``zeromem serve``): FastAPI app, API-key auth, web inspector."""

from .app import ServerSettings, create_app
from .options import ServerOptions, WorkerSpec

__all__ = ["ServerOptions", "ServerSettings", "WorkerSpec", "create_app"]
