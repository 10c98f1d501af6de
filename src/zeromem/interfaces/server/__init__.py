"""The REST memory service (``zeromem serve``): FastAPI app, API-key auth, web inspector."""

from .app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]
