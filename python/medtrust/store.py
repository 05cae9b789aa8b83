"""Store: a corpus store (documents, chunks, search index) on disk."""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import (
    Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
    Union,
)

from . import _lib
from ._lib import b
from ._util import Busy, Cancel, Handle, check, interruptible
from .errors import InvalidArgumentError

MODES = ("bm25", "dense", "hybrid")
ProgressArg = Union[bool, Callable[[int, int], None]]


@dataclass(frozen=True)
class Hit:
    """One search hit: a chunk of a document.

    Attributes:
        id: the document's own id (the corpus's, e.g. a PMID).
        score: the ranking score (BM25, cosine or the fused score).
        text: the chunk's text.
        title: the document's title, or None.
        metadata: the document's metadata (the JSON fields besides id,
            text and title it was added with).
        url: the document's link: its ``url`` metadata, else PubMed's page
            for a numeric id, else None.
        rank: 1-based rank.
        chunk_id: the chunk's id in the store.
        source: the source (corpus) name the document was added under.
    """

    id: str
    score: float
    text: str
    title: Optional[str] = None
    metadata: Dict[str, Any] = field(default_factory=dict)
    url: Optional[str] = None
    rank: int = 0
    chunk_id: int = 0
    source: str = ""


@dataclass(frozen=True)
class AddResult:
    """What ``Store.add`` wrote: documents inserted or replaced, documents
    identical to the stored ones (left alone) and chunks written."""

    documents: int
    unchanged: int
    chunks: int


@dataclass(frozen=True)
class IndexResult:
    """What ``Store.index`` did: chunks put in new segments, segments in
    the index afterwards, whether the whole index was rebuilt, and how many
    segments a merge rewrote as one."""

    chunks_added: int
    segments: int
    rebuilt: bool
    segments_merged: int


def _progress_bar(progress: ProgressArg, label: str) -> Tuple[
        Optional[Callable[[int, int], None]], Callable[[], None]]:
    """A (done, total) callback and a closer: the caller's own callable,
    a tqdm bar when progress is True and tqdm imports, else nothing."""
    if callable(progress):
        return progress, lambda: None
    if not progress:
        return None, lambda: None
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return None, lambda: None
    bar = tqdm(desc=label, unit="chunk", leave=False)

    def update(done: int, total: int) -> None:
        if total and bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    return update, bar.close


def _redact(spec: str) -> str:
    """A spec with the user and password of a URL cut out, as `medtrust
    stats` shows it."""
    return re.sub(r"//[^/@#]*@", "//", spec)


class Store(Handle):
    """A corpus store: a folder holding ``store.db`` (SQLite) and the
    search index ``index/``, the same store ``medtrust index --db DIR``
    writes and ``medtrust search --db DIR`` reads.

    ``Store(path)`` creates the folder and store when missing (``create``)
    with the analyzer and chunker settings given; an existing store keeps
    its own. Use it as a context manager, or call ``close()``.

    Thread-safety: ``search`` may be called from many threads at once
    (a pool of index handles; it releases the GIL). ``add``, ``index``
    and ``import_`` write through one store handle and take turns.

    Example::

        with medtrust.Store("corpus") as st:
            st.add([{"id": "d1", "title": "Aspirin", "text": "..."}])
            st.index(embedder="none")
            for hit in st.search("aspirin dose", k=5, mode="bm25"):
                print(hit.score, hit.id, hit.title)
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        create: bool = True,
        read_only: bool = False,
        analyzer: str = "english",
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
    ) -> None:
        L = _lib.lib()
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._ret: Optional[int] = None
        self._ret_lock = threading.Lock()
        self._busy = Busy("store")
        p = _lib.StoreParams()
        L.mt_store_default_params(ctypes.byref(p))
        self._analyzer = b(analyzer)
        p.analyzer = self._analyzer
        p.chunk_size = chunk_size
        p.chunk_overlap = chunk_overlap
        p.create = int(create)
        p.read_only = int(read_only)
        h = ctypes.c_void_p()
        err = _lib.Error_()
        check(L.mt_store_open(b(self.path), ctypes.byref(p), ctypes.byref(h),
                              ctypes.byref(err)), err)
        self._h: Optional[int] = h.value

    # ==== Life cycle ====
    # close(), the context manager and _handle() are Handle's; a store
    # also closes its search handles, and frees itself under its lock.

    _what = "store"
    _close_fn = "mt_store_close"

    def _close_more(self) -> None:
        with self._ret_lock:
            if self._ret:
                _lib.lib().mt_retriever_close(self._ret)
                self._ret = None

    def _free(self) -> None:
        with self._lock:
            super()._free()

    @property
    def settings(self) -> Dict[str, Any]:
        """The store's analyzer, chunk size and overlap, schema version."""
        L = _lib.lib()
        with self._lock:
            p = L.mt_store_settings(self._handle()).contents
            return {
                "analyzer": _lib.s(p.analyzer),
                "chunk_size": p.chunk_size,
                "chunk_overlap": p.chunk_overlap,
                "schema_version": L.mt_store_schema_version(self._h),
            }

    # ==== Writing ====

    def add(self, docs: Iterable[Mapping[str, Any]], *, source: str = "python",
            batch_size: int = 1000) -> AddResult:
        """Adds documents: dicts with ``id`` (str or int) and ``text``, an
        optional ``title``; every other key is kept as metadata, as
        ``medtrust index`` keeps a JSONL line's other fields.

        A document with the id of one already in ``source`` replaces it; an
        identical one is left alone (no re-chunking, no index rebuild).
        Writes commit every ``batch_size`` documents: an exception (or a
        crash) keeps the batches that committed. Call ``index()`` after to
        make them searchable.
        """
        L = _lib.lib()
        docs_n = unchanged = chunks = 0
        with self._lock:
            h = self._handle()
            err = _lib.Error_()
            sid = ctypes.c_int64()
            check(L.mt_store_source(h, b(source), ctypes.byref(sid),
                                    ctypes.byref(err)), err)
            in_txn = False
            try:
                for i, d in enumerate(docs):
                    if not in_txn:
                        check(L.mt_store_begin(h, ctypes.byref(err)), err)
                        in_txn = True
                    r = self._put(h, sid.value, d, i)
                    if r.unchanged:
                        unchanged += 1
                    else:
                        docs_n += 1
                        chunks += r.chunks
                    if (i + 1) % batch_size == 0:
                        in_txn = False
                        check(L.mt_store_commit(h, ctypes.byref(err)), err)
                if in_txn:
                    in_txn = False
                    check(L.mt_store_commit(h, ctypes.byref(err)), err)
            finally:
                if in_txn:
                    L.mt_store_rollback(h)
        return AddResult(docs_n, unchanged, chunks)

    @staticmethod
    def _put(h: int, sid: int, d: Mapping[str, Any], i: int) -> _lib.PutResult:
        L = _lib.lib()
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(
                f"document {i}: expected a dict with 'id' and 'text', got "
                f"{type(d).__name__}")
        did, text = d.get("id"), d.get("text")
        if isinstance(did, bool) or not isinstance(did, (str, int)) or \
                did == "":
            raise InvalidArgumentError(
                f"document {i}: 'id' must be a non-empty string or integer")
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"document {i} (id {did}): 'text' must be a string")
        title = d.get("title")
        meta = {k: v for k, v in d.items() if k not in ("id", "text", "title")}
        tb = text.encode("utf-8")
        doc = _lib.Doc()
        doc.ext_id = str(did).encode("utf-8")
        doc.title = None if title is None else str(title).encode("utf-8")
        doc.text = tb
        doc.text_len = len(tb)
        doc.metadata = json.dumps(meta, separators=(",", ":"),
                                  ensure_ascii=False).encode("utf-8")
        r = _lib.PutResult()
        err = _lib.Error_()
        check(L.mt_store_put(h, sid, ctypes.byref(doc), ctypes.byref(r),
                             ctypes.byref(err)), err)
        return r

    def index(self, *, embedder: Optional[str] = None, dims: int = 0,
              rebuild: bool = False, threads: int = 0,
              embed_cache: Optional[str] = None,
              progress: ProgressArg = False) -> IndexResult:
        """Brings the search index up to date, as ``medtrust index`` does
        (``mt_index_run``), keeping ``DIR/index-build.json`` while it builds
        so that ``medtrust serve`` on the same store shows its progress.

        Args:
            embedder: ``"use-lite"``, ``"gguf:PATH"``, ``"openai:URL#MODEL"``
                or ``"none"`` (BM25 only). Default: the index's own; for a
                new index ``$MEDTRUST_EMBEDDER``, else USE-lite.
            dims: keep the first N dimensions of each vector (Matryoshka).
            rebuild: build the whole index anew.
            threads: analysis threads, 0 = one per core.
            embed_cache: SQLite cache file of chunk embeddings.
            progress: True for a tqdm bar (when tqdm is installed), or a
                callable taking (done, total).

        Ctrl-C stops the build (KeyboardInterrupt): the index is left as it
        was, or with the segments it finished, and running ``index()``
        again resumes.
        """
        L = _lib.lib()
        rp = _lib.IndexRunParams()
        L.mt_index_run_default_params(ctypes.byref(rp))
        up = rp.update  # a view into rp
        spec, cache = b(embedder), b(embed_cache)
        up.embedder_spec = spec
        up.embed_cache = cache
        up.dims = dims
        up.build.rebuild = int(rebuild)
        up.build.threads = threads
        cb, close_bar = _progress_bar(progress, "search index")
        pfn = _lib.PROGRESS2_FN(lambda d, t, u: cb(d, t)) if cb else None
        if pfn:
            up.build.progress = pfn
        cancel = Cancel()
        up.build.cancelled = cancel.fn0
        run = _lib.IndexRunResult()
        err = _lib.Error_()
        with self._lock:
            h = self._handle()
            try:
                st = interruptible(lambda: L.mt_index_run_store(
                    h, None, 0, ctypes.byref(rp), ctypes.byref(run),
                    ctypes.byref(err)), cancel)
            finally:
                close_bar()
        check(st, err)
        res = run.build
        return IndexResult(res.chunks_added, res.segments, bool(res.merged),
                           res.segments_merged)

    def import_(self, format: str, paths: Union[str, Sequence[str]], *,
                source: Optional[str] = None, index: bool = True,
                strict: bool = False, follow_symlinks: bool = False,
                id_col: Optional[str] = None, text_col: Optional[str] = None,
                title_col: Optional[str] = None,
                on_skip: Optional[Callable[[str], None]] = None,
                embedder: Optional[str] = None) -> Dict[str, Any]:
        """Imports corpora as ``medtrust import FORMAT --db DIR`` does:
        ``format`` is ``pubmed``, ``pmc``, ``medquad``, ``pubmedqa``,
        ``medrag`` or ``csv`` (with ``id_col``/``text_col``); ``paths`` are
        files or folders. A file or record that cannot be read is skipped
        (``on_skip`` gets ``"FILE:LINE: why"``; the counts say how many)
        unless ``strict``. With ``index`` the search index is brought up to
        date after. Returns the counts (``documents``, ``chunks``,
        ``bad_records``, ... and ``skips``, the messages). Ctrl-C stops it
        between batches; a rerun resumes with the first unfinished file.
        """
        L = _lib.lib()
        if isinstance(paths, (str, os.PathLike)):
            paths = [os.fspath(paths)]
        arr = (ctypes.c_char_p * len(paths))(*[b(os.fspath(p)) for p in paths])
        ip = _lib.ImportParams()
        L.mt_import_default_params(ctypes.byref(ip))
        keep = [b(source), b(id_col), b(text_col), b(title_col)]
        ip.source, ip.id_col, ip.text_col, ip.title_col = keep
        ip.strict = int(strict)
        ip.follow_symlinks = int(follow_symlinks)
        skips: List[str] = []

        def skipped(what: bytes, user: object) -> None:
            msg = what.decode("utf-8", "replace")
            skips.append(msg)
            if on_skip:
                on_skip(msg)

        skip_fn = _lib.SKIP_FN(skipped)
        ip.on_skip = skip_fn
        res = _lib.ImportResult()
        err = _lib.Error_()
        with self._lock:
            ip.store = self._handle()
            st = interruptible(lambda: L.mt_import(
                b(format), arr, len(paths), ctypes.byref(ip),
                ctypes.byref(res), ctypes.byref(err)), Cancel())
        check(st, err)
        out: Dict[str, Any] = {k: getattr(res, k) for k in _lib.IMPORT_COUNTS}
        out["skips"] = skips
        if index:
            out["index"] = self.index(embedder=embedder).__dict__
        return out

    # ==== Reading ====

    def stats(self) -> Dict[str, Any]:
        """Documents, chunks and bytes per source and in total, and the
        search index's shape, as ``medtrust stats --db DIR --json`` prints
        them: ``{"sources": [{"source","documents","chunks","bytes"}...],
        "total": {...}, "index": {"embedder","dims"} or None}``."""
        L = _lib.lib()
        rows: List[Dict[str, Any]] = []

        def each(c: Any, user: object) -> int:
            v = c.contents
            rows.append({"source": _lib.s(v.source),
                         "documents": v.documents, "chunks": v.chunks,
                         "bytes": v.text_bytes})
            return 0

        fn = _lib.COUNTS_FN(each)
        err = _lib.Error_()
        with self._lock:
            check(L.mt_store_stats(self._handle(), fn, None,
                                   ctypes.byref(err)), err)
        total = rows.pop() if rows and rows[-1]["source"] is None else {}
        total.pop("source", None)
        return {"sources": rows, "total": total, "index": self._index_info()}

    def _index_info(self) -> Optional[Dict[str, Any]]:
        L = _lib.lib()
        if not os.path.exists(os.path.join(self.path, "index", "MANIFEST")):
            return None
        buf = ctypes.create_string_buffer(4096)
        dims = ctypes.c_uint32()
        err = _lib.Error_()
        check(L.mt_index_peek_embedder(b(self.path), buf, len(buf),
                                       ctypes.byref(dims), ctypes.byref(err)),
              err)
        return {"embedder": _redact(buf.value.decode()) or None,
                "dims": dims.value}

    def _retriever(self) -> int:
        """The store's search service, opened on first use (lazily: the
        index and embedder open at the first search, and a rebuilt index
        is picked up at the next)."""
        with self._ret_lock:
            if self._ret is None:
                self._handle()
                L = _lib.lib()
                rp = _lib.RetrieverParams()
                L.mt_retriever_default_params(ctypes.byref(rp))
                path = b(self.path)
                rp.db_dir = path
                rp.lazy = 1
                h = ctypes.c_void_p()
                err = _lib.Error_()
                check(L.mt_retriever_open(ctypes.byref(rp), ctypes.byref(h),
                                          ctypes.byref(err)), err)
                self._ret = h.value
            return self._ret

    def search(self, query: str, k: int = 10, mode: str = "hybrid", *,
               source: Optional[str] = None,
               filter: Optional[Tuple[str, float, float]] = None,
               author: Optional[str] = None, journal: Optional[str] = None,
               pub_type: Optional[str] = None, w_lex: float = 0.7,
               w_sem: float = 0.3, fusion: str = "linear",
               retrieve_k: int = 50, doc_sum: bool = False,
               with_metadata: bool = True) -> List[Hit]:
        """Searches the index, as ``medtrust search --db DIR`` does.

        Args:
            query: the query text.
            k: hits to return (1..10000).
            mode: ``"bm25"``, ``"dense"`` or ``"hybrid"`` (dense and hybrid
                need an index built with an embedder).
            source: only hits of this source.
            filter: ``(key, min, max)``: only documents whose metadata
                ``key`` is a number in [min, max], e.g. ``("year", 2010,
                2015)``.
            author, journal, pub_type: VerifAI's PubMed filters on the
                metadata a PubMed import writes (substring, any case).
            w_lex, w_sem: hybrid weights of BM25 and vectors.
            fusion: ``"linear"`` (VerifAI) or ``"rrf"``.
            retrieve_k: first-stage depth of each list.
            doc_sum: sum chunk scores per document.
            with_metadata: read each hit's metadata and URL too.

        Thread-safe; releases the GIL while it searches.
        """
        L = _lib.lib()
        if mode not in MODES:
            raise InvalidArgumentError(
                f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if not 1 <= k <= 10000:
            raise InvalidArgumentError(f"k must be in 1..10000, not {k}")
        p = _lib.SearchParams()
        L.mt_search_default_params(ctypes.byref(p))
        p.mode = MODES.index(mode)
        p.k = k
        p.w_lex, p.w_sem = w_lex, w_sem
        if fusion not in ("linear", "rrf"):
            raise InvalidArgumentError("fusion must be linear or rrf")
        p.fusion = 1 if fusion == "rrf" else 0
        p.retrieve_k = retrieve_k
        p.doc_sum = int(doc_sum)
        keep: List[Any] = [b(source)]
        p.source = keep[0]
        if filter is not None:
            key, lo, hi = filter
            keep.append(b(key))
            p.filter_key = keep[-1]
            p.filter_min, p.filter_max = float(lo), float(hi)
        conds = (_lib.MetaCond * 3)()
        strs = [b(author), b(journal), b(pub_type)]
        p.nmeta = L.mt_search_pubmed_conds(strs[0], strs[1], strs[2], conds)
        if p.nmeta:
            p.meta = conds
        with self._busy:
            return self._search(query, p, with_metadata)

    def _search(self, query: str, p: _lib.SearchParams,
                with_metadata: bool) -> List[Hit]:
        L = _lib.lib()
        ret = self._retriever()
        out = ctypes.POINTER(_lib.SearchResult)()
        err = _lib.Error_()
        check(L.mt_retriever_search(ret, b(query), ctypes.byref(p),
                                    ctypes.byref(out), ctypes.byref(err)), err)
        try:
            return self._hits(ret, out.contents, with_metadata)
        finally:
            L.mt_search_result_free(out)

    @staticmethod
    def _hits(ret: int, r: _lib.SearchResult, with_meta: bool) -> List[Hit]:
        L = _lib.lib()
        n = r.n
        urls = (ctypes.c_void_p * max(n, 1))()
        err = _lib.Error_()
        if with_meta and n:
            check(L.mt_retriever_urls(ret, r.hits, n, urls,
                                      ctypes.byref(err)), err)
        hits: List[Hit] = []
        for i in range(n):
            h = r.hits[i]
            meta: Dict[str, Any] = {}
            url = _lib.take_string(urls[i]) if with_meta else None
            if with_meta:
                mp = ctypes.c_void_p()
                st = L.mt_retriever_metadata(ret, h.chunk_id,
                                             ctypes.byref(mp),
                                             ctypes.byref(err))
                text = _lib.take_string(mp.value) if st == 0 else None
                meta = json.loads(text) if text else {}
            hits.append(Hit(
                id=_lib.s(h.doc_id) or "", score=h.score,
                text=_lib.s(h.text) or "", title=_lib.s(h.title),
                metadata=meta, url=url, rank=h.rank, chunk_id=h.chunk_id,
                source=_lib.s(h.source) or ""))
        return hits
