/* Server profiles of the OpenAI-compatible backend: which kind of server
 * an endpoint is (from its first reply or refusal) and what it takes.
 * Names: mtx_ (docs/architecture.md). */
#ifndef MT_MODEL_OPENAI_PROFILE_H
#define MT_MODEL_OPENAI_PROFILE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum mtx_server_kind {
    MTX_SK_UNKNOWN = 0, /* nothing answered yet */
    MTX_SK_GENERIC,     /* answered, with no sign of a known kind */
    MTX_SK_LLAMA,
    MTX_SK_VLLM,
    MTX_SK_OLLAMA,
    MTX_SK_LMSTUDIO,
    MTX_SK_OPENAI,
    MTX_SK_AZURE,
    MTX_SK_DEEPSEEK,
};

/* The kind a chat.completion (or a stream's chunk) shows, GENERIC when
 * it shows none. */
enum mtx_server_kind mtx_server_kind_of_reply(const json_t *reply);

/* The kind a refusal's message shows, UNKNOWN when it shows none. */
enum mtx_server_kind mtx_server_kind_of_error(const char *msg);

/* The kind a reply's Server header names (llama-server's "llama.cpp"),
 * UNKNOWN when it names none. */
enum mtx_server_kind mtx_server_kind_of_header(const char *server);

/* The kind a GET /v1/models list shows (its entries' "owned_by":
 * llamacpp, vllm, library (Ollama), organization_owner (LM Studio),
 * deepseek, openai or system), UNKNOWN when it shows none. The entry
 * named 'model' is read, else the first. *ctx gets vLLM's max_model_len
 * for it (0 when absent). */
enum mtx_server_kind
mtx_server_kind_of_models(const json_t *list, const char *model, uint32_t *ctx);

/* What a kind's documentation says its requests must be, set as soon as
 * the kind is known (the refusal step-down stays for the rest):
 * OpenAI's and Azure OpenAI's reasoning models (o1, o3, o4-mini, the
 * gpt-5 family but gpt-5-chat) take max_completion_tokens and only the
 * default temperature and top_p; Ollama's and LM Studio's OpenAI
 * endpoints list no 'n' among the fields they take (one completion a
 * request). */
struct mtx_server_preset {
    int mct;      /* max_completion_tokens for max_tokens */
    int no_temp;  /* leave temperature out */
    int no_top_p; /* leave top_p out */
    int n_one;    /* one completion a request */
};

/* The preset of kind k serving 'model' (NULL: none known); all zero for
 * a kind whose documentation asks nothing of it. */
void mtx_server_preset(enum mtx_server_kind k, const char *model,
                       struct mtx_server_preset *p);

/* What the backend sends an endpoint now. */
struct mtx_server_state {
    enum mtx_server_kind kind;
    const char *url;    /* the chat URL */
    int api_key;        /* 1: "api-key" header, else Bearer */
    int mct;            /* max_completion_tokens */
    int no_temp;        /* temperature left out */
    const char *format; /* response_format now: json_schema, ... none */
    int no_strlen;      /* schemas without string lengths */
    int n_one;          /* one completion a request */
    int fold_sys;       /* system prompt folded into the user turn */
    const char *how;    /* what told the kind ("its first reply", "GET
                           /props", ...), NULL while unknown */
    const char *server; /* the Server header seen, "" when none */
};

/* One line: "KIND (auth ..., URL, limit field, temperature, structured
 * output, reasoning field)". */
void mtx_server_profile(char *buf, size_t n, const struct mtx_server_state *s);

#endif
