"""Batches of notes on the library's note runner (``medtrust/batch.h``):
``Checker.run_batch`` checks a MEDEC-format CSV as ``medtrust mediqa``
does, journaled and resumable, and gives its submission."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from . import _lib
from ._lib import b
from ._util import check
from .errors import UnsupportedError

PathArg = Union[str, "os.PathLike[str]"]


@dataclass
class BatchNote:
    """One note of a batch and what became of it.

    Attributes:
        id: its Text ID.
        line: its submission line (the fallback line when it failed; None
            when it was not checked).
        failed: its check failed (``error`` says why).
        fallback: ... with a fallback verdict (no usable model reply).
        resumed: its line came from the journal.
    """

    id: str
    line: Optional[str]
    failed: bool = False
    fallback: bool = False
    resumed: bool = False
    error: Optional[str] = None


@dataclass
class BatchResult:
    """A batch run: its notes in the CSV's order and the counts
    (``medtrust mediqa --json``'s notes, resumed, checked, failed and
    fallback_verdicts) and summed usage of the notes it checked."""

    notes: List[BatchNote]
    total: int
    resumed: int
    checked: int
    failed: int
    fallback: int
    usage: Dict[str, int] = field(default_factory=dict)

    def submission(self, with_failed: bool = False) -> str:
        """The MEDIQA-CORR submission text, as ``mediqa --out`` writes it:
        a failed note's fallback line only with ``with_failed``."""
        return "".join(f"{n.line}\n" for n in self.notes
                       if n.line is not None and (with_failed or not n.failed))


def _text(v: Optional[bytes]) -> Optional[str]:
    return None if v is None else v.decode("utf-8", "replace")


def _usage(u: _lib.CheckUsage) -> Dict[str, int]:
    return {name: int(getattr(u, name)) for name, _ in u._fields_}


def _result(L: Any, h: int) -> BatchResult:
    prog = _lib.BatchProgress()
    L.mt_batch_progress_get(h, ctypes.byref(prog))
    notes = []
    x = _lib.BatchNote()
    for i in range(L.mt_batch_count(h)):
        L.mt_batch_note_get(h, i, ctypes.byref(x))
        notes.append(BatchNote(_text(x.id) or "", _text(x.line),
                               bool(x.failed), bool(x.fallback),
                               bool(x.resumed), _text(x.error)))
    return BatchResult(notes, prog.total, prog.resumed, prog.checked,
                       prog.failed, prog.fallback, _usage(prog.usage))


class _Run:
    """One mt_batch_run's callbacks and the C strings it borrows."""

    def __init__(self, on_progress: Optional[Callable[[Dict[str, int],
                                                       Optional[str]], None]],
                 stop: Callable[[], bool]) -> None:
        self.user_fn = on_progress
        self.stop = stop
        self.progress_fn = _lib.BATCH_PROGRESS_FN(self._progress)
        self.cancel_fn = _lib.CANCEL0_FN(self._cancelled)

    def _progress(self, user: object, p: Any, note: Any) -> None:
        if self.user_fn is None:
            return
        c = p.contents
        counts = {"total": c.total, "resumed": c.resumed,
                  "checked": c.checked, "failed": c.failed,
                  "fallback": c.fallback}
        try:
            self.user_fn(counts, _text(note.contents.id) if note else None)
        except Exception:  # a callback's error must not unwind into C
            _lib.log.exception("on_progress callback failed")

    def _cancelled(self, user: object) -> int:
        return 1 if self.stop() else 0


def run_batch(agent: int, data: PathArg, *, out: Optional[PathArg],
              journal: Optional[PathArg], trace: Optional[PathArg],
              jobs: int, resume: bool, limit: int, with_failed: bool,
              on_progress: Optional[Callable[[Dict[str, int], Optional[str]],
                                             None]],
              stop: Callable[[], bool]) -> BatchResult:
    """mt_batch_open_csv, mt_batch_run and the submission; see
    ``Checker.run_batch``."""
    L = _lib.lib()
    if getattr(L.dll, "mt_batch_run", None) is None:
        raise UnsupportedError(f"{L.path} has no note runner (mt_batch_run)")
    h = ctypes.c_void_p()
    err = _lib.Error_()
    check(L.mt_batch_open_csv(b(os.fspath(data)), limit, ctypes.byref(h),
                              ctypes.byref(err)), err)
    try:
        run = _Run(on_progress, stop)
        p = _lib.BatchParams()
        L.mt_batch_default_params(ctypes.byref(p))
        p.jobs = jobs
        p.resume = int(resume)
        jp = journal if journal is not None else (
            f"{os.fspath(out)}.journal" if out is not None else None)
        p.journal_path = None if jp is None else b(os.fspath(jp))
        p.trace_path = None if trace is None else b(os.fspath(trace))
        p.on_progress = run.progress_fn
        p.cancelled = run.cancel_fn
        check(L.mt_batch_run(h, agent, ctypes.byref(p), ctypes.byref(err)),
              err)
        if out is not None:
            check(L.mt_batch_write_submission(h, b(os.fspath(out)),
                                              int(with_failed),
                                              ctypes.byref(err)), err)
        return _result(L, h.value)
    finally:
        L.mt_batch_free(h)
