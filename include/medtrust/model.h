/* medtrust model runtime: chat models (LLMs), sentence embedders,
 * cross-encoder rerankers and NLI classifiers over llama.cpp (gguf:PATH)
 * and OpenAI-compatible HTTP servers (openai:BASE_URL#MODEL), with per-role
 * routing, timeouts, retries and an optional SQLite call cache. Every
 * handle opens with mt_<kind>_open(spec, params, &out, err) and closes with
 * mt_<kind>_close (NULL allowed). */
#ifndef MEDTRUST_MODEL_H
#define MEDTRUST_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "params.h"
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
    /* The model's context in tokens (prompt and completion together).
     * gguf: a cap on the model's trained context (0 = the trained
     * context, capped so the KV cache takes at most a quarter of the
     * memory); openai: what the server's context is, for a server that
     * cannot be asked (0 = ask llama-server's GET /props, else learn it
     * from the first context-length refusal); with /props too, the
     * smaller wins (--ctx) */
    uint32_t n_ctx;
    const char *cache_path; /* SQLite call cache file; NULL = no cache */
    enum mt_response_format response_format; /* openai only (auto) */
};

/* Fills 'p' with the defaults above. timeout_s comes from
 * MEDTRUST_LLM_TIMEOUT when that is set to a positive number, max_retries
 * from MEDTRUST_LLM_RETRIES when that is a whole number 0..10 (a server,
 * which has no --retries, takes it from there). */
void mt_llm_default_params(struct mt_llm_params *p);

/* The settings table of struct mt_llm_params (medtrust/params.h): the
 * timeout, retries and context every verb that calls a model takes
 * (--timeout, --retries, --ctx), with bounds and help. Immutable; safe
 * from any thread. */
extern const struct mt_param_table mt_llm_param_table;

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
    char **reasoning;           /* NULL, or n entries, each NULL or the
                                   completion's reasoning: the server's
                                   "reasoning" / "reasoning_content" field
                                   or a "<think>...</think>" block (also
                                   one the chat template opened in the
                                   prompt, "...</think>answer"). Never
                                   part of texts, which hold the answer
                                   after it; for traces, never for a
                                   conversation's history. Not cached */
    const char *endpoint;       /* openai: the base URL that answered
                                   (of "URL1,URL2#MODEL", the last request
                                   of the call); owned by the model handle,
                                   valid while it is open. NULL for other
                                   backends and cached replies */
};

/* Frees the texts and zeroes 'r'. NULL and zeroed results are allowed. */
void mt_chat_result_free(struct mt_chat_result *r);

/* Opens the backend named by 'spec': "openai:BASE_URL#MODEL" (key from
 * MEDTRUST_API_KEY or OPENAI_API_KEY) or "gguf:PATH", with LoRA adapters
 * "gguf:PATH?lora=ADAPTER[:SCALE]&lora=..." (loaded once for the handle,
 * applied to its context; the model name, and so the cache key, names
 * them: "base.gguf+adapter.gguf:0.5"). 'params' may be NULL
 * for defaults and is copied. On success *out owns the handle (free with
 * mt_llm_close); on failure *out is unchanged and 'err' names the setting
 * to fix. */
enum mt_status mt_llm_open(const char *spec, const struct mt_llm_params *p,
                           struct mt_llm **out, struct mt_error *err);

/* Returns the spec for agent role 'role' (e.g. "eval"): the value of
 * MEDTRUST_LLM_<ROLE> (upper-cased), else 'fallback' (the caller's --llm;
 * may be NULL or ""), else MEDTRUST_LLM: an option given on the command
 * line beats the environment's default model, a role's own variable beats
 * both. The string belongs to the environment or the caller. */
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

/* The model's context in tokens (prompt and completion together), as far
 * as it is known; 0 while unknown. gguf: the context the model was opened
 * with. openai: mt_llm_params.n_ctx, capped by what the server says
 * (llama-server's GET /props, default_generation_settings.n_ctx: one
 * slot's context, asked once on the first call; without /props, vLLM's
 * GET /v1/models max_model_len), else the figure read
 * from a context-length refusal of an earlier chat (llama-server's,
 * vLLM's or OpenAI's wording), which also makes later counts err higher
 * when the server counted more than the estimate. Thread-safe. */
uint32_t mt_llm_n_ctx(struct mt_llm *l);

/* How mt_llm_count_tokens counts. */
enum mt_token_count {
    MT_TOKENS_VOCAB,    /* the gguf model's own vocabulary: exact */
    MT_TOKENS_SERVER,   /* the server's POST /tokenize (llama-server) */
    MT_TOKENS_ESTIMATE, /* a token per 3 ASCII bytes, one per other
                           character, scaled up after a refusal */
};

/* Counts the tokens of s[0..n) for budgeting a prompt (the text alone:
 * no chat template, no special tokens). *how (may be NULL) says how it
 * was counted. The first count on an openai handle tries /tokenize once;
 * a server without it is estimated from then on. Thread-safe. */
uint32_t mt_llm_count_tokens(struct mt_llm *l, const char *s, size_t n,
                             enum mt_token_count *how);

/* "vocab", "server" or "estimate". */
const char *mt_token_count_str(enum mt_token_count how);

/* openai: and azure: the server profile the endpoint got (its kind:
 * llama-server, vllm, ollama, lm-studio, openai, azure, deepseek or
 * openai-compatible, detected once from the first of GET /props, GET
 * /v1/models, the Server header, its first reply or refusal; its auth
 * header, URL shape, token-limit field, whether temperature is sent, the
 * structured-output dialect, where the reasoning text goes, as learnt so
 * far, and what told the kind). The first call asks /props and
 * /v1/models if no call has (as mt_llm_n_ctx does). Valid until the next
 * call on the handle. NULL for other backends. */
const char *mt_llm_profile(struct mt_llm *l);

/* Closes the backend; NULL is allowed. No call may be in flight. */
void mt_llm_close(struct mt_llm *l);

/* ==== Embedders ==== */

struct mt_embedder;

/* How an embedder with a token limit embeds a longer text: overlapping
 * windows of the limit's length whose vectors are averaged or
 * max-pooled, or only the first window (the text cut at the limit, as
 * models do by themselves: the default, see mt_embedder_params). */
enum mt_embed_pool {
    MT_EMBED_POOL_MEAN = 0,
    MT_EMBED_POOL_MAX,
    MT_EMBED_POOL_FIRST,
};

struct mt_embedder_params {
    uint32_t threads;    /* worker threads, 0 = all online CPUs */
    uint32_t batch_size; /* texts per forward pass, 0 = backend default */
    uint32_t dims;       /* Matryoshka truncation, 0 = native dims */
    int normalize;       /* unit-length output (default 1) */
    double timeout_s;    /* per call, for remote backends (default 120) */
    /* SQLite call cache for every backend, keyed by the spec, the output
     * dims and the text; NULL = no cache. Only read during
     * mt_embedder_open. */
    const char *cache_path;
    /* long texts (use-lite: over 128 tokens, windows overlapping by 32);
     * the default is MT_EMBED_POOL_FIRST (mean windows scored lower on
     * MedQuAD, BENCHMARKS.md), or what MEDTRUST_EMBED_POOL
     * (first|mean|max) says */
    enum mt_embed_pool window_pool;
};

void mt_embedder_default_params(struct mt_embedder_params *p);

/* The settings table of struct mt_embedder_params' numeric knobs that
 * `embed` takes (--dims, --threads; params.h); the defaults are
 * mt_embedder_default_params'. */
extern const struct mt_param_table mt_embedder_param_table;

/* Opens the embedder named by 'spec': "use-lite", "gguf:PATH" or
 * "openai:BASE_URL#MODEL". 'params' may be NULL for defaults and is copied.
 * On success *out owns the handle (close with mt_embedder_close). */
enum mt_status mt_embedder_open(const char *spec,
                                const struct mt_embedder_params *params,
                                struct mt_embedder **out, struct mt_error *err);

/* Output dimension after truncation. */
uint32_t mt_embedder_dims(const struct mt_embedder *e);
/* Backend name ("use-lite", "gguf", "openai"); static. */
const char *mt_embedder_name(const struct mt_embedder *e);

/* Embeds n texts into out (n * mt_embedder_dims floats, row-major),
 * truncated and normalised as the params say. Thread-safety: one call at
 * a time per handle unless the backend documents otherwise. */
enum mt_status mt_embedder_embed(struct mt_embedder *e,
                                 const struct mt_str *texts, size_t n,
                                 float *out, struct mt_error *err);

/* Closes the handle; NULL is allowed. */
void mt_embedder_close(struct mt_embedder *e);

/* The index's embed callback (mt_index_embed_fn) over an embedder given
 * as 'user', so mt_index_build can store vectors from any backend. */
enum mt_status mt_embedder_index_fn(void *user, const char *const *texts,
                                    const size_t *lens, size_t n, float *out,
                                    struct mt_error *err);

/* ==== Rerankers ==== */

struct mt_reranker;

struct mt_reranker_params {
    uint32_t threads;         /* llama.cpp threads, 0 = online CPUs */
    uint32_t n_ctx;           /* llama.cpp context, 0 = min(model, 4096) */
    double timeout_s;         /* per HTTP call (default 120) */
    uint32_t max_retries;     /* HTTP retries (default 4) */
    uint32_t max_concurrency; /* HTTP requests in flight (default 4) */
    const char *cache_path;   /* call cache file, NULL = none; copied */
};

/* Fills 'p' with the defaults (timeout from MEDTRUST_LLM_TIMEOUT). */
void mt_reranker_default_params(struct mt_reranker_params *p);

/* Opens "openai:BASE_URL#MODEL" (a /v1/rerank endpoint) or "gguf:PATH"
 * (llama.cpp rank pooling); 'p' may be NULL and is copied. On success
 * *out owns the handle (mt_reranker_close); on failure *out is unchanged
 * and 'err' names --reranker. */
enum mt_status mt_reranker_open(const char *spec,
                                const struct mt_reranker_params *p,
                                struct mt_reranker **out, struct mt_error *err);

/* Scores n documents against 'query' into scores[0..n) (higher = more
 * relevant). Thread-safe (the gguf backend serialises calls). */
enum mt_status mt_reranker_score(struct mt_reranker *r, const char *query,
                                 const struct mt_str *docs, size_t n,
                                 float *scores, struct mt_error *err);

/* The index's rerank callback (mt_index_rerank_fn) over a reranker given
 * as 'user': lets mt_index_search run its rerank stage through any
 * backend. Thread-safe as mt_reranker_score is. */
enum mt_status mt_reranker_index_fn(void *user, const char *query,
                                    const char *const *texts,
                                    const size_t *lens, size_t n, float *scores,
                                    struct mt_error *err);

/* Closes the handle; NULL is allowed. */
void mt_reranker_close(struct mt_reranker *r);

/* ==== NLI classifiers (claim verification) ==== */

enum mt_nli_label {
    MT_NLI_SUPPORT,     /* "entailment" */
    MT_NLI_CONTRADICT,  /* "contradiction" */
    MT_NLI_NO_EVIDENCE, /* "neutral" */
};

struct mt_nli;

/* Opens the classifier named by 'spec':
 *   gguf:PATH  a classifier whose labels (classifier.output_labels) name
 *              entailment, contradiction and neutral;
 *   onnx:DIR   an ONNX export (model.onnx or onnx/model.onnx, config.json,
 *              tokenizer.json) whose config.json id2label names them
 *              (MNLI's, SciFact's SUPPORT / CONTRADICT / NOT ENOUGH INFO,
 *              FEVER's); both take ?preset=, ?labels=, ?pair= options;
 *   llm        a prompted judge on MEDTRUST_LLM_NLI, else MEDTRUST_LLM;
 *   llm:SPEC   the same on the chat model SPEC (openai:... or gguf:...).
 * 'p' may be NULL (threads and timeout are used). On success *out owns the
 * handle (mt_nli_close); errors name --nli. */
enum mt_status mt_nli_open(const char *spec, const struct mt_reranker_params *p,
                           struct mt_nli **out, struct mt_error *err);

/* Classifies whether 'evidence' supports 'claim'. The gguf classifier
 * reads the pair as "claim [SEP] evidence" (VerifAI's input order); the
 * llm judge is shown the evidence as the reference and the claim as the
 * claim. probs (may be NULL) receives probabilities indexed by enum
 * mt_nli_label (one-hot for the llm judge); *label the most likely.
 * Thread-safe (calls serialise). */
enum mt_status mt_nli_classify(struct mt_nli *n, const char *claim,
                               const char *evidence, float probs[3],
                               enum mt_nli_label *label, struct mt_error *err);

/* "SUPPORT", "CONTRADICT" or "NO_EVIDENCE". */
const char *mt_nli_label_str(enum mt_nli_label l);

/* onnx: classifiers: how the model's outputs map onto the labels and
 * which text comes first, e.g. "onnx:DIR: output 0 (entailment) ->
 * SUPPORT; ...; pair evidence first"; NULL for other backends. Owned by
 * the handle. */
const char *mt_nli_describe(const struct mt_nli *n);

/* Closes the handle; NULL is allowed. */
void mt_nli_close(struct mt_nli *n);

#ifdef __cplusplus
}
#endif
#endif
