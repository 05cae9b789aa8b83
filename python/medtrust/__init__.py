"""medtrust from Python: the medtrust C library (libmedtrust.so) over ctypes.

The same engine as the ``medtrust`` command: corpus stores and hybrid
search (``Store``), sentence vectors (``embed``), clinical-note checking
(``Checker``; batches of notes, journaled and resumable:
``Checker.run_batch``), verified question answering (``ask``) and the MEDIQA-CORR
scorer (``score``). Failures raise ``medtrust.Error`` subclasses named
after the C status (``InvalidArgumentError``, ``ModelError``, ...) with the
library's message. Long calls release the GIL, and Ctrl-C stops them
through the library's cancel flag, leaving stores and indexes whole.

The library is found through ``$MEDTRUST_LIB``, else where the package was
installed from (see ``medtrust._lib.find_library``).
"""

from __future__ import annotations

import atexit

from . import _lib
from .embed import close_embedders, embed
from .errors import (
    CanceledError, DatabaseError, Error, InputOutputError, InternalError,
    InvalidArgumentError, LimitError, ModelError, NotFoundError,
    OutOfMemoryError, ParseError, UnsupportedError, WriteError,
)
from .batch import BatchNote, BatchResult
from .check import CheckResult, Checker, settings_help
from .frames import read_notes, to_pandas
from .qa import Answer, Answerer, ask, verify
from .score import Score, score
from .store import AddResult, Hit, IndexResult, Store

__version__ = "0.1.0"

def _at_exit() -> None:
    _lib.unload_log()
    if _lib._lib is not None:
        close_embedders()


atexit.register(_at_exit)


def version() -> str:
    """The C library's version (``mt_version()``)."""
    return (_lib.lib().mt_version() or b"").decode()


def library_path() -> str:
    """The path of the libmedtrust.so in use."""
    return _lib.lib().path


__all__ = [
    "Answer", "Answerer", "BatchNote", "BatchResult", "CheckResult", "Checker", "Score", "ask", "score",
    "read_notes", "settings_help", "to_pandas", "verify",
    "AddResult", "CanceledError", "DatabaseError", "Error", "Hit",
    "IndexResult", "InputOutputError", "InternalError",
    "InvalidArgumentError", "LimitError", "ModelError", "NotFoundError",
    "OutOfMemoryError", "ParseError", "Store", "UnsupportedError",
    "WriteError", "embed", "library_path", "version",
]
