"""Checker: MEDIQA-CORR clinical-note checking (react-reflex, guards,
single), as ``medtrust check`` and ``medtrust mediqa`` run it."""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import itertools
import json
import os
import threading
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional,
    Sequence, Union,
)

from . import _lib
from ._lib import b
from ._util import Busy, Cancel, Handle, check
from .errors import Error, InvalidArgumentError, ModelError, UnsupportedError

if TYPE_CHECKING:
    from .batch import BatchResult

SEARCH_MODES = {"auto": -1, "bm25": 0, "dense": 1, "hybrid": 2}
NoteArg = Union[str, Mapping[str, Any]]


@dataclass
class CheckResult:
    """The verdict on one note.

    Attributes:
        id: the note's id (given, or ``note-N``).
        error_flag: True when the note holds a medical error.
        sentence_id: 0-based id of the erroneous sentence, -1 when none.
        error_sentence: that sentence ("" when none).
        corrected_sentence: its correction ("NA" when none).
        corrected_text: the note with the correction applied.
        strategy: "react-reflex", "guards" or "single".
        usage: model calls and tokens (llm_calls, prompt_tokens, ...).
        trace: every model call and decision, as Python objects.
        fallback: True when the verdict is no answer of the model's (then
            ``check`` raised ModelError carrying this result).
        fallback_why: why, in words, or None.
        correction_evidence: the correction's evidence when the library
            verified it (``check --verify-correction``), else None.
    """

    id: str
    error_flag: bool
    sentence_id: int
    error_sentence: str
    corrected_sentence: str
    corrected_text: str
    strategy: str
    usage: Dict[str, Any] = field(default_factory=dict)
    trace: List[Any] = field(default_factory=list)
    fallback: bool = False
    fallback_why: Optional[str] = None
    submission: str = ""
    correction_evidence: Optional[Any] = None

    def submission_line(self) -> str:
        """The MEDIQA-CORR submission line: ``ID FLAG SENTENCE CORRECTION``
        (as ``medtrust mediqa`` writes it)."""
        return self.submission


def _table() -> Any:
    return _lib.ParamTable.in_dll(_lib.lib().dll, "mt_agent_param_table")


def settings_help() -> Dict[str, str]:
    """The numeric settings ``Checker(**settings)`` takes (the library's
    settings table, as ``medtrust check --help`` lists them): name -> what
    it sets and its bounds."""
    t = _table()
    out: Dict[str, str] = {}
    for i in range(t.n):
        d = t.params[i]
        if d.option:
            out[d.option.decode().replace("-", "_")] = "%s (%g..%g)" % (
                (d.help or b"").decode(), d.lo, d.hi)
    return out


def _apply_settings(p: _lib.AgentParams, settings: Mapping[str, Any]) -> None:
    """Sets each numeric setting through the library's table: the CLI
    option's name with '_' for '-' (steps, evaluators, eval_temperature)
    or the request member's (max_steps), checked against its bounds."""
    L = _lib.lib()
    t = _table()
    for key, value in settings.items():
        d = L.mt_param_find(ctypes.byref(t), key.replace("_", "-").encode(), 0)
        if not d:
            d = L.mt_param_find(ctypes.byref(t), key.encode(), 1)
        if not d:
            raise InvalidArgumentError(
                f"unknown setting {key!r}: one of "
                f"{', '.join(sorted(settings_help()))}")
        v = float(value)
        if not L.mt_param_valid(d, v, 0):
            c = d.contents
            raise InvalidArgumentError(
                f"{key}={value}: must be in {c.lo:g}..{c.hi:g}"
                + (" and whole" if L.mt_param_is_integer(d) else ""))
        L.mt_param_set(d, ctypes.byref(p), v)


def _member(key: str) -> str:
    """The mt_agent_params member a setting names (through the table's
    offset), for the per-call struct that has the same members."""
    L = _lib.lib()
    t = _table()
    d = L.mt_param_find(ctypes.byref(t), key.replace("_", "-").encode(), 0)
    if not d:
        d = L.mt_param_find(ctypes.byref(t), key.encode(), 1)
    if not d:
        raise InvalidArgumentError(
            f"unknown setting {key!r}: one of "
            f"{', '.join(sorted(settings_help()))}")
    for name, *_ in _lib.AgentParams._fields_:
        if getattr(_lib.AgentParams, name).offset == d.contents.offset:
            return name
    raise InvalidArgumentError(f"setting {key!r} has no member")  # pragma: no cover


def _call_params(h: int, strategy: Optional[str],
                 settings: Mapping[str, Any]) -> "_lib.AgentCheckParams":
    """mt_agent_check_params: the handle's, with this call's strategy and
    settings (each checked against the table's bounds on a scratch
    mt_agent_params first)."""
    L = _lib.lib()
    cp = _lib.AgentCheckParams()
    L.mt_agent_check_default_params(h, ctypes.byref(cp))
    if strategy is not None:
        st = ctypes.c_int()
        if L.mt_strategy_parse(b(strategy), ctypes.byref(st)) != 0:
            raise InvalidArgumentError(
                f"strategy must be react-reflex, guards or single, not "
                f"{strategy!r}")
        cp.strategy = st.value
    scratch = _lib.AgentParams()
    L.mt_agent_default_params(ctypes.byref(scratch))
    _apply_settings(scratch, settings)
    for key in settings:
        name = _member(key)
        if not hasattr(_lib.AgentCheckParams, name):
            raise InvalidArgumentError(
                f"{key} is the checker's, not a call's: give it to Checker()")
        setattr(cp, name, getattr(scratch, name))
    return cp


class Checker(Handle):
    """A clinical-note checker: ``medtrust check`` as an object.

    Args:
        db: corpus store for react-reflex's searches (a path or Store's
            path); None with ``no_retrieval=True`` to run without one.
        llm: the model spec, e.g. ``"openai:http://127.0.0.1:8080/v1#m"``
            or ``"gguf:model.gguf"`` (else $MEDTRUST_LLM, per role
            $MEDTRUST_LLM_<ROLE>).
        strategy: ``"react-reflex"``, ``"guards"`` or ``"single"``.
        no_retrieval: react-reflex without a corpus.
        sources: search only these corpus sources.
        search_mode: ``"auto"``, ``"bm25"``, ``"dense"`` or ``"hybrid"``.
        embedder, reranker: query embedder and cross-encoder specs.
        prompts_dir: NAME.txt there replaces a built-in prompt.
        few_shot, examples: MEDEC CSVs for ``single``'s examples.
        timeout: seconds per model call; cache: SQLite call cache file;
        n_ctx: the model's context when the server cannot be asked.
        on_step: called with (note_id, step) for each trace record as a
            check adds it (from the checking thread).
        **settings: the library's numeric settings, by the CLI option's
            name: steps, rounds, evaluators, accept_mean, accept_min,
            eval_quorum, retrieve_k, rerank_k, temperature,
            eval_temperature, max_tokens, seed, ... (``settings_help()``).

    ``check`` and ``check_many`` may run from many threads at once on one
    Checker; each releases the GIL while the model works.
    """

    def __init__(self, db: Optional[Union[str, "os.PathLike[str]"]] = None,
                 llm: Optional[str] = None, strategy: str = "react-reflex", *,
                 no_retrieval: bool = False,
                 sources: Optional[Sequence[str]] = None,
                 search_mode: str = "auto", embedder: Optional[str] = None,
                 reranker: Optional[str] = None,
                 prompts_dir: Optional[str] = None,
                 few_shot: Optional[str] = None,
                 examples: Optional[str] = None,
                 timeout: Optional[float] = None,
                 cache: Optional[str] = None, n_ctx: int = 0,
                 on_step: Optional[Callable[[str, Any], None]] = None,
                 **settings: Any) -> None:
        L = _lib.lib()
        p = _lib.AgentParams()
        L.mt_agent_default_params(ctypes.byref(p))
        st = ctypes.c_int()
        if L.mt_strategy_parse(b(strategy), ctypes.byref(st)) != 0:
            raise InvalidArgumentError(
                f"strategy must be react-reflex, guards or single, not "
                f"{strategy!r}")
        p.strategy = st.value
        if search_mode not in SEARCH_MODES:
            raise InvalidArgumentError(
                f"search_mode must be one of {', '.join(SEARCH_MODES)}")
        p.search_mode = SEARCH_MODES[search_mode]
        keep: List[Any] = []

        def cstr(v: Optional[Any]) -> Optional[bytes]:
            out = None if v is None else os.fspath(v).encode("utf-8")
            keep.append(out)
            return out

        p.llm_spec = cstr(llm)
        p.db_dir = cstr(db)
        p.no_retrieval = int(no_retrieval)
        p.embedder_spec = cstr(embedder)
        p.reranker_spec = cstr(reranker)
        p.prompts_dir = cstr(prompts_dir)
        p.few_shot_path = cstr(few_shot)
        p.examples_path = cstr(examples)
        p.llm.cache_path = cstr(cache)
        if timeout is not None:
            p.llm.timeout_s = float(timeout)
        p.llm.n_ctx = n_ctx
        if sources:
            arr = (ctypes.c_char_p * len(sources))(
                *[s.encode("utf-8") for s in sources])
            keep.append(arr)
            p.sources = arr
            p.n_sources = len(sources)
        _apply_settings(p, settings)
        # Per-check callbacks, keyed by the note id the library passes.
        self._lock = threading.Lock()
        self._cancelled: "set[str]" = set()
        self._steps: Dict[str, Callable[[str, Any], None]] = {}
        self._on_step = on_step
        self._ids = itertools.count(1)
        self._step_fn = _lib.STEP_FN(self._step)
        self._cancel_fn = _lib.CANCEL1_FN(self._is_cancelled)
        p.on_step = self._step_fn
        p.cancelled = self._cancel_fn
        self._busy = Busy("checker")
        h = ctypes.c_void_p()
        err = _lib.Error_()
        check(L.mt_agent_open(ctypes.byref(p), ctypes.byref(h),
                              ctypes.byref(err)), err)
        self._h: Optional[int] = h.value
        self.strategy = strategy

    # ==== Callbacks (from checking threads) ====

    def _step(self, user: object, note_id: Optional[bytes],
              step_json: bytes) -> None:
        nid = (note_id or b"").decode("utf-8", "replace")
        fn = self._steps.get(nid) or self._on_step
        if fn is None:
            return
        try:
            fn(nid, json.loads(step_json))
        except Exception:  # a callback's error must not unwind into C
            _lib.log.exception("on_step callback failed")

    def _is_cancelled(self, user: object, note_id: Optional[bytes]) -> int:
        nid = (note_id or b"").decode("utf-8", "replace")
        return 1 if nid in self._cancelled or "*" in self._cancelled else 0

    # ==== Life cycle ====
    # close() (checks still running on other threads are cancelled before
    # their next model call and waited for), the context manager and
    # _handle() are Handle's.

    _what = "checker"
    _close_fn = "mt_agent_close"

    def _cancel_running(self) -> None:
        self._cancelled.add("*")

    # ==== Checking ====

    def _note_id(self, note: NoteArg) -> str:
        if isinstance(note, Mapping) and note.get("id") is not None:
            return str(note["id"])
        return f"note-{next(self._ids)}"

    def _run(self, note: NoteArg, nid: str,
             on_step: Optional[Callable[[str, Any], None]],
             strategy: Optional[str] = None,
             settings: Optional[Mapping[str, Any]] = None) -> CheckResult:
        with self._busy:
            return self._run_open(note, nid, on_step, strategy, settings)

    def _run_open(self, note: NoteArg, nid: str,
                  on_step: Optional[Callable[[str, Any], None]],
                  strategy: Optional[str] = None,
                  settings: Optional[Mapping[str, Any]] = None
                  ) -> CheckResult:
        L = _lib.lib()
        cp = None
        if strategy is not None or settings:
            if not hasattr(L.dll, "mt_agent_check_with"):
                raise UnsupportedError(
                    "this libmedtrust has no per-call settings "
                    "(mt_agent_check_with): give them to Checker()")
            cp = _call_params(self._h, strategy, settings or {})
        if isinstance(note, str):
            text, sentences, sources = note, None, None
        elif isinstance(note, Mapping):
            text = note.get("text")
            sentences, sources = note.get("sentences"), note.get("sources")
            if not isinstance(text, str):
                raise InvalidArgumentError(
                    f"note {nid}: 'text' must be a string")
        else:
            raise InvalidArgumentError(
                "a note is a str or a dict with 'text' (and 'id', "
                "'sentences', 'sources')")
        n = _lib.Note()
        tb, ib = text.encode("utf-8"), nid.encode("utf-8")
        n.id, n.text, n.text_len = ib, tb, len(tb)
        sb = sentences.encode("utf-8") if sentences else None
        if sb:
            n.sentences, n.sentences_len = sb, len(sb)
        if sources:
            arr = (ctypes.c_char_p * len(sources))(
                *[s.encode("utf-8") for s in sources])
            n.sources, n.n_sources = arr, len(sources)
        if on_step:
            self._steps[nid] = on_step
        r = _lib.CheckResult()
        err = _lib.Error_()
        try:
            if cp is None:
                st = L.mt_agent_check(self._h, ctypes.byref(n),
                                      ctypes.byref(r), ctypes.byref(err))
            else:  # this call's strategy and settings, the same callbacks
                st = L.mt_agent_check_with(self._h, ctypes.byref(n),
                                           ctypes.byref(cp), ctypes.byref(r),
                                           ctypes.byref(err))
        finally:
            self._steps.pop(nid, None)
        try:
            result = _result(nid, r) if st in (0, 10) else None
        finally:
            L.mt_check_result_free(ctypes.byref(r))
        if st == 10:  # MT_EMODEL: no verdict of the model's
            e = ModelError(err.msg.decode("utf-8", "replace"), 10)
            e.result = result  # type: ignore[attr-defined]
            raise e
        check(st, err)
        assert result is not None
        return result

    def check(self, note: NoteArg, *,
              on_step: Optional[Callable[[str, Any], None]] = None,
              strategy: Optional[str] = None, **settings: Any) -> CheckResult:
        """Checks one note: a str, or a dict with ``text`` and optionally
        ``id``, ``sentences`` (MEDEC's Sentences field) and ``sources``.

        ``strategy`` and ``**settings`` (steps, rounds, evaluators,
        temperature, ...) apply to this call only (mt_agent_check_with):
        one Checker serves every strategy; the models stay the handle's.

        Raises ModelError (with ``.result``, the fallback verdict and its
        trace) when no usable reply of the model's decided the verdict;
        InvalidArgumentError, LimitError or ParseError for bad input.
        Ctrl-C stops it before its next model call (KeyboardInterrupt).
        """
        nid = self._note_id(note)
        return self._interruptible(
            lambda: self._run(note, nid, on_step, strategy, settings), [nid])

    def _interruptible(self, fn: Callable[[], Any], ids: List[str]) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return fn()
        box: Dict[str, Any] = {}

        def target() -> None:
            try:
                box["r"] = fn()
            except BaseException as e:
                box["e"] = e

        t = threading.Thread(target=target, daemon=True)
        t.start()
        interrupted = False
        while t.is_alive():
            try:
                t.join()
            except KeyboardInterrupt:
                interrupted = True
                self._cancelled.update(ids)
        self._cancelled.difference_update(ids)
        if interrupted:
            raise KeyboardInterrupt
        if "e" in box:
            raise box["e"]
        return box["r"]

    def check_many(self, notes: Iterable[NoteArg], jobs: int = 4, *,
                   progress: bool = True,
                   return_exceptions: bool = False,
                   strategy: Optional[str] = None, **settings: Any
                   ) -> Iterator[Union[CheckResult, Error]]:
        """Checks many notes, ``jobs`` at once, yielding results in input
        order (a tqdm bar on stderr when tqdm is installed and
        ``progress``). With ``return_exceptions`` a note that failed yields
        its Error (a ModelError carries ``.result``) and the rest go on;
        else the first failure is raised when its turn comes. Ctrl-C stops
        every note in flight before its next model call. ``strategy`` and
        ``**settings`` apply to these notes only, as in ``check``."""
        items = list(notes)
        ids = [self._note_id(n) for n in items]
        bar = None
        if progress:
            try:
                from tqdm import tqdm  # type: ignore[import-untyped]
                bar = tqdm(total=len(items), desc="check", unit="note")
            except ImportError:
                bar = None
        pool = cf.ThreadPoolExecutor(max_workers=max(1, jobs))
        futs = [pool.submit(self._run, n, i, None, strategy, settings)
                for n, i in zip(items, ids)]
        try:
            for f in futs:
                try:
                    r: Union[CheckResult, Error] = self._wait(f, ids)
                except Error as e:
                    if not return_exceptions:
                        raise
                    r = e
                if bar is not None:
                    bar.update(1)
                yield r
        finally:
            self._cancelled.update(ids)  # a generator closed early
            pool.shutdown(wait=True)
            self._cancelled.difference_update(ids)
            if bar is not None:
                bar.close()

    def run_batch(self, data: Union[str, "os.PathLike[str]"],
                  out: Optional[Union[str, "os.PathLike[str]"]] = None, *,
                  journal: Optional[Union[str, "os.PathLike[str]"]] = None,
                  trace: Optional[Union[str, "os.PathLike[str]"]] = None,
                  jobs: int = 4, resume: bool = False, limit: int = 0,
                  with_failed: bool = False,
                  on_progress: Optional[Callable[[Dict[str, int],
                                                  Optional[str]], None]] = None
                  ) -> "BatchResult":
        """Checks the notes of a MEDEC-format CSV (Text ID, Text and, when
        present, Sentences) on the library's note runner, as ``medtrust
        mediqa --data DATA --out OUT`` does: ``jobs`` notes at once, each
        finished note journaled (``journal``, by default OUT.journal; none
        without ``out``) so a run with ``resume=True`` keeps the finished
        notes and checks only the rest; ``trace`` gets one JSON line per
        note; ``out`` the submission, written atomically (a failed note's
        fallback line only with ``with_failed``). ``limit`` reads only the
        first notes. ``on_progress(counts, note_id)`` is called once at
        the start (note_id None) and after each note, from the checking
        threads. A note whose check failed is reported in the result
        (``failed``), not raised. Ctrl-C stops the run (KeyboardInterrupt):
        no new note starts, the notes in flight stop before their next
        model call, the journal keeps what is done."""
        from .batch import BatchResult, run_batch  # noqa: F401
        if jobs < 1 or jobs > 512:
            raise InvalidArgumentError(f"jobs is {jobs}: give 1..512")
        tag = f"batch-{next(self._ids)}"

        def stop() -> bool:  # Ctrl-C (_interruptible) or close()
            return tag in self._cancelled or "*" in self._cancelled

        def go() -> BatchResult:
            with self._busy:
                return run_batch(self._h or 0, data, out=out,
                                 journal=journal, trace=trace, jobs=jobs,
                                 resume=resume, limit=limit,
                                 with_failed=with_failed,
                                 on_progress=on_progress, stop=stop)
        return self._interruptible(go, ["*", tag])

    def _wait(self, f: "cf.Future[CheckResult]", ids: List[str]) -> CheckResult:
        while True:
            try:
                return f.result()
            except KeyboardInterrupt:
                self._cancelled.update(ids)
                cf.wait([f])
                raise


def _take(p: Optional[int]) -> str:
    return ctypes.string_at(p).decode("utf-8", "replace") if p else ""


def _result(nid: str, r: _lib.CheckResult) -> CheckResult:
    """A CheckResult from the C result, through mt_check_result_json (the
    form `medtrust check --json` prints)."""
    L = _lib.lib()
    js = _lib.take_string(L.mt_check_result_json(ctypes.byref(r), 1))
    line = _lib.take_string(L.mt_check_submission_line(nid.encode(),
                                                       ctypes.byref(r)))
    if js is None:
        raise MemoryError("mt_check_result_json")
    o = json.loads(js)
    return CheckResult(
        id=nid, error_flag=bool(o["error_flag"]),
        sentence_id=int(o["error_sentence_id"]),
        error_sentence=o["error_sentence"],
        corrected_sentence=o["corrected_sentence"],
        corrected_text=o["corrected_text"], strategy=o["strategy"],
        usage=o.get("usage", {}), trace=o.get("trace", []),
        fallback=bool(o.get("fallback")), fallback_why=o.get("fallback_why"),
        submission=line or "",
        correction_evidence=o.get("correction_evidence"))
