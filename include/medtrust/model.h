/* medtrust model runtime: one chat interface over llama.cpp (gguf:PATH) and
 * OpenAI-compatible HTTP servers (openai:BASE_URL#MODEL), with per-role
 * routing, timeouts, retries and an optional SQLite call cache. */
#ifndef MEDTRUST_MODEL_H
#define MEDTRUST_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mt_llm;

/* Default per-call timeout in seconds (MEDTRUST_LLM_TIMEOUT overrides). */
#define MT_LLM_DEFAULT_TIMEOUT_S 120.0

/* How an OpenAI-compatible server is asked for a reply in a JSON shape
 * when a call has a json_schema (--response-format). */
enum mt_response_format {
    MT_RF_AUTO,        /* json_schema; on a 400 that names the field, fall
                          back once to json_object, then to none (kept for
                          the handle's life, logged) */
    MT_RF_JSON_SCHEMA, /* {"type":"json_schema",...}, no fallback */
    MT_RF_JSON_OBJECT, /* {"type":"json_object"}: any JSON object */
    MT_RF_NONE,        /* no response_format: the prompt alone asks */
};

/* Parses "auto", "json_schema", "json_object" or "none". MT_EINVAL for
 * anything else. */
enum mt_status mt_response_format_parse(const char *s,
                                        enum mt_response_format *out);

/* The name of 'f' as mt_response_format_parse reads it. */
const char *mt_response_format_name(enum mt_response_format f);

/* Settings fixed when a backend is opened. Strings are copied. */
struct mt_llm_params {
    double timeout_s;         /* bound on each model call (default 120) */
    uint32_t max_retries;     /* HTTP retries after the first try (4) */
    double backoff_base_s;    /* first retry delay before jitter (0.5) */
    double backoff_max_s;     /* cap on one retry delay (30) */
    uint32_t max_concurrency; /* HTTP requests in flight per backend (4) */
    uint32_t threads;         /* llama.cpp threads, 0 = online CPUs */
    uint32_t n_ctx;           /* llama.cpp context, 0 = min(model, 4096) */
    const char *cache_path;   /* SQLite call cache file; NULL = no cache */
    enum mt_response_format response_format; /* openai only (auto) */
};

/* Fills 'p' with the defaults above. timeout_s comes from
 * MEDTRUST_LLM_TIMEOUT when that is set to a positive number. */
void mt_llm_default_params(struct mt_llm_params *p);

/* One chat message; both strings are borrowed for the call. */
struct mt_llm_message {
    const char *role; /* "system", "user" or "assistant" */
    const char *content;
};

/* Per-call sampling settings. Strings are borrowed for the call. */
struct mt_chat_params {
    float temperature;       /* 0 = greedy (default 0) */
    float top_p;             /* 1 = off (default 1) */
    uint32_t max_tokens;     /* completion budget (default 512) */
    uint32_t n;              /* completions wanted, 1..64 (default 1) */
    uint64_t seed;           /* sampling seed (default 42) */
    const char *const *stop; /* stop strings, may be NULL */
    size_t n_stop;           /* up to 8 */
    const char *json_schema; /* JSON Schema text constraining output */
    const char *grammar;     /* raw GBNF (gguf only); wins over schema */
    /* Streaming (NULL = off). When set, each completion's text is also
     * passed on as it is generated: on_token(on_token_ctx, i, piece, len)
     * for completion i, pieces in order and whole UTF-8 characters, which
     * together equal texts[i]. When a failed attempt is retried,
     * on_token(ctx, i, NULL, 0) comes first: drop what came for i. A
     * cached reply comes as one piece. A nonzero return stops the call
     * with MT_ECANCELED. Called on the calling thread; the OpenAI backend
     * sends "stream": true, the gguf backend calls it per token. */
    int (*on_token)(void *ctx, uint32_t i, const char *piece, size_t len);
    void *on_token_ctx;
};

/* Fills 'p' with the defaults above. */
void mt_chat_default_params(struct mt_chat_params *p);

/* The completions of one call. Owned by the caller: free with
 * mt_chat_result_free. */
struct mt_chat_result {
    uint32_t n;                 /* completions in texts */
    char **texts;               /* n NUL-terminated UTF-8 strings */
    uint64_t prompt_tokens;     /* as reported by the backend */
    uint64_t completion_tokens; /* over all n completions */
    double seconds;             /* wall time of the call */
    int cached;                 /* 1 when served from the call cache */
    int tokens_estimated;       /* 1 when a server reported no usage and
                                   the token counts are estimates (about 4
                                   bytes a token) */
};

/* Frees the texts and zeroes 'r'. NULL and zeroed results are allowed. */
void mt_chat_result_free(struct mt_chat_result *r);

/* Opens the backend named by 'spec': "openai:BASE_URL#MODEL" (key from
 * MEDTRUST_API_KEY or OPENAI_API_KEY) or "gguf:PATH". 'params' may be NULL
 * for defaults and is copied. On success *out owns the handle (free with
 * mt_llm_close); on failure *out is unchanged and 'err' names the setting
 * to fix. */
enum mt_status mt_llm_open(const char *spec, const struct mt_llm_params *p,
                           struct mt_llm **out, struct mt_error *err);

/* Returns the spec for agent role 'role' (e.g. "eval"): the value of
 * MEDTRUST_LLM_<ROLE> (upper-cased), else MEDTRUST_LLM, else 'fallback'
 * (may be NULL). The string belongs to the environment or the caller. */
const char *mt_llm_role_spec(const char *role, const char *fallback);

/* mt_llm_open on mt_llm_role_spec(role, fallback). MT_EINVAL when no spec
 * is configured at all. */
enum mt_status mt_llm_open_role(const char *role, const char *fallback,
                                const struct mt_llm_params *p,
                                struct mt_llm **out, struct mt_error *err);

/* Runs one chat call: n completions of 'msgs' (n_msgs >= 1). 'p' may be
 * NULL for defaults. On success *res holds the completions; on failure it
 * is zeroed. Thread-safe: concurrent calls on one handle are allowed (the
 * HTTP backend bounds them by max_concurrency, gguf serialises them). */
enum mt_status mt_llm_chat(struct mt_llm *l, const struct mt_llm_message *msgs,
                           size_t n_msgs, const struct mt_chat_params *p,
                           struct mt_chat_result *res, struct mt_error *err);

/* Backend name ("openai" or "gguf") and model name; owned by the handle. */
const char *mt_llm_backend(const struct mt_llm *l);
const char *mt_llm_model(const struct mt_llm *l);

/* Closes the backend; NULL is allowed. No call may be in flight. */
void mt_llm_close(struct mt_llm *l);

#ifdef __cplusplus
}
#endif
#endif
