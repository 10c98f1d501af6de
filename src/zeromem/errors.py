"""The error hierarchy. Every error says what was wrong and how to fix it."""


class ZeromemError(Exception):
    """Base class of every error zeromem raises on purpose."""


class InvalidInput(ZeromemError, ValueError):
    """The caller passed something zeromem cannot store or use; nothing was changed."""


class NotFound(ZeromemError, KeyError):
    """An id, session or scope does not exist (in the scope that was asked)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else "not found"


class StoreError(ZeromemError):
    """The database could not complete an operation (locked, corrupt, newer schema...)."""


class ModelUnavailable(ZeromemError):
    """A required encoder model or package is missing; the message names the install command."""


class LLMForbidden(ZeromemError):
    """A memory operation tried to reach a language model (only the reader may)."""


class EmbedderMismatch(StoreError):
    """A scope's stored vectors were made by another embedder than the one configured now.

    Mixing them would make every cosine meaningless (or fail on the dimension); the message
    names both embedders and says to run ``zeromem reindex`` for that scope.
    """
