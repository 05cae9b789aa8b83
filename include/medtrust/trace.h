/* medtrust check traces: the declared, versioned format of the records a
 * check writes (mt_check_result.trace, `check --json`'s "trace", `mediqa
 * --trace` lines, the server's "step" events). Every record is a JSON
 * object whose "step" names its kind; MT_TRACE_RECORDS declares each kind
 * and its keys once, and the writers (src/check/) and readers (the
 * server, `medtrust sweep`, the web UI) follow it. docs/agents.md
 * describes what each key means. */
#ifndef MEDTRUST_TRACE_H
#define MEDTRUST_TRACE_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format's version, written beside a trace as "trace_version". A
 * trace without one is version 1. 2 added the search record's
 * "passages" (its hits) and the call record's "parsed" (each reply's
 * JSON object as extracted, beside its raw text). */
#define MT_TRACE_VERSION 2

/* X(NAME, "kind", "required keys", "optional keys"): the keys besides
 * "step", space-separated. Required keys are in every record of the
 * kind at MT_TRACE_VERSION; optional ones only when they apply (the call
 * record's "error" when no reply was usable, its "ms", tokens and
 * "replies" when the request was answered). "*" allows any key: the
 * correction_evidence record is the verifier's object (medtrust/verify.h)
 * with the number of passages it was given. */
#define MT_TRACE_RECORDS(X)                                                    \
    X(CALL, "call", "role prompt attempt ok",                                  \
      "ms prompt_tokens completion_tokens tokens endpoint replies parsed "     \
      "reasoning error")                                                       \
    X(CONTEXT_RETRY, "context_retry", "role ctx_tokens rule", "")              \
    X(SEARCH, "search",                                                        \
      "query mode retrieve_k k w_lex w_sem reranked hits hit_sources ms "      \
      "passages",                                                              \
      "sources meta")                                                          \
    X(FEW_SHOT, "few_shot", "selection skipped_rows", "examples similarity")   \
    X(MEDEVAL, "medeval",                                                      \
      "finals mean min accepted published_min usable quorum", "rule")          \
    X(EVIDENCE_BUDGET, "evidence_budget",                                      \
      "role budget_tokens ctx_tokens passages_dropped rule", "")               \
    X(CONTEXT_BUDGET, "context_budget", "role ctx_tokens rule",                \
      "budget_tokens passages_dropped steps_dropped")                          \
    X(PARSER_DISAGREED, "parser_disagreed",                                    \
      "accepted_flag accepted_sentence_id parser_flag parser_sentence_id "     \
      "rule",                                                                  \
      "")                                                                      \
    X(ROUND, "round", "rule", "")                                              \
    X(ROUNDS, "rounds", "rule", "")                                            \
    X(RETRIEVAL, "retrieval", "rule", "")                                      \
    X(GUARDS_DETECT, "guards_detect", "agent1 agent2 decision rule", "")       \
    X(GUARDS_LOCATE, "guards_locate", "agent1 agent2 decision rule", "")       \
    X(FALLBACK, "fallback", "role rule", "why")                                \
    X(SENTENCES, "sentences", "source why", "")                                \
    X(CORRECTION_EVIDENCE, "correction_evidence", "passages", "*")             \
    X(VERDICT, "verdict", "error_flag sentence_id fallback", "")

enum mt_trace_kind {
#define MT_TRACE_X_(name, kind, req, opt) MT_TRACE_##name,
    MT_TRACE_RECORDS(MT_TRACE_X_)
#undef MT_TRACE_X_
        MT_TRACE_KIND_COUNT
};

/* One kind as declared: its "step" name and key lists (static data). */
struct mt_trace_kind_info {
    const char *name;
    const char *required; /* space-separated keys besides "step" */
    const char *optional;
};

/* Kind k's declaration, or NULL when k is not one. Thread-safe. */
const struct mt_trace_kind_info *mt_trace_kind_get(enum mt_trace_kind k);

/* The kind whose "step" name is 'name'; MT_ENOTFOUND otherwise. */
enum mt_status mt_trace_kind_parse(const char *name, enum mt_trace_kind *out);

/* Checks one record (JSON text, len bytes) against the declaration of a
 * trace of format 'version': an object whose "step" is a declared kind,
 * with no key the kind does not declare, and (for version
 * MT_TRACE_VERSION) every required key. An older version's record needs
 * only a known "step". MT_EPARSE with 'err' naming the record's kind and
 * the key otherwise; MT_EINVAL for a version newer than this library
 * reads. */
enum mt_status mt_trace_record_check(const char *json, size_t len,
                                     unsigned version, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
