"""Answerer, ask() and verify(): VerifAI's verified question answering and
the verification of any medical text, as ``medtrust ask`` and ``medtrust
verify`` run them."""

from __future__ import annotations

import ctypes
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from . import _lib
from ._lib import b
from ._util import Busy, Cancel, Handle, check, interruptible
from .check import SEARCH_MODES
from .errors import InvalidArgumentError, ModelError, UnsupportedError

PathArg = Union[str, "os.PathLike[str]"]


@dataclass
class Answer:
    """The result of one question (``medtrust ask --json``'s object).

    Attributes:
        question, answer: the question and the cited answer ("" when none).
        claims: each claim with its refs, per-document verdicts and label
            (SUPPORT, CONTRADICT, NO_EVIDENCE, NO_REFERENCE, UNVERIFIED).
        documents: the retrieved documents (doc_id, title, score, url...).
        search: "hybrid", "dense" or "bm25"; final_verdict: yes/no/maybe
            or None; notes: why the result is partial, if it is;
        usage: model calls and tokens; raw: the whole JSON object.
    """

    question: str
    answer: str
    claims: List[Dict[str, Any]] = field(default_factory=list)
    documents: List[Dict[str, Any]] = field(default_factory=list)
    search: str = ""
    final_verdict: Optional[str] = None
    notes: List[str] = field(default_factory=list)
    usage: Dict[str, Any] = field(default_factory=dict)
    raw: Dict[str, Any] = field(default_factory=dict)


def _answer(o: Dict[str, Any]) -> Answer:
    return Answer(question=o.get("question", ""), answer=o.get("answer", ""),
                  claims=o.get("claims", []),
                  documents=o.get("documents", []),
                  search=o.get("search", ""),
                  final_verdict=o.get("final_verdict"),
                  notes=o.get("notes", []) or [], usage=o.get("usage", {}),
                  raw=o)


class Answerer(Handle):
    """A question answerer (VerifAI), kept open for many questions.

    Args:
        db: the corpus store (None: verify() only, when the verifier needs
            no corpus).
        llm: answer and judge model spec (else $MEDTRUST_LLM...).
        nli: ``"gguf:PATH"`` NLI classifier or ``"llm"`` (prompted judge).
        embedder, reranker: query embedder and cross-encoder specs.
        k: documents given to the model; search_mode: ``"auto"``,
            ``"bm25"``, ``"dense"``, ``"hybrid"``; max_tokens, temperature,
            seed: the answer's sampling; timeout: seconds a model call.

    ``ask`` and ``verify`` are thread-safe and release the GIL.
    """

    def __init__(self, db: Optional[PathArg] = None, llm: Optional[str] = None,
                 *, nli: Optional[str] = None, embedder: Optional[str] = None,
                 reranker: Optional[str] = None, k: int = 10,
                 search_mode: str = "auto", max_tokens: int = 0,
                 temperature: Optional[float] = None, seed: Optional[int] = None,
                 timeout: Optional[float] = None,
                 prompts_dir: Optional[str] = None) -> None:
        L = _lib.lib()
        p = _lib.QaParams()
        L.mt_qa_default_params(ctypes.byref(p))
        self._keep = [b(None if db is None else os.fspath(db)), b(llm), b(nli),
                      b(embedder), b(reranker), b(prompts_dir)]
        (p.db_dir, p.llm_spec, p.nli_spec, p.embedder_spec, p.reranker_spec,
         p.prompts_dir) = self._keep
        p.k = k
        if search_mode not in SEARCH_MODES:
            raise InvalidArgumentError(
                f"search_mode must be one of {', '.join(SEARCH_MODES)}")
        p.search_mode = SEARCH_MODES[search_mode]
        if max_tokens:
            p.max_tokens = max_tokens
        if temperature is not None:
            p.temperature = temperature
        if seed is not None:
            p.seed = seed
        if timeout is not None:
            p.llm.timeout_s = timeout
        self._busy = Busy("answerer")
        self._cancels: "set[Cancel]" = set()
        h = ctypes.c_void_p()
        err = _lib.Error_()
        check(L.mt_qa_open(ctypes.byref(p), ctypes.byref(h),
                           ctypes.byref(err)), err)
        self._h: Optional[int] = h.value

    # close() (calls still running on other threads are cancelled before
    # their next model call and waited for), the context manager and
    # _handle() are Handle's.

    _what = "answerer"
    _close_fn = "mt_qa_close"

    def _cancel_running(self) -> None:
        for c in list(self._cancels):
            c.set()

    def ask(self, question: str, **kwargs: Any) -> Answer:
        """Answers ``question`` with citations and verifies each cited
        claim (``medtrust ask``). Keywords: k, source, year_from, year_to,
        author, journal, pub_type, search_mode, on_claim (called with the
        claim's index, the claim count and the claim as a dict as each
        claim's verdicts are final). Raises ModelError (with ``.result``,
        the partial Answer) when the model gave no answer or a claim is
        UNVERIFIED. Ctrl-C stops it before its next model call."""
        with self._busy:
            return self._ask(question, **kwargs)

    def _ask(self, question: str, *, k: Optional[int] = None,
            source: Optional[str] = None, year_from: int = 0,
            year_to: int = 0, author: Optional[str] = None,
            journal: Optional[str] = None, pub_type: Optional[str] = None,
            search_mode: Optional[str] = None,
            on_claim: Optional[Callable[[int, int, Dict[str, Any]], None]] = None
            ) -> Answer:
        """Answers ``question`` with citations and verifies each cited
        claim. Raises ModelError (with ``.result``, the partial Answer)
        when the model gave no answer or a claim is UNVERIFIED. Ctrl-C
        stops it before its next model call."""
        L = _lib.lib()
        h = self._handle()
        ap = _lib.QaAskParams()
        L.mt_qa_ask_default_params(h, ctypes.byref(ap))
        if k is not None:
            ap.k = k
        keep = [b(source), b(author), b(journal), b(pub_type)]
        if source is not None:
            ap.source = keep[0]
        if author is not None:
            ap.author = keep[1]
        if journal is not None:
            ap.journal = keep[2]
        if pub_type is not None:
            ap.pub_type = keep[3]
        if year_from:
            ap.year_from = year_from
        if year_to:
            ap.year_to = year_to
        if search_mode is not None:
            ap.search_mode = SEARCH_MODES[search_mode]
        claim_fn = None
        if on_claim is not None:
            def claim(user: object, i: int, n: int, js: bytes) -> None:
                try:
                    on_claim(i, n, json.loads(js))
                except Exception:
                    _lib.log.exception("on_claim callback failed")
            claim_fn = _lib.ON_CLAIM_FN(claim)
            ap.on_claim = claim_fn
        cancel = Cancel()
        ap.cancelled = cancel.fn0
        out = ctypes.c_void_p()
        err = _lib.Error_()
        self._cancels.add(cancel)
        try:
            st = interruptible(lambda: L.mt_qa_ask_with(
                h, b(question), ctypes.byref(ap), ctypes.byref(out),
                ctypes.byref(err)), cancel)
        finally:
            self._cancels.discard(cancel)
        return _finish(st, err, out, L.mt_qa_result_json,
                       L.mt_qa_result_free, _answer)

    def verify(self, text: str, **kwargs: Any) -> Dict[str, Any]:
        """Verifies any medical text sentence by sentence against the
        corpus (``medtrust verify``), returning its JSON result as a dict
        (sentences, claims, verdicts, evidence). Keywords: k, source,
        decompose, min_words. Raises ModelError (with ``.result``) when a
        verdict could not be given."""
        with self._busy:
            return self._verify(text, **kwargs)

    def _verify(self, text: str, *, k: Optional[int] = None,
               source: Optional[str] = None, decompose: Optional[bool] = None,
               min_words: Optional[int] = None) -> Dict[str, Any]:
        """Verifies any medical text sentence by sentence against the
        corpus (``medtrust verify``), returning its JSON result as a dict
        (sentences, claims, verdicts, evidence). Raises ModelError (with
        ``.result``) when a verdict could not be given."""
        L = _lib.lib()
        if not hasattr(L.dll, "mt_verify_text"):
            raise UnsupportedError("this libmedtrust has no verify "
                                   "(mt_verify_text)")
        h = self._handle()
        vp = _lib.VerifyParams()
        L.mt_verify_default_params(h, ctypes.byref(vp))
        keep = b(source)
        if k is not None:
            vp.k = k
        if source is not None:
            vp.source = keep
        if decompose is not None:
            vp.decompose = int(decompose)
        if min_words is not None:
            vp.min_words = min_words
        cancel = Cancel()
        vp.cancelled = cancel.fn0
        out = ctypes.c_void_p()
        err = _lib.Error_()
        self._cancels.add(cancel)
        try:
            st = interruptible(lambda: L.mt_verify_text(
                h, b(text), ctypes.byref(vp), ctypes.byref(out),
                ctypes.byref(err)), cancel)
        finally:
            self._cancels.discard(cancel)
        return _finish(st, err, out, L.mt_verify_result_json,
                       L.mt_verify_result_free, lambda o: o)


def _finish(st: int, err: _lib.Error_, out: ctypes.c_void_p,
            to_json: Any, free: Any, make: Callable[[Dict[str, Any]], Any]) -> Any:
    """The result of an ask or verify: made from its JSON and freed; on
    MT_EMODEL a ModelError carrying it."""
    result = None
    if out.value:
        try:
            js = _lib.take_string(to_json(out.value))
            result = make(json.loads(js)) if js else None
        finally:
            free(out.value)
    if st == 10:
        e = ModelError(err.msg.decode("utf-8", "replace"), 10)
        e.result = result  # type: ignore[attr-defined]
        raise e
    check(st, err)
    return result


def ask(question: str, db: Optional[PathArg] = None, llm: Optional[str] = None,
        **kwargs: Any) -> Answer:
    """Answers one question (``medtrust ask``): opens an Answerer on
    ``db`` and ``llm`` (the other Answerer arguments as keywords), asks,
    closes it. For many questions keep an ``Answerer`` open."""
    ask_keys = {"source", "year_from", "year_to", "author", "journal",
                "pub_type", "on_claim"}
    per = {k: kwargs.pop(k) for k in list(kwargs) if k in ask_keys}
    with Answerer(db, llm, **kwargs) as a:
        return a.ask(question, **per)


def verify(text: str, db: Optional[PathArg] = None, llm: Optional[str] = None,
           **kwargs: Any) -> Dict[str, Any]:
    """Verifies a text (``medtrust verify``) with a one-off Answerer."""
    per = {k: kwargs.pop(k) for k in list(kwargs)
           if k in ("k", "source", "decompose", "min_words")}
    with Answerer(db, llm, **kwargs) as a:
        return a.verify(text, **per)
