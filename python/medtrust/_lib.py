"""Loading libmedtrust.so and declaring its C API for ctypes.

ctypes, not cffi or a compiled extension: it ships with Python itself, so
the package installs with Debian's python3, python3-pip and
python3-setuptools alone and needs no compiler, no Python headers and no
build step; and a ctypes foreign call releases the GIL, so long calls run
while other Python threads do.

Every structure here mirrors one in include/medtrust/*.h field for field;
python/tests/test_abi.py compiles a C program that prints the size and
offsets of each and compares them with these, so a changed header fails
a test instead of corrupting memory.
"""

from __future__ import annotations

import ctypes
import logging
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_long,
    c_size_t,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, List, Optional

SO_NAME = "libmedtrust.so.0"

# ==== Finding the library ====


def _candidates() -> List[str]:
    """Where the library is looked for, in order (see find_library)."""
    out: List[str] = []
    env = os.environ.get("MEDTRUST_LIB")
    if env:
        return [env]
    try:
        from . import _build_info  # written by setup.py at install

        out.extend(_build_info.LIBS)
    except ImportError:
        pass
    # A checkout used in place (PYTHONPATH=python): the build beside it.
    here = Path(__file__).resolve().parent
    out.append(str(here.parent.parent / "build" / SO_NAME))
    for prefix in ("/usr/local", "/usr"):
        out.append(f"{prefix}/lib/{SO_NAME}")
    return out


def find_library() -> str:
    """The path of the libmedtrust.so this package loads.

    ``$MEDTRUST_LIB`` when set (and only it); else the library the package
    was installed against (the build tree's, or ``make install``'s
    ``PREFIX/lib``, recorded by setup.py), the build tree beside a checkout
    used in place, ``/usr/local/lib`` and ``/usr/lib``.
    """
    tried = _candidates()
    for path in tried:
        if os.path.exists(path):
            return path
    raise OSError(
        "libmedtrust.so not found (tried: %s): run `make` (and `make "
        "install`), or set MEDTRUST_LIB to the library's path"
        % ", ".join(tried)
    )


def _needs_asan(path: str) -> bool:
    """True when the library was built with SANITIZE=1 and the ASan runtime
    is not already loaded: loading it would abort the process."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    if b"libasan.so" not in data:
        return False
    try:
        with open("/proc/self/maps") as maps:
            return "libasan" not in maps.read()
    except OSError:
        return False


def _load() -> ctypes.CDLL:
    path = find_library()
    if _needs_asan(path):
        raise OSError(
            "%s was built with sanitizers (make test's build): run Python "
            "with LD_PRELOAD=$(gcc -print-file-name=libasan.so) "
            "ASAN_OPTIONS=detect_leaks=0, or use the plain build "
            "(build/libmedtrust.so from `make`)" % path
        )
    return ctypes.CDLL(path)


# ==== Structures (include/medtrust/*.h) ====


class Error_(Structure):
    _fields_ = [("status", c_int), ("msg", c_char * 512)]


class Str(Structure):
    _fields_ = [("p", c_char_p), ("n", c_size_t)]


class StoreParams(Structure):
    _fields_ = [
        ("analyzer", c_char_p),
        ("chunk_size", c_uint32),
        ("chunk_overlap", c_uint32),
        ("create", c_int),
        ("read_only", c_int),
    ]


class Doc(Structure):
    _fields_ = [
        ("ext_id", c_char_p),
        ("title", c_char_p),
        ("text", c_char_p),
        ("text_len", c_size_t),
        ("metadata", c_char_p),
    ]


class PutResult(Structure):
    _fields_ = [("chunks", c_size_t), ("unchanged", c_int)]


class StoreCounts(Structure):
    _fields_ = [
        ("source", c_char_p),
        ("documents", c_uint64),
        ("chunks", c_uint64),
        ("text_bytes", c_uint64),
    ]


COUNTS_FN = CFUNCTYPE(c_int, POINTER(StoreCounts), c_void_p)
PROGRESS2_FN = CFUNCTYPE(None, c_uint64, c_uint64, c_void_p)
CANCEL0_FN = CFUNCTYPE(c_int, c_void_p)
CANCEL1_FN = CFUNCTYPE(c_int, c_void_p, c_char_p)
STEP_FN = CFUNCTYPE(None, c_void_p, c_char_p, c_char_p)
SKIP_FN = CFUNCTYPE(None, c_char_p, c_void_p)
LOG_FN = CFUNCTYPE(None, c_int, c_char_p, c_void_p)


class IndexBuildParams(Structure):
    _fields_ = [
        ("title_weight", c_float),
        ("text_weight", c_float),
        ("max_segments", c_uint32),
        ("rebuild", c_int),
        ("embedder", c_char_p),
        ("dims", c_uint32),
        ("embed", c_void_p),
        ("embed_user", c_void_p),
        ("embed_batch", c_uint32),
        ("hnsw_min", c_uint32),
        ("hnsw_threads", c_uint32),
        ("threads", c_uint32),
        ("vec_store", c_int),
        ("bm25_float_norms", c_int),
        ("segment_bytes", c_uint64),
        ("progress", PROGRESS2_FN),
        ("progress_user", c_void_p),
        ("cancelled", CANCEL0_FN),
        ("cancelled_user", c_void_p),
    ]


class IndexBuildResult(Structure):
    _fields_ = [
        ("chunks_added", c_uint64),
        ("segments", c_uint32),
        ("merged", c_int),
        ("segments_merged", c_uint32),
    ]


class IndexUpdateParams(Structure):
    _fields_ = [
        ("build", IndexBuildParams),
        ("embedder_spec", c_char_p),
        ("dims", c_uint32),
        ("embed_cache", c_char_p),
    ]


class MetaCond(Structure):
    _fields_ = [
        ("key", c_char_p),
        ("text", c_char_p),
        ("min", c_double),
        ("max", c_double),
    ]


class SearchParams(Structure):
    _fields_ = [
        ("mode", c_int),
        ("k", c_uint32),
        ("k1", c_float),
        ("b", c_float),
        ("w_lex", c_float),
        ("w_sem", c_float),
        ("fusion", c_int),
        ("rrf_k", c_uint32),
        ("retrieve_k", c_uint32),
        ("doc_sum", c_int),
        ("source", c_char_p),
        ("query_vec", POINTER(c_float)),
        ("query_dims", c_uint32),
        ("ef", c_uint32),
        ("rerank_depth", c_uint32),
        ("rerank", c_void_p),
        ("rerank_user", c_void_p),
        ("filter_key", c_char_p),
        ("filter_min", c_double),
        ("filter_max", c_double),
        ("meta", POINTER(MetaCond)),
        ("nmeta", c_size_t),
    ]


class SearchHit(Structure):
    _fields_ = [
        ("rank", c_uint32),
        ("chunk_id", c_int64),
        ("score", c_double),
        ("doc_id", c_char_p),
        ("title", c_char_p),
        ("text", c_char_p),
        ("source", c_char_p),
    ]


class SearchResult(Structure):
    _fields_ = [
        ("hits", POINTER(SearchHit)),
        ("n", c_size_t),
        ("elapsed_ms", c_double),
        ("query_terms", c_uint32),
    ]


class RetrieverParams(Structure):
    _fields_ = [
        ("db_dir", c_char_p),
        ("embedder_spec", c_char_p),
        ("embedder_cache", c_char_p),
        ("reranker_spec", c_char_p),
        ("dims", c_uint32),
        ("lazy", c_int),
    ]


class EmbedderParams(Structure):
    _fields_ = [
        ("threads", c_uint32),
        ("batch_size", c_uint32),
        ("dims", c_uint32),
        ("normalize", c_int),
        ("timeout_s", c_double),
        ("cache_path", c_char_p),
        ("window_pool", c_int),
    ]


class ImportParams(Structure):
    _fields_ = [
        ("store", c_void_p),
        ("jsonl_out", c_char_p),
        ("queries_out", c_char_p),
        ("source", c_char_p),
        ("batch_size", c_uint32),
        ("no_chunk", c_int),
        ("threads", c_uint32),
        ("id_col", c_char_p),
        ("text_col", c_char_p),
        ("title_col", c_char_p),
        ("progress", PROGRESS2_FN),
        ("progress_user", c_void_p),
        ("strict", c_int),
        ("on_skip", SKIP_FN),
        ("skip_user", c_void_p),
        ("follow_symlinks", c_int),
    ]


IMPORT_COUNTS = (
    "files",
    "resumed",
    "records",
    "documents",
    "unchanged",
    "chunks",
    "skipped",
    "deleted",
    "delete_missing",
    "queries",
    "bad_files",
    "bad_records",
    "links_skipped",
)


class ImportResult(Structure):
    _fields_ = [(name, c_uint64) for name in IMPORT_COUNTS]


# ==== Functions ====

_P = c_void_p
_E = POINTER(Error_)
_SIGS: "dict[str, tuple[Any, list[Any]]]" = {
    "mt_version": (c_char_p, []),
    "mt_status_str": (c_char_p, [c_int]),
    "mt_free": (None, [c_void_p]),
    "mt_log_set": (None, [LOG_FN, c_void_p, c_int]),
    "mt_store_default_params": (None, [POINTER(StoreParams)]),
    "mt_store_open": (c_int, [c_char_p, POINTER(StoreParams), POINTER(_P), _E]),
    "mt_store_close": (None, [_P]),
    "mt_store_begin": (c_int, [_P, _E]),
    "mt_store_commit": (c_int, [_P, _E]),
    "mt_store_rollback": (None, [_P]),
    "mt_store_source": (c_int, [_P, c_char_p, POINTER(c_int64), _E]),
    "mt_store_put": (c_int, [_P, c_int64, POINTER(Doc), POINTER(PutResult), _E]),
    "mt_store_stats": (c_int, [_P, COUNTS_FN, c_void_p, _E]),
    "mt_store_settings": (POINTER(StoreParams), [_P]),
    "mt_store_schema_version": (c_int, [_P]),
    "mt_store_dir": (c_char_p, [_P]),
    "mt_index_update_default_params": (None, [POINTER(IndexUpdateParams)]),
    "mt_index_update": (
        c_int,
        [_P, POINTER(IndexUpdateParams), POINTER(IndexBuildResult), _E],
    ),
    "mt_index_peek_embedder": (
        c_int,
        [c_char_p, c_char_p, c_size_t, POINTER(c_uint32), _E],
    ),
    "mt_search_default_params": (None, [POINTER(SearchParams)]),
    "mt_search_mode_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "mt_search_pubmed_conds": (
        c_size_t,
        [c_char_p, c_char_p, c_char_p, POINTER(MetaCond)],
    ),
    "mt_search_result_free": (None, [POINTER(SearchResult)]),
    "mt_retriever_default_params": (None, [POINTER(RetrieverParams)]),
    "mt_retriever_open": (c_int, [POINTER(RetrieverParams), POINTER(_P), _E]),
    "mt_retriever_close": (None, [_P]),
    "mt_retriever_search": (
        c_int,
        [_P, c_char_p, POINTER(SearchParams), POINTER(POINTER(SearchResult)), _E],
    ),
    "mt_retriever_metadata": (c_int, [_P, c_int64, POINTER(c_void_p), _E]),
    "mt_retriever_urls": (
        c_int,
        [_P, POINTER(SearchHit), c_size_t, POINTER(c_void_p), _E],
    ),
    "mt_embedder_default_params": (None, [POINTER(EmbedderParams)]),
    "mt_embedder_open": (c_int, [c_char_p, POINTER(EmbedderParams), POINTER(_P), _E]),
    "mt_embedder_close": (None, [_P]),
    "mt_embedder_dims": (c_uint32, [_P]),
    "mt_embedder_embed": (c_int, [_P, POINTER(Str), c_size_t, POINTER(c_float), _E]),
    "mt_import_default_params": (None, [POINTER(ImportParams)]),
    "mt_import": (
        c_int,
        [c_char_p, POINTER(c_char_p), c_size_t, POINTER(ImportParams),
         POINTER(ImportResult), _E],
    ),
}

# Names whose absence is tolerated (a library built before they landed);
# the calls that need them say so.
_OPTIONAL: "set[str]" = set()


class _Lib:
    """The loaded library with its prototypes set."""

    def __init__(self) -> None:
        self.path = find_library()
        self.dll = _load()
        for name, (res, args) in _SIGS.items():
            try:
                fn = getattr(self.dll, name)
            except AttributeError:
                if name in _OPTIONAL:
                    continue
                raise
            fn.restype = res
            fn.argtypes = args

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dll, name)


_lib: Optional[_Lib] = None
_log_fn: Any = None
_LOG_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
log = logging.getLogger("medtrust")


def _on_log(level: int, msg: bytes, user: object) -> None:
    log.log(_LOG_LEVELS[level] if 0 <= level < 4 else logging.ERROR,
            "%s", msg.decode("utf-8", "replace"))


def lib() -> _Lib:
    """The library, loaded on first use (importing the package loads
    nothing, so ``import medtrust`` works before the library is built).

    Loading routes the library's log (it never prints) to the ``medtrust``
    logger: warnings and errors, and everything when that logger is set
    to DEBUG before the first call."""
    global _lib, _log_fn
    if _lib is None:
        loaded = _Lib()
        _log_fn = LOG_FN(_on_log)
        loaded.mt_log_set(_log_fn, None,
                          0 if log.isEnabledFor(logging.DEBUG) else 2)
        _lib = loaded
    return _lib


def unload_log() -> None:
    """Detaches the log sink (at exit: no callback into a Python that is
    shutting down)."""
    if _lib is not None:
        _lib.mt_log_set(LOG_FN(), None, 3)


def b(s: Optional[str]) -> Optional[bytes]:
    """A str as the C side takes it (UTF-8), None as NULL."""
    return None if s is None else s.encode("utf-8")


def s(p: Optional[bytes]) -> Optional[str]:
    return None if p is None else p.decode("utf-8", "replace")


def take_string(p: Optional[int]) -> Optional[str]:
    """A char * the caller owns: decoded, then freed with mt_free."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        lib().mt_free(p)


__all__ = [
    "CFUNCTYPE", "POINTER", "c_char_p", "c_double", "c_float", "c_int",
    "c_int32", "c_int64", "c_long", "c_size_t", "c_uint", "c_uint32",
    "c_uint64", "c_void_p",
]
