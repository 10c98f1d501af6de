"""What ``zeromem serve`` hands each worker process: the memory's ``Config`` and the server's
own options (``ServerOptions``), both typed, in one JSON document.

uvicorn starts the workers itself (and restarts them), so they cannot receive Python objects
from the command that parsed the flags: ``cli_service.worker_options`` writes this document to
a file only its user can read and names the file in ``$ZEROMEM_SERVE``; each worker reads it
back with ``WorkerSpec.from_json``. ``Config.to_dict`` / ``Config.from_dict`` carry every
Config field, so every setting ``zeromem serve`` accepts (a flag, a ``ZEROMEM_<FIELD>``
variable, ``--config FILE``) reaches the workers with the one validation ``Config`` applies.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from ...config import Config
from ...errors import InvalidInput

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """The server's settings that are not the memory's (``zeromem serve``'s flags).

    ``db`` is the store (a path or URL); ``user`` / ``agent`` the scope of every request when
    ``require_auth`` is off; ``max_body_bytes`` the largest request body; ``reader_url`` and
    ``reader_model`` the OpenAI-compatible reader of /v1/answer (both or neither);
    ``threads`` request threads per process; ``preload`` builds scopes' indexes at start;
    ``host`` the bound address, ``allow_hosts`` / ``allow_origins`` the other Host names and
    web origins it answers; ``metrics`` serves /metrics; ``compat`` the other memory APIs it
    answers as well (``"mem0"``).
    """

    db: str
    user: str | None = None
    agent: str | None = None
    require_auth: bool = True
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    reader_url: str | None = None
    reader_model: str | None = None
    threads: int | None = None
    preload: bool = False
    host: str = "127.0.0.1"
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    metrics: bool = False
    compat: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.reader_url is None) != (self.reader_model is None):
            raise InvalidInput("--reader-url and --reader-model go together")
        if isinstance(self.max_body_bytes, bool) or not isinstance(self.max_body_bytes, int) or self.max_body_bytes < 1:
            raise InvalidInput(f"max_body_bytes must be a positive int, got {self.max_body_bytes!r}")


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """Everything a worker builds its app from: the memory's Config and the server's options."""

    server: ServerOptions
    config: Config = field(default_factory=Config)

    def to_json(self) -> str:
        return json.dumps({"server": dataclasses.asdict(self.server), "config": self.config.to_dict()})

    @classmethod
    def from_json(cls, text: str) -> WorkerSpec:
        data: dict[str, Any] = json.loads(text)
        server = dict(data["server"])
        for name in ("allow_hosts", "allow_origins", "compat"):  # JSON has lists, the options tuples
            server[name] = tuple(server.get(name) or ())
        return cls(server=ServerOptions(**server), config=Config.from_dict(data.get("config") or {}))
