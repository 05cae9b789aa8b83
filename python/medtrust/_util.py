"""Calling into the library: status checks, cancellation and Ctrl-C."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional, TypeVar

from . import _lib
from .errors import error_for

T = TypeVar("T")
H = TypeVar("H", bound="Handle")


def check(st: int, err: _lib.Error_) -> None:
    """Raises the Error subclass for a failed status, with the C message."""
    if st == 0:
        return
    msg = err.msg.decode("utf-8", "replace")
    if not msg:
        msg = (_lib.lib().mt_status_str(st) or b"").decode()
    raise error_for(st, msg)


class Cancel:
    """A flag the C side polls through a callback (the ``cancelled``
    fields); set on Ctrl-C or by ``set()`` from another thread."""

    def __init__(self) -> None:
        self.event = threading.Event()
        ev = self.event
        # Two shapes: int (*)(void *) and int (*)(void *, const char *).
        self.fn0 = _lib.CANCEL0_FN(lambda user: 1 if ev.is_set() else 0)
        self.fn1 = _lib.CANCEL1_FN(lambda user, note: 1 if ev.is_set() else 0)

    def set(self) -> None:
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()


def interruptible(fn: Callable[[], T], cancel: Cancel) -> T:
    """Runs ``fn`` (a C call that polls ``cancel``) so Ctrl-C stops it.

    On the main thread the call runs on a helper thread while the main
    thread waits: Python delivers KeyboardInterrupt only to the main
    thread, and only between bytecodes, never inside a C call. On Ctrl-C
    the flag is set, the C call stops at its next poll and returns as the
    library does when cancelled (a store or index is left as it was, or
    resumable), and KeyboardInterrupt is raised then. On another thread
    ``fn`` runs where it is.
    """
    if threading.current_thread() is not threading.main_thread():
        return fn()
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["r"] = fn()
        except BaseException as e:  # passed to the caller below
            box["e"] = e

    t = threading.Thread(target=target, name="medtrust-call", daemon=True)
    t.start()
    interrupted = False
    while t.is_alive():
        try:
            t.join()
        except KeyboardInterrupt:
            interrupted = True
            cancel.set()
    if interrupted:
        raise KeyboardInterrupt
    if "e" in box:
        raise box["e"]
    return box["r"]


def opt_str(v: Optional[str]) -> Optional[bytes]:
    return None if v is None else str(v).encode("utf-8")


class Busy:
    """Counts the calls in flight on a handle so ``close()`` waits for
    them (closing a C handle under a running call would free what it
    uses) and refuses new ones once closing."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.cv = threading.Condition()
        self.n = 0
        self.closed = False

    def __enter__(self) -> "Busy":
        with self.cv:
            if self.closed:
                from .errors import InvalidArgumentError
                raise InvalidArgumentError(f"the {self.what} is closed")
            self.n += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self.cv:
            self.n -= 1
            self.cv.notify_all()

    def close(self, cancel: Optional[Callable[[], None]] = None) -> bool:
        """Marks the handle closed, cancels (``cancel``) and waits for the
        calls in flight; True for the first close."""
        with self.cv:
            first = not self.closed
            self.closed = True
            if self.n and cancel:
                cancel()
            self.cv.wait_for(lambda: self.n == 0)
        return first


class Handle:
    """A C handle's life cycle, shared by Store, Answerer and Checker:
    ``close()`` (idempotent: marks the handle closed, cancels the calls in
    flight with ``_cancel_running`` and waits for them, closes what
    ``_close_more`` names, then frees the handle with the library's
    ``_close_fn``), a context manager, a close when collected, and
    ``_handle()``, which refuses a closed handle naming ``_what``."""

    _what = "handle"  # what the error of a closed handle names
    _close_fn = ""  # the library function that frees the handle
    _h: Optional[int] = None

    def _cancel_running(self) -> None:
        """Asks the calls in flight to stop (before their next model
        call); none by default."""

    def _close_more(self) -> None:
        """Closes what the subclass holds besides the handle."""

    def _free(self) -> None:
        if getattr(self, "_h", None):
            getattr(_lib.lib(), self._close_fn)(self._h)
            self._h = None

    def close(self) -> None:
        """Closes the handle once the calls running on other threads are
        cancelled and done. Idempotent."""
        busy = getattr(self, "_busy", None)
        if busy is not None:
            busy.close(self._cancel_running)
        self._close_more()
        self._free()

    def __enter__(self: H) -> H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _handle(self) -> int:
        h = getattr(self, "_h", None)
        if not h:
            from .errors import InvalidArgumentError
            raise InvalidArgumentError(f"the {self._what} is closed")
        return int(h)
