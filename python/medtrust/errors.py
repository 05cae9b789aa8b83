"""medtrust.Error and one subclass per C status (include/medtrust/status.h).

Every failing call raises the subclass named after the status the C
library returned, with the library's own message (which says what to
do): ``InvalidArgumentError`` for ``MT_EINVAL`` and so on. The status name
is ``err.status`` (``"EINVAL"``) and its number ``err.code``.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class Error(Exception):
    """A failure reported by the medtrust C library.

    Attributes:
        status: the status name without its ``MT_`` prefix, e.g. ``"EPARSE"``.
        code: the status number (``enum mt_status``).
        message: the library's message: what failed and how to fix it.
    """

    status = "EINTERNAL"
    code = 11

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class OutOfMemoryError(Error, MemoryError):
    """MT_ENOMEM: out of memory."""

    status, code = "ENOMEM", 1


class InvalidArgumentError(Error, ValueError):
    """MT_EINVAL: an invalid argument or setting (the message names it)."""

    status, code = "EINVAL", 2


class ParseError(Error, ValueError):
    """MT_EPARSE: malformed input (the message names the file and line)."""

    status, code = "EPARSE", 3


class LimitError(Error, ValueError):
    """MT_ELIMIT: a size or count limit was exceeded."""

    status, code = "ELIMIT", 4


class InputOutputError(Error, OSError):
    """MT_EIO: a file could not be read or opened."""

    status, code = "EIO", 5


class NotFoundError(Error, LookupError):
    """MT_ENOTFOUND: a file, document or model was not found."""

    status, code = "ENOTFOUND", 6


class DatabaseError(Error):
    """MT_EDB: the store's SQLite (or PostgreSQL) database failed."""

    status, code = "EDB", 7


class UnsupportedError(Error):
    """MT_EUNSUPPORTED: not supported by this build or this store."""

    status, code = "EUNSUPPORTED", 8


class CanceledError(Error):
    """MT_ECANCELED: the call was cancelled."""

    status, code = "ECANCELED", 9


class ModelError(Error):
    """MT_EMODEL: the model's calls failed or its replies were unusable, so
    there is no answer (never a fallback passed off as one)."""

    status, code = "EMODEL", 10


class InternalError(Error):
    """MT_EINTERNAL: a bug in medtrust."""

    status, code = "EINTERNAL", 11


class WriteError(Error, OSError):
    """MT_EWRITE: out of space or an I/O error while writing."""

    status, code = "EWRITE", 12


#: status number -> exception class, in enum mt_status order (1..12)
BY_CODE: Dict[int, Type[Error]] = {
    cls.code: cls
    for cls in (
        OutOfMemoryError, InvalidArgumentError, ParseError, LimitError,
        InputOutputError, NotFoundError, DatabaseError, UnsupportedError,
        CanceledError, ModelError, InternalError, WriteError,
    )
}


def error_for(code: int, message: str) -> Error:
    """The exception for status ``code`` with the library's message."""
    cls = BY_CODE.get(code, Error)
    err = cls(message, code)
    return err
