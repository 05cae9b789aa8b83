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
            "with LD_PRELOAD=\"$(gcc -print-file-name=libasan.so) "
            "$(gcc -print-file-name=libstdc++.so)\" "
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
RECORDS_FN = CFUNCTYPE(None, c_uint64, c_void_p)
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
        ("query_embedder", c_char_p),
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
        ("vectors_from", c_char_p),
        ("vector_ids", c_char_p),
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
        ("query_embedder_spec", c_char_p),
        ("embed_jobs", c_uint32),
    ]


class IngestParams(Structure):
    _fields_ = [
        ("source", c_char_p),
        ("batch_size", c_uint32),
        ("skip_bad", c_int),
        ("progress", RECORDS_FN),
        ("progress_user", c_void_p),
        ("cancelled", CANCEL0_FN),
        ("cancelled_user", c_void_p),
    ]


class IngestResult(Structure):
    _fields_ = [
        ("documents", c_uint64),
        ("unchanged", c_uint64),
        ("chunks", c_uint64),
        ("skipped", c_uint64),
    ]


RUN_INPUT_FN = CFUNCTYPE(None, c_void_p, c_char_p, c_uint64)
RUN_RECORDS_FN = CFUNCTYPE(None, c_void_p, c_uint64)
RUN_DONE_FN = CFUNCTYPE(None, c_void_p, c_char_p, POINTER(IngestResult))
RUN_MSG_FN = CFUNCTYPE(None, c_void_p, c_char_p)


class IndexRunParams(Structure):
    _fields_ = [
        ("store", StoreParams),
        ("ingest", IngestParams),
        ("strict", c_int),
        ("search_index", c_int),
        ("update", IndexUpdateParams),
        ("build_status", c_int),
        ("on_input", RUN_INPUT_FN),
        ("on_records", RUN_RECORDS_FN),
        ("on_input_done", RUN_DONE_FN),
        ("on_warning", RUN_MSG_FN),
        ("on_build", RUN_MSG_FN),
        ("cancelled", CANCEL0_FN),
        ("user", c_void_p),
    ]


class IndexRunResult(Structure):
    _fields_ = [
        ("inputs", c_uint64),
        ("ingest", IngestResult),
        ("built", c_int),
        ("build", IndexBuildResult),
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
        ("fusion_depth", c_uint32),
        ("nltk_stopwords", c_int),
        ("sources", POINTER(c_char_p)),
        ("nsources", c_size_t),
        ("search_threads", c_uint32),
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
        ("meta_cols", POINTER(c_char_p)),
        ("n_meta_cols", c_size_t),
        ("source_col", c_char_p),
        ("exclude_sources", POINTER(c_char_p)),
        ("n_exclude_sources", c_size_t),
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


ON_CLAIM_FN = CFUNCTYPE(None, c_void_p, c_size_t, c_size_t, c_char_p)
ON_VCLAIM_FN = CFUNCTYPE(None, c_void_p, c_size_t, c_size_t, c_size_t, c_char_p)
ON_TOKEN_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_size_t)


class LlmParams(Structure):
    _fields_ = [
        ("timeout_s", c_double),
        ("max_retries", c_uint32),
        ("backoff_base_s", c_double),
        ("backoff_max_s", c_double),
        ("max_concurrency", c_uint32),
        ("threads", c_uint32),
        ("n_ctx", c_uint32),
        ("cache_path", c_char_p),
        ("response_format", c_int),
    ]


AGENT_ROLES = ("react", "eval", "reflect", "parser", "guard", "single")


class AgentParams(Structure):
    _fields_ = [
        ("strategy", c_int),
        ("llm_spec", c_char_p),
        ("llm", LlmParams),
        ("prompts_dir", c_char_p),
        ("few_shot_path", c_char_p),
        ("examples_path", c_char_p),
        ("db_dir", c_char_p),
        ("no_retrieval", c_int),
        ("sources", POINTER(c_char_p)),
        ("n_sources", c_size_t),
        ("evidence_tokens", c_uint32),
        ("reranker_spec", c_char_p),
        ("search_mode", c_int),
        ("embedder_spec", c_char_p),
        ("dims", c_uint32),
        ("max_steps", c_uint32),
        ("max_rounds", c_uint32),
        ("n_evals", c_uint32),
        ("accept_mean", c_double),
        ("accept_min", c_double),
        ("eval_quorum", c_uint32),
        ("on_exhausted", c_int),
        ("retrieve_k", c_uint32),
        ("rerank_k", c_uint32),
        ("w_lex", c_float),
        ("w_sem", c_float),
        ("chunk_chars", c_uint32),
        ("temperature", c_float),
        ("eval_temperature", c_float),
        ("max_tokens", c_uint32),
        ("role_temperature", c_float * len(AGENT_ROLES)),
        ("role_max_tokens", c_uint32 * len(AGENT_ROLES)),
        ("seed", c_uint64),
        ("max_note_bytes", c_size_t),
        ("max_few_shot", c_uint32),
        ("hit_chars", c_uint32),
        ("grammar", c_int),
        ("on_step", STEP_FN),
        ("on_step_user", c_void_p),
        ("cancelled", CANCEL1_FN),
        ("cancelled_user", c_void_p),
        ("retriever", c_void_p),
        ("verify_correction", c_void_p),
        ("verify_correction_user", c_void_p),
        ("passages_last", c_uint32),
        ("allow_fallbacks", c_uint32),
    ]


class AgentCheckParams(Structure):
    _fields_ = [
        ("strategy", c_int),
        ("max_steps", c_uint32),
        ("max_rounds", c_uint32),
        ("n_evals", c_uint32),
        ("accept_mean", c_double),
        ("accept_min", c_double),
        ("eval_quorum", c_uint32),
        ("on_exhausted", c_int),
        ("search_mode", c_int),
        ("retrieve_k", c_uint32),
        ("rerank_k", c_uint32),
        ("w_lex", c_float),
        ("w_sem", c_float),
        ("chunk_chars", c_uint32),
        ("evidence_tokens", c_uint32),
        ("hit_chars", c_uint32),
        ("temperature", c_float),
        ("eval_temperature", c_float),
        ("max_tokens", c_uint32),
        ("seed", c_uint64),
        ("on_step", STEP_FN),
        ("on_step_user", c_void_p),
        ("cancelled", CANCEL1_FN),
        ("cancelled_user", c_void_p),
        ("passages_last", c_uint32),
        ("allow_fallbacks", c_uint32),
    ]


class Note(Structure):
    _fields_ = [
        ("id", c_char_p),
        ("text", c_char_p),
        ("text_len", c_size_t),
        ("sentences", c_char_p),
        ("sentences_len", c_size_t),
        ("sources", POINTER(c_char_p)),
        ("n_sources", c_size_t),
        ("meta", POINTER(MetaCond)),
        ("nmeta", c_size_t),
    ]


class CheckUsage(Structure):
    _fields_ = [
        ("llm_calls", c_uint32),
        ("critical_calls", c_uint32),
        ("prompt_tokens", c_uint64),
        ("completion_tokens", c_uint64),
        ("failed_calls", c_uint32),
        ("parse_failures", c_uint32),
        ("fallbacks", c_uint32),
        ("estimated_calls", c_uint32),
    ]


class CheckResult(Structure):
    _fields_ = [
        ("error_flag", c_int),
        ("sentence_id", c_int),
        ("error_sentence", c_void_p),
        ("corrected_sentence", c_void_p),
        ("corrected_text", c_void_p),
        ("strategy", c_int),
        ("usage", CheckUsage),
        ("trace", c_void_p),
        ("fallback", c_int),
        ("fallback_why", c_void_p),
        ("correction_evidence", c_void_p),
    ]


class Param(Structure):
    _fields_ = [
        ("option", c_char_p),
        ("field", c_char_p),
        ("offset", c_size_t),
        ("type", c_int),
        ("lo", c_double),
        ("hi", c_double),
        ("server_hi", c_double),
        ("arg", c_char_p),
        ("help", c_char_p),
        ("def_text", c_char_p),
    ]


class ParamTable(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("params", POINTER(Param)),
        ("n", c_size_t),
        ("size", c_size_t),
        ("defaults", c_void_p),
    ]


class QaParams(Structure):
    _fields_ = [
        ("db_dir", c_char_p),
        ("llm_spec", c_char_p),
        ("llm", LlmParams),
        ("nli_spec", c_char_p),
        ("embedder_spec", c_char_p),
        ("reranker_spec", c_char_p),
        ("prompts_dir", c_char_p),
        ("w_lex", c_float),
        ("w_sem", c_float),
        ("k", c_uint32),
        ("rerank_depth", c_uint32),
        ("source", c_char_p),
        ("year_from", c_int32),
        ("year_to", c_int32),
        ("author", c_char_p),
        ("journal", c_char_p),
        ("pub_type", c_char_p),
        ("search_mode", c_int),
        ("label_format", c_char_p),
        ("max_tokens", c_uint32),
        ("temperature", c_float),
        ("seed", c_uint64),
        ("doc_chars", c_uint32),
        ("max_question_bytes", c_size_t),
        ("final_verdict", c_int),
        ("on_claim", ON_CLAIM_FN),
        ("on_claim_user", c_void_p),
        ("cancelled", CANCEL0_FN),
        ("cancelled_user", c_void_p),
        ("on_answer_token", ON_TOKEN_FN),
        ("on_answer_token_user", c_void_p),
        ("retriever", c_void_p),
        ("answer_optional", c_int),
        ("fusion_depth", c_uint32),
        ("nltk_stopwords", c_int),
        ("attribution", c_int),
    ]


class QaAskParams(Structure):
    _fields_ = [
        ("k", c_uint32),
        ("w_lex", c_float),
        ("w_sem", c_float),
        ("source", c_char_p),
        ("year_from", c_int32),
        ("year_to", c_int32),
        ("author", c_char_p),
        ("journal", c_char_p),
        ("pub_type", c_char_p),
        ("search_mode", c_int),
        ("on_claim", ON_CLAIM_FN),
        ("on_claim_user", c_void_p),
        ("cancelled", CANCEL0_FN),
        ("cancelled_user", c_void_p),
        ("on_answer_token", ON_TOKEN_FN),
        ("on_answer_token_user", c_void_p),
    ]


class VerifyParams(Structure):
    _fields_ = [
        ("k", c_uint32),
        ("w_lex", c_float),
        ("w_sem", c_float),
        ("source", c_char_p),
        ("year_from", c_int32),
        ("year_to", c_int32),
        ("author", c_char_p),
        ("journal", c_char_p),
        ("pub_type", c_char_p),
        ("search_mode", c_int),
        ("support_min", c_float),
        ("contradict_min", c_float),
        ("min_words", c_uint32),
        ("decompose", c_int),
        ("search_cited", c_int),
        ("max_text_bytes", c_size_t),
        ("on_claim", ON_VCLAIM_FN),
        ("on_claim_user", c_void_p),
        ("on_split", c_void_p),
        ("on_sentence", c_void_p),
        ("cancelled", CANCEL0_FN),
        ("cancelled_user", c_void_p),
    ]


class BatchProgress(Structure):
    _fields_ = [
        ("total", c_size_t),
        ("resumed", c_size_t),
        ("checked", c_size_t),
        ("failed", c_size_t),
        ("fallback", c_size_t),
        ("usage", CheckUsage),
    ]


class BatchNote(Structure):
    _fields_ = [
        ("id", c_char_p),
        ("line", c_char_p),
        ("error", c_char_p),
        ("failed", c_int),
        ("fallback", c_int),
        ("resumed", c_int),
    ]


BATCH_PROGRESS_FN = CFUNCTYPE(None, c_void_p, POINTER(BatchProgress),
                              POINTER(BatchNote))


class BatchParams(Structure):
    _fields_ = [
        ("jobs", c_uint32),
        ("resume", c_int),
        ("journal_failed", c_int),
        ("journal_path", c_char_p),
        ("trace_path", c_char_p),
        ("check", POINTER(AgentCheckParams)),
        ("on_progress", BATCH_PROGRESS_FN),
        ("cancelled", CANCEL0_FN),
        ("user", c_void_p),
    ]


#: Every mirrored struct by its C name: checked against the library's
#: mt_struct_size at load, and field by field by tests/test_abi.py.
MORE_STRUCTS = {
    "mt_llm_params": LlmParams,
    "mt_agent_params": AgentParams,
    "mt_note": Note,
    "mt_agent_check_params": AgentCheckParams,
    "mt_check_usage": CheckUsage,
    "mt_check_result": CheckResult,
    "mt_param": Param,
    "mt_param_table": ParamTable,
    "mt_qa_params": QaParams,
    "mt_qa_ask_params": QaAskParams,
    "mt_verify_params": VerifyParams,
    "mt_batch_progress": BatchProgress,
    "mt_batch_note": BatchNote,
    "mt_batch_params": BatchParams,
}
STRUCTS: "dict[str, Any]" = {
    "mt_error": Error_, "mt_str": Str, "mt_store_params": StoreParams,
    "mt_doc": Doc, "mt_put_result": PutResult,
    "mt_store_counts": StoreCounts,
    "mt_index_build_params": IndexBuildParams,
    "mt_index_build_result": IndexBuildResult,
    "mt_index_update_params": IndexUpdateParams, "mt_meta_cond": MetaCond,
    "mt_ingest_params": IngestParams, "mt_ingest_result": IngestResult,
    "mt_index_run_params": IndexRunParams,
    "mt_index_run_result": IndexRunResult,
    "mt_search_params": SearchParams, "mt_search_hit": SearchHit,
    "mt_search_result": SearchResult, "mt_retriever_params": RetrieverParams,
    "mt_embedder_params": EmbedderParams, "mt_import_params": ImportParams,
    "mt_import_result": ImportResult, **MORE_STRUCTS,
}


# ==== Functions ====

_P = c_void_p
_E = POINTER(Error_)
_SIGS: "dict[str, tuple[Any, list[Any]]]" = {
    "mt_version": (c_char_p, []),
    "mt_struct_size": (c_size_t, [c_char_p]),
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
    "mt_index_run_default_params": (None, [POINTER(IndexRunParams)]),
    "mt_index_run": (
        c_int,
        [c_char_p, POINTER(c_char_p), c_size_t, POINTER(IndexRunParams),
         POINTER(IndexRunResult), _E],
    ),
    "mt_index_run_store": (
        c_int,
        [_P, POINTER(c_char_p), c_size_t, POINTER(IndexRunParams),
         POINTER(IndexRunResult), _E],
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
    "mt_agent_default_params": (None, [POINTER(AgentParams)]),
    "mt_strategy_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "mt_agent_open": (c_int, [POINTER(AgentParams), POINTER(_P), _E]),
    "mt_agent_close": (None, [_P]),
    "mt_agent_check": (
        c_int, [_P, POINTER(Note), POINTER(CheckResult), _E]),
    "mt_agent_check_default_params": (None, [_P, POINTER(AgentCheckParams)]),
    "mt_agent_check_with": (
        c_int, [_P, POINTER(Note), POINTER(AgentCheckParams),
                POINTER(CheckResult), _E]),
    "mt_check_result_free": (None, [POINTER(CheckResult)]),
    "mt_check_result_json": (c_void_p, [POINTER(CheckResult), c_int]),
    "mt_check_submission_line": (c_void_p, [c_char_p, POINTER(CheckResult)]),
    "mt_param_find": (
        POINTER(Param), [POINTER(ParamTable), c_char_p, c_int]),
    "mt_param_valid": (c_int, [POINTER(Param), c_double, c_int]),
    "mt_param_set": (None, [POINTER(Param), c_void_p, c_double]),
    "mt_param_get": (c_double, [POINTER(Param), c_void_p]),
    "mt_param_is_integer": (c_int, [POINTER(Param)]),
    "mt_param_max": (c_double, [POINTER(Param), c_int]),
    "mt_param_check": (c_int, [POINTER(ParamTable), c_void_p, c_int, _E]),
    "mt_qa_default_params": (None, [POINTER(QaParams)]),
    "mt_qa_open": (c_int, [POINTER(QaParams), POINTER(_P), _E]),
    "mt_qa_close": (None, [_P]),
    "mt_qa_ask_default_params": (None, [_P, POINTER(QaAskParams)]),
    "mt_qa_ask_with": (
        c_int, [_P, c_char_p, POINTER(QaAskParams), POINTER(c_void_p), _E]),
    "mt_qa_result_json": (c_void_p, [c_void_p]),
    "mt_qa_result_free": (None, [c_void_p]),
    "mt_verify_default_params": (None, [_P, POINTER(VerifyParams)]),
    "mt_verify_text": (
        c_int, [_P, c_char_p, POINTER(VerifyParams), POINTER(c_void_p), _E]),
    "mt_verify_result_json": (c_void_p, [c_void_p]),
    "mt_verify_result_free": (None, [c_void_p]),
    "mt_eval_ref_load": (c_int, [c_char_p, POINTER(c_void_p), _E]),
    "mt_eval_ref_free": (None, [c_void_p]),
    "mt_eval_sub_load": (c_int, [c_char_p, POINTER(c_void_p), _E]),
    "mt_eval_sub_parse": (
        c_int, [c_char_p, c_char_p, c_size_t, POINTER(c_void_p), _E]),
    "mt_eval_sub_free": (None, [c_void_p]),
    "mt_eval_sub_ndiag": (c_size_t, [c_void_p]),
    "mt_eval_sub_diag": (c_char_p, [c_void_p, c_size_t]),
    "mt_eval_score": (
        c_int, [c_void_p, c_void_p, c_void_p, POINTER(c_void_p), _E]),
    "mt_eval_result_json": (
        c_int, [c_void_p, c_void_p, c_char_p, POINTER(c_void_p), _E]),
    "mt_eval_result_free": (None, [c_void_p]),
    "mt_batch_default_params": (None, [POINTER(BatchParams)]),
    "mt_batch_open_csv": (c_int, [c_char_p, c_size_t, POINTER(_P), _E]),
    "mt_batch_open_csv_text": (
        c_int, [c_char_p, c_char_p, c_size_t, c_size_t, POINTER(_P), _E]),
    "mt_batch_run": (c_int, [_P, _P, POINTER(BatchParams), _E]),
    "mt_batch_progress_get": (None, [_P, POINTER(BatchProgress)]),
    "mt_batch_count": (c_size_t, [_P]),
    "mt_batch_note_get": (c_int, [_P, c_size_t, POINTER(BatchNote)]),
    "mt_batch_submission": (c_int, [_P, c_int, POINTER(c_void_p), _E]),
    "mt_batch_write_submission": (c_int, [_P, c_char_p, c_int, _E]),
    "mt_batch_free": (None, [_P]),
}

# Names whose absence is tolerated (a library built before they landed);
# the calls that need them say so.
_OPTIONAL: "set[str]" = {"mt_struct_size", "mt_agent_check_default_params",
                          "mt_agent_check_with", "mt_verify_default_params", "mt_verify_text",
                          "mt_verify_result_json", "mt_verify_result_free",
                          "mt_batch_default_params", "mt_batch_open_csv",
                          "mt_batch_open_csv_text", "mt_batch_run",
                          "mt_batch_progress_get", "mt_batch_count",
                          "mt_batch_note_get", "mt_batch_submission",
                          "mt_batch_write_submission", "mt_batch_free"}


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
        self._check_layout()

    def _check_layout(self) -> None:
        """Refuses a library whose structs have another size than this
        package's mirrors (its headers changed since the package was
        written): passing one would corrupt memory."""
        size = getattr(self.dll, "mt_struct_size", None)
        if size is None:
            return
        bad = []
        for name, cls in STRUCTS.items():
            n = size(name.encode())
            if n and n != ctypes.sizeof(cls):
                bad.append(f"{name} ({n} bytes, the package's "
                           f"{ctypes.sizeof(cls)})")
        if bad:
            raise OSError(
                f"{self.path} does not match this medtrust package: "
                f"{', '.join(bad)}: install the package from the same "
                "checkout as the library (pip install ./python), or set "
                "MEDTRUST_LIB to the library it was made for")

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
