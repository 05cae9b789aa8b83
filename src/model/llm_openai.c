/* OpenAI-compatible chat backend (openai:BASE_URL#MODEL): POST
 * /v1/chat/completions with n, seed, stop and response_format, plain or
 * streamed as server-sent events; replies are validated field by field. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "model/http.h"
#include "model/llm.h"
#include "model/openai_profile.h"

/* Without a "usage" object, tokens are estimated at this many bytes each
 * (the usual rule of thumb for English BPE vocabularies). */
#define BYTES_PER_TOKEN_ESTIMATE 4

/* Budgets that follow from the request, so that a server that ignores
 * max_tokens (a 200 MB reply to a 1,024-token request, an endless
 * stream) is a failed call at a bounded cost, never an answer: one
 * completion's text may hold TEXT_PER_TOKEN bytes per token asked for
 * (real tokens average about 4; the longest vocabulary entries, runs of
 * spaces or '=', are some hundreds, which the margin absorbs) plus
 * TEXT_MARGIN; a plain reply 4 times that per completion (JSON escapes a
 * byte as up to 6) plus REPLY_MARGIN for the envelope; a stream at most
 * 2 events per token plus STREAM_EVENT_MARGIN (role, finish and usage
 * events carry no token). */
#define TEXT_PER_TOKEN 64
#define TEXT_MARGIN ((size_t)256 << 10)
#define REPLY_MARGIN ((size_t)64 << 10)
#define STREAM_EVENT_MARGIN 64

/* Silent truncation (Ollama's /v1 cuts a prompt at its default context,
 * 2,048 or 4,096 tokens, whatever was asked): no tokenizer makes fewer
 * tokens than 3/8 of mtx_llm_estimate_tokens' count (a token per 3 ASCII
 * bytes: one per 8 bytes of English, which averages about 4), so a server
 * that reports fewer prompt tokens than that for a prompt of at least
 * TRUNCATION_MIN_BYTES read only part of it. */
#define LEAST_OF_ESTIMATE(e) ((e)*3 / 8)
#define TRUNCATION_MIN_BYTES 8192

static size_t text_budget(const struct mt_chat_params *p)
{
    return (size_t)p->max_tokens * TEXT_PER_TOKEN + TEXT_MARGIN;
}

static size_t reply_budget(const struct mt_chat_params *p, uint32_t n)
{
    return (size_t)n * 4 * text_budget(p) + REPLY_MARGIN;
}

struct openai {
    struct mt_http *http;
    char *model;
    char url[512];
    char ep[160]; /* "chat/completions", with Azure's api-version */
    pthread_mutex_t mu;
    enum mt_response_format rf; /* what this endpoint is sent now */
    int rf_auto;                /* 1: rf may still fall back */
    int n_one;                  /* 1: the endpoint refused n > 1 */
    int fold_sys;        /* 1: the endpoint's template has no system role */
    unsigned lim;        /* LIM_* learnt from the endpoint's refusals */
    uint32_t ctx_opt;    /* --ctx (mt_llm_params.n_ctx), 0 unset */
    uint32_t ctx_server; /* /props or a refusal said, 0 unknown */
    int props_asked;     /* 1 once GET /props was tried */
    pthread_mutex_t props_mu;  /* held while /props is asked */
    int tokenize;              /* 0 untried, 1 works, -1 absent */
    double scale;              /* estimates times this (>= 1) */
    int api_key;               /* Azure's api-key header */
    enum mtx_server_kind kind; /* detected once (model/openai_profile.h) */
    const char *how;           /* what told it (a static string) */
    char desc[768];            /* mt_llm_profile's line */
};

/* What OpenAI's reasoning models (o1, o3, gpt-5...) refuse, learnt from
 * their 400s and remembered for the endpoint: max_tokens (they want
 * max_completion_tokens, which also counts the hidden reasoning tokens:
 * REASONING_TOKENS are added for them), and any temperature or top_p but
 * the default. */
#define LIM_MCT 1u
#define LIM_NO_TEMP 2u
#define LIM_NO_TOP_P 4u
/* OpenAI's strict json_schema permits no minLength / maxLength ("'maxLength'
 * is not permitted"): after that refusal schemas go without them. */
#define LIM_NO_STRLEN 8u
/* A model that reasons in its output (a reasoning field, a <think>
 * block): its thinking counts against max_tokens on vLLM, llama-server,
 * Ollama and the rest, so a judge's 32 tokens would hold no answer. Learnt
 * from a reply that carried reasoning (or ran out of tokens reasoning,
 * then sent again once), it gets REASONING_TOKENS more. */
#define LIM_REASONS 16u
#define REASONING_TOKENS 4096

static void openai_free(void *self)
{
    struct openai *o = self;

    if (!o)
        return;
    pthread_mutex_destroy(&o->mu);
    pthread_mutex_destroy(&o->props_mu);
    mtx_http_free(o->http);
    mt_free(o->model);
    mt_free(o);
}

static const char *openai_model(const void *self)
{
    return ((const struct openai *)self)->model;
}

/* ==== Server profile ==== */

/* Sets the endpoint's kind to k, saying what told it, unless a kind is
 * known already: the first sign wins (GET /props and /v1/models, asked
 * once for the context, the Server header, a reply's own fields, a
 * refusal's wording). k GENERIC only marks an endpoint that answered. */
/* What the kind's documentation says its requests must be, before any
 * refusal (o->mu held or o not shared yet). */
static void apply_preset(struct openai *o)
{
    struct mtx_server_preset ps;

    mtx_server_preset(o->kind, o->model, &ps);
    o->lim |= (ps.mct ? LIM_MCT : 0u) | (ps.no_temp ? LIM_NO_TEMP : 0u) |
              (ps.no_top_p ? LIM_NO_TOP_P : 0u);
    o->n_one |= ps.n_one;
}

static void set_kind(struct openai *o, enum mtx_server_kind k, const char *how)
{
    pthread_mutex_lock(&o->mu);
    if (k != MTX_SK_UNKNOWN &&
        (o->kind == MTX_SK_UNKNOWN || o->kind == MTX_SK_GENERIC)) {
        o->kind = k;
        o->how = k == MTX_SK_GENERIC ? NULL : how;
        apply_preset(o);
    }
    pthread_mutex_unlock(&o->mu);
}

/* The kind the Server header of the replies so far names. */
static enum mtx_server_kind header_kind(struct openai *o)
{
    char server[64];

    mtx_http_server(o->http, server, sizeof server);
    return mtx_server_kind_of_header(server);
}

static void detect_reply(struct openai *o, const json_t *reply)
{
    enum mtx_server_kind k = mtx_server_kind_of_reply(reply);

    if (k == MTX_SK_GENERIC && header_kind(o) != MTX_SK_UNKNOWN)
        set_kind(o, header_kind(o), "its Server header");
    set_kind(o, k, "its first reply's fields");
}

static void detect_error(struct openai *o, const struct mt_error *e)
{
    enum mtx_server_kind k = mtx_server_kind_of_error(e->msg);

    if (k != MTX_SK_UNKNOWN)
        set_kind(o, k, "a refusal's wording");
    else
        set_kind(o, header_kind(o), "its Server header");
}

static const char *rf_name(enum mt_response_format f);

static uint32_t openai_n_ctx(void *self);

static const char *openai_profile(void *self)
{
    struct openai *o = self;
    struct mtx_server_state st;
    char server[64];

    (void)openai_n_ctx(o); /* asks /props and /v1/models once */
    mtx_http_server(o->http, server, sizeof server);
    pthread_mutex_lock(&o->mu);
    st = (struct mtx_server_state){o->kind,
                                   o->url,
                                   o->api_key,
                                   (o->lim & LIM_MCT) != 0,
                                   (o->lim & LIM_NO_TEMP) != 0,
                                   rf_name(o->rf),
                                   (o->lim & LIM_NO_STRLEN) != 0,
                                   o->n_one,
                                   o->fold_sys,
                                   o->how,
                                   server};
    mtx_server_profile(o->desc, sizeof o->desc, &st);
    pthread_mutex_unlock(&o->mu);
    return o->desc;
}

/* ==== Response format ==== */

static const char *const rf_names[] = {"auto", "json_schema", "json_object",
                                       "none"};

enum mt_status mt_response_format_parse(const char *s,
                                        enum mt_response_format *out)
{
    size_t i;

    for (i = 0; s && i < sizeof rf_names / sizeof *rf_names; i++)
        if (strcmp(s, rf_names[i]) == 0) {
            *out = (enum mt_response_format)i;
            return MT_OK;
        }
    return MT_EINVAL;
}

static const char *rf_name(enum mt_response_format f)
{
    return f == MT_RF_NONE ? "no response_format (prompt and validation)"
                           : mt_response_format_name(f);
}

const char *mt_response_format_name(enum mt_response_format f)
{
    return (size_t)f < sizeof rf_names / sizeof *rf_names ? rf_names[f] : "?";
}

static enum mt_response_format rf_now(struct openai *o)
{
    enum mt_response_format f;

    pthread_mutex_lock(&o->mu);
    f = o->rf;
    pthread_mutex_unlock(&o->mu);
    return f;
}

/* A refused request: HTTP 400 or 422 ("HTTP <code>: <message>" is
 * mtx_http_post_json's wording); its message lowercased into low. */
static int refused(const struct mt_error *e, char *low, size_t n)
{
    const char *m = strstr(e->msg, ": HTTP 4");
    size_t i;

    if (e->status != MT_EINVAL || !m ||
        (strncmp(m, ": HTTP 400:", 11) != 0 &&
         strncmp(m, ": HTTP 422:", 11) != 0))
        return 0;
    for (i = 0; m[i] && i + 1 < n; i++)
        low[i] = (char)(m[i] >= 'A' && m[i] <= 'Z' ? m[i] + 32 : m[i]);
    low[i] = '\0';
    return 1;
}

/* A refusal of the response_format we sent: the message names the field. */
static int refuses_format(const struct mt_error *e)
{
    char low[MT_ERROR_MSG_MAX];

    return refused(e, low, sizeof low) &&
           (strstr(low, "response_format") || strstr(low, "json_schema") ||
            strstr(low, "json_object") || strstr(low, "response format"));
}

/* A refusal of n > 1, as llama-server's "Field 'n': Value must be between
 * 1 <= value <= 1" (older servers ignored n and sent one choice). */
static int refuses_n(const struct mt_error *e)
{
    char low[MT_ERROR_MSG_MAX];

    return refused(e, low, sizeof low) &&
           (strstr(low, "'n'") || strstr(low, "\"n\"") ||
            strstr(low, "field n "));
}

/* Asks one completion a request from now on after a refusal of n > 1;
 * returns 1 when the call should be made again. */
static int n_fall_back(struct openai *o, uint32_t sent,
                       const struct mt_error *e)
{
    int first;

    if (sent < 2 || !refuses_n(e))
        return 0;
    pthread_mutex_lock(&o->mu);
    first = !o->n_one;
    o->n_one = 1;
    pthread_mutex_unlock(&o->mu);
    if (first)
        mt_log(MT_LOG_WARN,
               "%s refused n = %u (%s); asking one completion a request "
               "from now on",
               o->url, (unsigned)sent, e->msg);
    return 1;
}

/* The LIM_* bits a refusal asks for: OpenAI's "Unsupported parameter:
 * 'max_tokens' is not supported with this model. Use
 * 'max_completion_tokens' instead." and "Unsupported value: 'temperature'
 * does not support 0 with this model. Only the default (1) value is
 * supported." (also for 'top_p'). */
static unsigned refused_lims(const struct mt_error *e)
{
    char low[MT_ERROR_MSG_MAX];
    unsigned bits = 0;

    if (!refused(e, low, sizeof low) || !strstr(low, "unsupported"))
        return 0;
    if (strstr(low, "'max_tokens'"))
        bits |= LIM_MCT;
    if (strstr(low, "'temperature'"))
        bits |= LIM_NO_TEMP;
    if (strstr(low, "'top_p'"))
        bits |= LIM_NO_TOP_P;
    return bits;
}

/* OpenAI's "Invalid schema for response_format 'response': In
 * context=(...), 'maxLength' is not permitted." */
static unsigned refused_strlen(const struct mt_error *e)
{
    char low[MT_ERROR_MSG_MAX];

    if (!refused(e, low, sizeof low) || !strstr(low, "schema") ||
        !strstr(low, "not permitted"))
        return 0;
    return strstr(low, "maxlength") || strstr(low, "minlength") ? LIM_NO_STRLEN
                                                                : 0;
}

static unsigned lims_now(struct openai *o)
{
    unsigned v;

    pthread_mutex_lock(&o->mu);
    v = o->lim;
    pthread_mutex_unlock(&o->mu);
    return v;
}

/* Learns what a refusal of a request sent with 'sent' asks to leave out
 * or rename; returns 1 when the call should be made again (the endpoint's
 * limits have changed since it was sent). */
static int lim_fall_back(struct openai *o, unsigned sent,
                         const struct mt_error *e)
{
    unsigned bits = refused_lims(e) | refused_strlen(e);
    int again;

    if (!bits)
        return 0;
    pthread_mutex_lock(&o->mu);
    if ((o->lim | bits) != o->lim)
        mt_log(MT_LOG_WARN,
               "%s refused a field of the request (%s); sending%s%s%s%s "
               "from now on",
               o->url, e->msg,
               bits & LIM_MCT ? " max_completion_tokens for max_tokens" : "",
               bits & LIM_NO_TEMP ? " no temperature" : "",
               bits & LIM_NO_TOP_P ? " no top_p" : "",
               bits & LIM_NO_STRLEN ? " schemas without string lengths" : "");
    o->lim |= bits;
    again = o->lim != sent;
    pthread_mutex_unlock(&o->mu);
    return again;
}

/* A refusal of the messages' roles by a chat template without a system
 * role: Mistral-Instruct v0.1/v0.2's raises "Conversation roles must
 * alternate user/assistant/user/assistant/..." (vLLM answers 400, TGI
 * 422), others say "System role not supported". */
static int refuses_roles(const struct mt_error *e)
{
    char low[MT_ERROR_MSG_MAX];

    return refused(e, low, sizeof low) &&
           (strstr(low, "roles must alternate") || strstr(low, "system role") ||
            strstr(low, "system message"));
}

static int has_system(const struct mt_llm_message *m, size_t nm)
{
    return nm > 0 && strcmp(m[0].role, "system") == 0;
}

/* Folds the system prompt into the first user turn from now on after a
 * refusal of the roles of a request that had one; returns 1 when the call
 * should be made again. */
static int sys_fall_back(struct openai *o, const struct mt_llm_message *m,
                         size_t nm, const struct mt_error *e)
{
    int first;

    if (!has_system(m, nm) || !refuses_roles(e))
        return 0;
    pthread_mutex_lock(&o->mu);
    first = !o->fold_sys;
    o->fold_sys = 1;
    pthread_mutex_unlock(&o->mu);
    if (first)
        mt_log(MT_LOG_WARN,
               "%s refused a system message (%s): its chat template has no "
               "system role; sending the system prompt at the head of the "
               "first user turn from now on",
               o->url, e->msg);
    return 1;
}

static int fold_sys(struct openai *o)
{
    int v;

    pthread_mutex_lock(&o->mu);
    v = o->fold_sys;
    pthread_mutex_unlock(&o->mu);
    return v;
}

/* m with its system message folded into the first user turn, as
 * templates without a system role expect ("SYSTEM\n\nUSER"; a system
 * message alone becomes the user turn): a new array in *out of *nout
 * messages whose first content is *joined (both mt_free). */
static enum mt_status fold_messages(const struct mt_llm_message *m, size_t nm,
                                    struct mt_llm_message **out, size_t *nout,
                                    char **joined)
{
    int with_user = nm > 1 && strcmp(m[1].role, "user") == 0;
    size_t skip = with_user ? 2 : 1;
    size_t a = strlen(m[0].content);
    size_t b = with_user ? strlen(m[1].content) : 0;

    *out = mt_calloc(nm - skip + 1, sizeof **out);
    *joined = mt_malloc(a + b + 3);
    if (!*out || !*joined) {
        mt_free(*out);
        mt_free(*joined);
        return MT_ENOMEM;
    }
    memcpy(*joined, m[0].content, a);
    if (with_user) {
        memcpy(*joined + a, "\n\n", 2);
        memcpy(*joined + a + 2, m[1].content, b + 1);
    } else {
        (*joined)[a] = '\0';
    }
    (*out)[0] = (struct mt_llm_message){"user", *joined};
    memcpy(*out + 1, m + skip, (nm - skip) * sizeof **out);
    *nout = nm - skip + 1;
    return MT_OK;
}

static int n_one(struct openai *o)
{
    int v;

    pthread_mutex_lock(&o->mu);
    v = o->n_one;
    pthread_mutex_unlock(&o->mu);
    return v;
}

/* Steps the endpoint down one format after a refusal of 'sent'; returns 1
 * when the call should be made again. Concurrent calls may see the same
 * refusal: only the first steps down. */
static int rf_fall_back(struct openai *o, enum mt_response_format sent,
                        const struct mt_error *e)
{
    int again = 0;

    if (!refuses_format(e))
        return 0;
    pthread_mutex_lock(&o->mu);
    if (o->rf_auto && o->rf == sent && sent != MT_RF_NONE) {
        /* LM Studio answers 400 to json_object (its profile's dialect is
         * json_schema only): a server known as LM Studio skips that step */
        o->rf = sent == MT_RF_JSON_SCHEMA && o->kind != MTX_SK_LMSTUDIO
                    ? MT_RF_JSON_OBJECT
                    : MT_RF_NONE;
        mt_log(MT_LOG_WARN,
               "%s refused response_format %s (%s); sending %s from now on "
               "(--response-format)",
               o->url, rf_names[sent], e->msg, rf_names[o->rf]);
    }
    again = o->rf_auto && o->rf != sent;
    pthread_mutex_unlock(&o->mu);
    return again;
}

/* ==== Context and token counts ==== */

/* llama-server's /props is a few KiB (its chat template the most of it):
 * a bigger page is a server flooding every path. */
#define PROPS_MAX_REPLY ((size_t)1 << 20)

/* llama-server's GET /props: default_generation_settings.n_ctx, the
 * context of one slot (-c divided by --parallel). 0 when the server has
 * no such page (vLLM, OpenAI) or does not answer. */
static uint32_t ask_props(struct openai *o)
{
    struct mt_error e = {MT_OK, ""};
    json_t *r = NULL;
    json_int_t v;

    if (mtx_http_get_json(o->http, "../props", PROPS_MAX_REPLY, &r, &e) !=
        MT_OK)
        return 0;
    v = json_integer_value(json_object_get(
        json_object_get(r, "default_generation_settings"), "n_ctx"));
    /* only llama-server has this page */
    if (json_is_object(json_object_get(r, "default_generation_settings")))
        set_kind(o, MTX_SK_LLAMA, "GET /props");
    json_decref(r);
    if (v > 0 && v <= (json_int_t)UINT32_MAX)
        mt_log(MT_LOG_INFO, "%s: the server's context is %ld tokens a slot",
               o->url, (long)v);
    return v > 0 && v <= (json_int_t)UINT32_MAX ? (uint32_t)v : 0;
}

/* A /v1/models list: OpenAI's and OpenRouter's run to a few hundred
 * entries. */
#define MODELS_MAX_REPLY ((size_t)4 << 20)

/* GET /v1/models, for a server /props did not tell: its kind from the
 * entries' "owned_by" and vLLM's context, max_model_len. 0 when it has no
 * such list or says no context. */
static uint32_t ask_models(struct openai *o)
{
    struct mt_error e = {MT_OK, ""};
    enum mtx_server_kind k;
    json_t *r = NULL;
    uint32_t ctx = 0;
    int known;

    pthread_mutex_lock(&o->mu);
    known = o->kind != MTX_SK_UNKNOWN && o->kind != MTX_SK_GENERIC;
    pthread_mutex_unlock(&o->mu);
    if (known ||
        mtx_http_get_json(o->http, "models", MODELS_MAX_REPLY, &r, &e) != MT_OK)
        return 0;
    k = mtx_server_kind_of_models(r, o->model, &ctx);
    json_decref(r);
    set_kind(o, k, "GET /v1/models");
    if (ctx)
        mt_log(MT_LOG_INFO,
               "%s: the server's context is %u tokens (its "
               "/v1/models max_model_len)",
               o->url, ctx);
    return ctx;
}

/* Asks once what the server is and its context: llama-server's /props,
 * else /v1/models, else its Server header so far. */
static uint32_t probe(struct openai *o)
{
    uint32_t c = ask_props(o);

    if (!c)
        c = ask_models(o);
    set_kind(o, header_kind(o), "its Server header");
    return c;
}

static uint32_t openai_n_ctx(void *self)
{
    struct openai *o = self;
    uint32_t c;
    int ask;

    pthread_mutex_lock(&o->props_mu); /* others wait for the answer */
    pthread_mutex_lock(&o->mu);
    ask = !o->props_asked;
    o->props_asked = 1;
    pthread_mutex_unlock(&o->mu);
    c = ask ? probe(o) : 0;
    pthread_mutex_unlock(&o->props_mu);
    pthread_mutex_lock(&o->mu);
    if (c && (!o->ctx_server || c < o->ctx_server))
        o->ctx_server = c;
    c = o->ctx_server;
    if (o->ctx_opt && (!c || o->ctx_opt < c))
        c = o->ctx_opt;
    pthread_mutex_unlock(&o->mu);
    return c;
}

/* The /tokenize reply's bytes: at most one token a byte of content, each
 * id at most 10 digits and a comma, plus the object around them. */
static size_t tokenize_budget(size_t n)
{
    return n > ((size_t)64 << 20) ? 0 : 12 * n + 65536;
}

/* POST /tokenize {"content": s} (llama-server): the tokens' count, or
 * -1 when the server cannot (the first such failure ends the tries). */
static long ask_tokenize(struct openai *o, const char *s, size_t n)
{
    struct mt_error e = {MT_OK, ""};
    json_t *b = json_pack("{s:s%}", "content", s, n);
    json_t *r = NULL;
    json_t *t;
    long c = -1;

    if (b &&
        mtx_http_post_json(o->http, "../tokenize", b, tokenize_budget(n), &r,
                           NULL, &e) == MT_OK &&
        json_is_array(t = json_object_get(r, "tokens")))
        c = (long)json_array_size(t);
    json_decref(b);
    json_decref(r);
    return c;
}

static uint32_t openai_count(void *self, const char *s, size_t n,
                             enum mt_token_count *how)
{
    struct openai *o = self;
    double scale;
    int tk;
    long c;

    pthread_mutex_lock(&o->mu);
    tk = o->tokenize;
    scale = o->scale;
    pthread_mutex_unlock(&o->mu);
    c = tk >= 0 ? ask_tokenize(o, s, n) : -1;
    if (tk == 0) {
        pthread_mutex_lock(&o->mu);
        o->tokenize = c >= 0 ? 1 : -1;
        pthread_mutex_unlock(&o->mu);
    }
    *how = c >= 0 ? MT_TOKENS_SERVER : MT_TOKENS_ESTIMATE;
    if (c >= 0)
        return c > (long)UINT32_MAX ? UINT32_MAX : (uint32_t)c;
    return (uint32_t)((double)mtx_llm_estimate_tokens(s, n) * scale + 0.999);
}

/* After a context-length refusal: keeps the context the message names
 * and, when it also names the prompt's tokens, how much higher than the
 * estimate the server counted, so later estimates err high enough. */
static void learn_ctx(struct openai *o, const struct mt_llm_message *m,
                      size_t nm, const struct mt_error *e)
{
    uint32_t ctx;
    uint32_t prompt;
    size_t est = 0;
    size_t i;

    if (e->status != MT_ELIMIT ||
        !mtx_llm_parse_ctx_error(e->msg, &ctx, &prompt))
        return;
    for (i = 0; i < nm; i++)
        est += mtx_llm_estimate_tokens(m[i].content, strlen(m[i].content));
    pthread_mutex_lock(&o->mu);
    if (!o->ctx_server || ctx < o->ctx_server)
        o->ctx_server = ctx;
    if (est && prompt && (double)prompt / (double)est > o->scale)
        o->scale = (double)prompt / (double)est;
    pthread_mutex_unlock(&o->mu);
    mt_log(MT_LOG_WARN,
           "%s refused a prompt as longer than its %u-token context; "
           "prompts are fitted to it from now on (--ctx sets it at start)",
           o->url, ctx);
}

/* ==== Request ==== */

/* s made what strict servers accept (OpenAI's strict json_schema): every
 * object closed ("additionalProperties": false) with all of its
 * properties required; without minLength / maxLength when 'nolen'. The
 * agents' schemas already require every field they name. */
static void strict_schema(json_t *s, int nolen)
{
    json_t *props = json_object_get(s, "properties");
    void *it;
    size_t i;

    if (json_is_object(props)) {
        json_t *req = json_array();
        for (it = json_object_iter(props); it;
             it = json_object_iter_next(props, it))
            json_array_append_new(req, json_string(json_object_iter_key(it)));
        json_object_set_new(s, "required", req);
        json_object_set_new(s, "additionalProperties", json_false());
    }
    if (nolen && json_is_object(s)) {
        json_object_del(s, "maxLength");
        json_object_del(s, "minLength");
    }
    for (it = json_object_iter(s); it; it = json_object_iter_next(s, it))
        strict_schema(json_object_iter_value(it), nolen);
    for (i = 0; i < json_array_size(s); i++)
        strict_schema(json_array_get(s, i), nolen);
}

/* The reply's format as the endpoint takes it now: llama.cpp's raw GBNF
 * "grammar", or response_format json_schema (strict) or json_object;
 * nothing at MT_RF_NONE, where the prompt asks for the JSON and the
 * caller validates it. Never vLLM's removed guided_json. */
static int add_format(json_t *b, const struct mt_chat_params *p,
                      enum mt_response_format f, unsigned lim,
                      struct mt_error *err)
{
    json_error_t je;
    json_t *schema;

    if (f == MT_RF_NONE)
        return 0;
    if (p->grammar) /* llama.cpp's server accepts raw GBNF */
        return json_object_set_new(b, "grammar", json_string(p->grammar));
    if (!p->json_schema)
        return 0;
    if (f == MT_RF_JSON_OBJECT)
        return json_object_set_new(b, "response_format",
                                   json_pack("{s:s}", "type", "json_object"));
    schema = json_loads(p->json_schema, 0, &je);
    if (!schema) {
        mt_fail(err, MT_EINVAL, "chat: json_schema is not JSON: %s", je.text);
        return -1;
    }
    strict_schema(schema, (lim & LIM_NO_STRLEN) != 0);
    return json_object_set_new(
        b, "response_format",
        json_pack("{s:s,s:{s:s,s:o,s:b}}", "type", "json_schema", "json_schema",
                  "name", "response", "schema", schema, "strict", 1));
}

static int add_stops(json_t *b, const struct mt_chat_params *p)
{
    json_t *a;
    size_t i;

    if (p->n_stop == 0)
        return 0;
    a = json_array();
    if (!a || json_object_set_new(b, "stop", a) != 0)
        return -1;
    for (i = 0; i < p->n_stop; i++)
        if (json_array_append_new(a, json_string(p->stop[i])) != 0)
            return -1;
    return 0;
}

/* A streamed request also asks for the usage in the last event. */
static int add_stream(json_t *b, const struct mt_chat_params *p)
{
    if (!p->on_token)
        return 0;
    return json_object_set_new(b, "stream", json_true()) ||
           json_object_set_new(b, "stream_options",
                               json_pack("{s:b}", "include_usage", 1));
}

/* temperature, top_p and the token limit, as the endpoint takes them. */
static int add_limits(json_t *b, const struct mt_chat_params *p, unsigned lim)
{
    json_int_t mt = (json_int_t)p->max_tokens +
                    (lim & (LIM_MCT | LIM_REASONS) ? REASONING_TOKENS : 0);

    if (!(lim & LIM_NO_TEMP) &&
        json_object_set_new(b, "temperature",
                            json_real((double)p->temperature)))
        return -1;
    if (!(lim & LIM_NO_TOP_P) &&
        json_object_set_new(b, "top_p", json_real((double)p->top_p)))
        return -1;
    if (lim & LIM_MCT)
        return json_object_set_new(b, "max_completion_tokens",
                                   json_integer(mt));
    return json_object_set_new(b, "max_tokens", json_integer(mt));
}

static enum mt_status make_body(const struct openai *o,
                                const struct mt_llm_message *m, size_t nm,
                                const struct mt_chat_params *p, uint32_t n,
                                uint64_t seed, enum mt_response_format f,
                                unsigned lim, json_t **out,
                                struct mt_error *err)
{
    json_t *b = json_pack("{s:s,s:o,s:I,s:I}", "model", o->model, "messages",
                          mtx_chat_messages_json(m, nm), "n", (json_int_t)n,
                          "seed", (json_int_t)(seed & 0x7fffffffffffffffULL));
    struct mt_error e = {MT_OK, ""};

    if (!b || add_limits(b, p, lim) != 0 || add_stops(b, p) != 0 ||
        add_stream(b, p) != 0 || add_format(b, p, f, lim, &e) != 0) {
        json_decref(b);
        if (e.status == MT_OK)
            return mt_fail(err, MT_ENOMEM, "chat: out of memory");
        return mt_fail(err, e.status, "%s", e.msg);
    }
    *out = b;
    return MT_OK;
}

/* ==== Reply ==== */

static enum mt_status bad_field(const struct openai *o, struct mt_error *err,
                                const char *field)
{
    return mt_fail(err, MT_EPARSE,
                   "%s: malformed reply: missing or invalid field '%s'", o->url,
                   field);
}

/* The reasoning a server returns beside the answer: vLLM's "reasoning"
 * (it renamed "reasoning_content", then removed the old name), llama-server's
 * and DeepSeek's "reasoning_content". NULL when there is none. */
static json_t *reasoning_of(const json_t *msg)
{
    json_t *t = json_object_get(msg, "reasoning");

    if (!json_is_string(t))
        t = json_object_get(msg, "reasoning_content");
    return json_is_string(t) && json_string_length(t) > 0 ? t : NULL;
}

/* A completion with reasoning and no answer: the model spent its
 * max_tokens thinking (finish_reason "length") or answered nothing. */
static enum mt_status no_answer(const struct openai *o,
                                const struct mt_chat_params *p,
                                const json_t *choice, size_t i,
                                struct mt_error *err)
{
    const char *fr =
        json_string_value(json_object_get(choice, "finish_reason"));

    if (fr && strcmp(fr, "length") == 0)
        return mt_fail(err, MT_ELIMIT,
                       "%s: choices[%zu] spent all of max_tokens %u on "
                       "reasoning and gave no answer: raise --max-tokens "
                       "or lower the model's reasoning effort",
                       o->url, i, (unsigned)p->max_tokens);
    return MT_OK;
}

/* Completion i of the reply into r->texts[*got] (and its reasoning). */
static enum mt_status take_choice(const struct openai *o,
                                  const struct mt_chat_params *p,
                                  const json_t *choice, size_t i,
                                  struct mt_chat_result *r, uint32_t *got,
                                  struct mt_error *err)
{
    json_t *msg = json_object_get(choice, "message");
    json_t *c = json_object_get(msg, "content");
    json_t *why = reasoning_of(msg);
    const char *t = json_string_value(c);
    char f[64];

    if (!t && !(why && (!c || json_is_null(c)))) {
        snprintf(f, sizeof f, "choices[%zu].message.content", i);
        return bad_field(o, err, f);
    }
    if (why && (!t || !*t) && no_answer(o, p, choice, i, err) != MT_OK)
        return err->status;
    if (t && strlen(t) >= text_budget(p))
        return mt_fail(err, MT_ELIMIT,
                       "%s: choices[%zu] passed %zu bytes, the budget "
                       "for max_tokens %u: the server does not honour "
                       "max_tokens",
                       o->url, i, text_budget(p), (unsigned)p->max_tokens);
    r->texts[*got] = mt_strdup(t ? t : "");
    if (!r->texts[*got] ||
        (why && mtx_chat_reasoning_add(r, *got, json_string_value(why),
                                       json_string_length(why)) != MT_OK))
        return mt_fail(err, MT_ENOMEM, "chat: out of memory");
    (*got)++;
    return MT_OK;
}

static enum mt_status take_choices(const struct openai *o,
                                   const struct mt_chat_params *p,
                                   json_t *reply, struct mt_chat_result *r,
                                   uint32_t *got, struct mt_error *err)
{
    json_t *ch = json_object_get(reply, "choices");
    size_t i;
    enum mt_status st = MT_OK;

    if (!json_is_array(ch) || json_array_size(ch) == 0)
        return bad_field(o, err, "choices");
    for (i = 0; st == MT_OK && i < json_array_size(ch) && *got < r->n; i++)
        st = take_choice(o, p, json_array_get(ch, i), i, r, got, err);
    return st;
}

/* Adds the reply's usage to r; *had is set when there was one. */
static enum mt_status take_usage(const struct openai *o, const json_t *reply,
                                 struct mt_chat_result *r, int *had,
                                 struct mt_error *err)
{
    json_t *u = json_object_get(reply, "usage");
    json_t *pt = json_object_get(u, "prompt_tokens");
    json_t *ct = json_object_get(u, "completion_tokens");

    if (!u || json_is_null(u))
        return MT_OK; /* optional in the protocol */
    if (!json_is_object(u) || (pt && !json_is_integer(pt)) ||
        (ct && !json_is_integer(ct)))
        return bad_field(o, err, "usage");
    r->prompt_tokens += (uint64_t)json_integer_value(pt);
    r->completion_tokens += (uint64_t)json_integer_value(ct);
    *had = 1;
    return MT_OK;
}

/* Counts for a round that reported no usage: bytes / 4 of the prompt
 * (once per request) and of the completions it produced. */
static void estimate_usage(const struct mt_llm_message *m, size_t nm,
                           struct mt_chat_result *r, uint32_t from, uint32_t to)
{
    size_t bytes = 0;
    size_t i;

    for (i = 0; i < nm; i++)
        bytes += strlen(m[i].content);
    r->prompt_tokens +=
        (bytes + BYTES_PER_TOKEN_ESTIMATE - 1) / BYTES_PER_TOKEN_ESTIMATE;
    for (bytes = 0, i = from; i < to; i++)
        bytes += strlen(r->texts[i]);
    r->completion_tokens +=
        (bytes + BYTES_PER_TOKEN_ESTIMATE - 1) / BYTES_PER_TOKEN_ESTIMATE;
    r->tokens_estimated = 1;
}

static size_t prompt_bytes(const struct mt_llm_message *m, size_t nm)
{
    size_t bytes = 0;
    size_t i;

    for (i = 0; i < nm; i++)
        bytes += strlen(m[i].content);
    return bytes;
}

/* Fails a call whose server reported reading 'read' prompt tokens of a
 * prompt that cannot be so few: it cut the prompt without saying so. */
static enum mt_status check_truncation(const struct openai *o,
                                       const struct mt_llm_message *m,
                                       size_t nm, uint64_t read,
                                       struct mt_error *err)
{
    size_t bytes = prompt_bytes(m, nm);
    size_t least = 0;
    size_t i;

    for (i = 0; i < nm; i++)
        least += mtx_llm_estimate_tokens(m[i].content, strlen(m[i].content));
    least = LEAST_OF_ESTIMATE(least);

    if (bytes < TRUNCATION_MIN_BYTES || read >= least)
        return MT_OK;
    return mt_fail(err, MT_ELIMIT,
                   "%s: the server read %llu prompt tokens of a %zu-byte "
                   "prompt (at least %zu tokens): it cut the prompt without "
                   "saying so, as Ollama's /v1 does at its default context "
                   "(2,048 or 4,096 tokens) whatever was asked; raise the "
                   "server's context (Ollama: OLLAMA_CONTEXT_LENGTH, or "
                   "PARAMETER num_ctx in a Modelfile) or shorten the input",
                   o->url, (unsigned long long)read, bytes, least);
}

/* ==== Streaming ==== */

/* One streamed completion being gathered. */
struct stream {
    struct openai *o;
    const struct mt_chat_params *p;
    uint32_t i; /* completion index passed to on_token */
    struct mt_buf text;
    struct mt_buf why;           /* delta.reasoning(_content) pieces */
    struct mt_chat_result usage; /* only its token counts are used */
    int had_usage;
    size_t events; /* in this attempt */
    size_t extra;  /* reasoning tokens allowed beyond max_tokens */
};

/* A streamed piece of reasoning (delta.reasoning, or
 * delta.reasoning_content): kept apart, never passed to on_token. */
static enum mt_status take_why(struct stream *s, const json_t *d,
                               struct mt_error *err)
{
    json_t *w = reasoning_of(d);
    enum mt_status st;

    if (!w)
        return MT_OK;
    st = mtx_buf_append(&s->why, json_string_value(w), json_string_length(w));
    if (st == MT_ELIMIT)
        return mt_fail(err, st,
                       "the streamed reasoning passed %zu bytes, the "
                       "budget for max_tokens %u: the server does not "
                       "honour max_tokens",
                       s->why.max - 1, (unsigned)s->p->max_tokens);
    return st == MT_OK ? MT_OK : mt_fail(err, MT_ENOMEM, "chat: out of memory");
}

/* {"choices":[{"delta":{"content":"..."}}], "usage":...}: with usage
 * reporting on, the last chunk has "choices": [] and only the usage
 * (OpenAI's include_usage); each delta may carry reasoning instead. */
static enum mt_status on_event(void *ctx, const json_t *ev,
                               struct mt_error *err)
{
    struct stream *s = ctx;
    json_t *ch = json_object_get(ev, "choices");
    json_t *d = json_object_get(json_array_get(ch, 0), "delta");
    json_t *c = json_object_get(d, "content");
    const char *t = json_string_value(c);
    size_t n = json_string_length(c);
    enum mt_status st;

    if (ch && !json_is_array(ch))
        return bad_field(s->o, err, "choices");
    detect_reply(s->o, ev);
    if (c && !json_is_null(c) && !t)
        return bad_field(s->o, err, "choices[0].delta.content");
    if (++s->events >
        2 * ((size_t)s->p->max_tokens + s->extra) + STREAM_EVENT_MARGIN)
        return mt_fail(err, MT_ELIMIT,
                       "the stream passed %zu events for max_tokens %u: "
                       "the server does not honour max_tokens",
                       s->events - 1, (unsigned)s->p->max_tokens);
    st = take_usage(s->o, ev, &s->usage, &s->had_usage, err);
    if (st == MT_OK)
        st = take_why(s, d, err);
    if (st != MT_OK || !t || n == 0)
        return st;
    st = mtx_buf_append(&s->text, t, n);
    if (st == MT_ELIMIT)
        return mt_fail(err, st,
                       "the streamed completion passed %zu bytes, the "
                       "budget for max_tokens %u: the server does not "
                       "honour max_tokens",
                       s->text.max - 1, (unsigned)s->p->max_tokens);
    if (st != MT_OK)
        return mt_fail(err, MT_ENOMEM, "chat: out of memory");
    if (s->p->on_token(s->p->on_token_ctx, s->i, t, n) != 0)
        return mt_fail(err, MT_ECANCELED, "chat: stopped by the caller");
    return MT_OK;
}

static void on_restart(void *ctx)
{
    struct stream *s = ctx;

    mtx_buf_reset(&s->text);
    mtx_buf_reset(&s->why);
    s->events = 0;
    s->usage.prompt_tokens = s->usage.completion_tokens = 0;
    s->had_usage = 0;
    s->p->on_token(s->p->on_token_ctx, s->i, NULL, 0);
}

/* The gathered stream into r->texts[*got] and its reasoning. */
static enum mt_status stream_take(struct stream *s, struct mt_chat_result *r,
                                  uint32_t *got, int *had, struct mt_error *err)
{
    if (mtx_buf_reserve(&s->text, 1) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "chat: out of memory");
    if (s->why.len > 0 &&
        mtx_chat_reasoning_add(r, *got, s->why.data, s->why.len) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "chat: out of memory");
    r->texts[(*got)++] = mtx_buf_take(&s->text);
    r->prompt_tokens += s->usage.prompt_tokens;
    r->completion_tokens += s->usage.completion_tokens;
    *had = s->had_usage;
    return MT_OK;
}

/* One streamed request for completion r->texts[*got]. */
static enum mt_status post_stream(struct openai *o, const json_t *b,
                                  const struct mt_chat_params *p,
                                  struct mt_chat_result *r, uint32_t *got,
                                  int *had, struct mt_error *err)
{
    struct stream s = {o,
                       p,
                       *got,
                       MT_BUF_INIT(text_budget(p) + 1),
                       MT_BUF_INIT(text_budget(p) + 1),
                       {0},
                       0,
                       0,
                       lims_now(o) & (LIM_MCT | LIM_REASONS) ? REASONING_TOKENS
                                                             : 0};
    struct mt_http_sse cb = {on_event, on_restart, &s};
    enum mt_status st;

    st = mtx_http_post_sse(o->http, o->ep, b, reply_budget(p, 1), &cb,
                           &r->endpoint, err);

    if (st == MT_OK)
        st = stream_take(&s, r, got, had, err);
    mtx_buf_free(&s.text);
    mtx_buf_free(&s.why);
    return st;
}

/* After a reply whose completions reasoned, or a call that ran out of
 * tokens reasoning, later requests allow REASONING_TOKENS more; returns 1
 * when the call should be sent again (the latter, once). */
static int reasons_learn(struct openai *o, unsigned sent, enum mt_status st,
                         const struct mt_chat_result *r, uint32_t from,
                         uint32_t to, const struct mt_error *e)
{
    int saw = st == MT_ELIMIT && e && strstr(e->msg, "on reasoning and gave");
    uint32_t i;
    int first;

    for (i = from; st == MT_OK && i < to && !saw; i++)
        saw = (r->reasoning && r->reasoning[i]) ||
              strstr(r->texts[i], "</think>") != NULL;
    if (!saw || (sent & LIM_REASONS))
        return 0;
    pthread_mutex_lock(&o->mu);
    first = !(o->lim & LIM_REASONS);
    o->lim |= LIM_REASONS;
    pthread_mutex_unlock(&o->mu);
    if (first)
        mt_log(MT_LOG_WARN,
               "%s: the model reasons before it answers; allowing %d more "
               "tokens a request for its reasoning from now on",
               o->url, REASONING_TOKENS);
    return st == MT_ELIMIT;
}

/* ==== Calls ==== */

static enum mt_status post_plain(struct openai *o, const json_t *b,
                                 const struct mt_chat_params *p, uint32_t want,
                                 struct mt_chat_result *r, uint32_t *got,
                                 int *had, struct mt_error *err)
{
    json_t *reply = NULL;
    enum mt_status st = mtx_http_post_json(
        o->http, o->ep, b, reply_budget(p, want), &reply, &r->endpoint, err);

    if (st == MT_OK)
        detect_reply(o, reply);
    if (st == MT_OK)
        st = take_choices(o, p, reply, r, got, err);
    if (st == MT_OK)
        st = take_usage(o, reply, r, had, err);
    json_decref(reply);
    return st;
}

/* One request of 'want' completions (1 when streaming), sent again in a
 * simpler response format when auto mode meets a refusal. */
static enum mt_status round_as_is(struct openai *o,
                                  const struct mt_llm_message *m, size_t nm,
                                  const struct mt_chat_params *p, uint64_t seed,
                                  struct mt_chat_result *r, uint32_t *got,
                                  struct mt_error *err)
{
    uint32_t from = *got;
    uint64_t read = r->prompt_tokens;
    enum mt_status st;
    int had = 0;

    for (;;) {
        enum mt_response_format f = rf_now(o);
        unsigned lim = lims_now(o);
        uint32_t want = p->on_token || n_one(o) ? 1 : r->n - *got;
        json_t *b = NULL;
        st = make_body(o, m, nm, p, want, seed, f, lim, &b, err);
        if (st != MT_OK)
            return st;
        if (p->on_token)
            st = post_stream(o, b, p, r, got, &had, err);
        else
            st = post_plain(o, b, p, want, r, got, &had, err);
        json_decref(b);
        if (st == MT_ELIMIT && err)
            learn_ctx(o, m, nm, err);
        if (st != MT_OK)
            detect_error(o, err);
        if (reasons_learn(o, lim, st, r, from, *got, err))
            continue;
        if (st == MT_OK ||
            (!n_fall_back(o, want, err) && !lim_fall_back(o, lim, err) &&
             (!p->json_schema || !rf_fall_back(o, f, err))))
            break;
    }
    if (st == MT_OK && had)
        st = check_truncation(o, m, nm, r->prompt_tokens - read, err);
    if (st == MT_OK && !had)
        estimate_usage(m, nm, r, from, *got);
    return st;
}

/* One round, with the system prompt folded into the first user turn when
 * the endpoint's template has no system role (learnt from its refusal,
 * then the round is sent again folded). */
static enum mt_status one_round(struct openai *o,
                                const struct mt_llm_message *m, size_t nm,
                                const struct mt_chat_params *p, uint64_t seed,
                                struct mt_chat_result *r, uint32_t *got,
                                struct mt_error *err)
{
    struct mt_llm_message *fm = NULL;
    char *joined = NULL;
    size_t fn = 0;
    enum mt_status st;

    if (!fold_sys(o) || !has_system(m, nm)) {
        st = round_as_is(o, m, nm, p, seed, r, got, err);
        if (st == MT_OK || !sys_fall_back(o, m, nm, err))
            return st;
    }
    if (fold_messages(m, nm, &fm, &fn, &joined) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "chat: out of memory");
    st = round_as_is(o, fm, fn, p, seed, r, got, err);
    mt_free(fm);
    mt_free(joined);
    return st;
}

/* Servers that ignore n (older llama.cpp) return one choice: the rest are
 * requested again with the remaining count and a shifted seed; a server
 * that refuses n > 1 (llama-server now) is asked one at a time. A
 * streamed call asks for one completion a request. */
static enum mt_status openai_chat(void *self, const struct mt_llm_message *m,
                                  size_t nm, const struct mt_chat_params *p,
                                  struct mt_chat_result *r,
                                  struct mt_error *err)
{
    struct openai *o = self;
    struct mt_error mine = {MT_OK, ""};
    uint32_t got = 0;
    uint64_t round;
    enum mt_status st = mtx_chat_result_init(r, p->n);

    if (!err) /* the fallbacks read the refusal's message */
        err = &mine;

    if (st != MT_OK)
        return mt_fail(err, st, "chat: out of memory");
    for (round = 0; st == MT_OK && got < p->n; round++)
        st = one_round(o, m, nm, p, p->seed + round, r, &got, err);
    return st;
}

static const struct mtx_model_ops openai_ops = {
    .name = "openai",
    .free = openai_free,
    .model = openai_model,
    .profile = openai_profile,
    .chat = openai_chat,
    .n_ctx = openai_n_ctx,
    .count = openai_count,
};

/* Opens the client for base 'url' (endpoint 'ep' under it), with the key
 * from 'key_env' (NULL: MEDTRUST_API_KEY or OPENAI_API_KEY). */
static enum mt_status chat_open(const char *url, const char *ep,
                                const char *model, const char *key_env,
                                const struct mt_llm_params *p,
                                struct mt_llm **out, struct mt_error *err)
{
    struct mt_http_params hp = {
        p->timeout_s,     p->max_retries,     p->backoff_base_s,
        p->backoff_max_s, p->max_concurrency, "--llm/MEDTRUST_LLM",
        key_env,          key_env != NULL};
    struct openai *o = mt_calloc(1, sizeof *o);
    enum mt_status st;

    if (!o)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    pthread_mutex_init(&o->mu, NULL);
    pthread_mutex_init(&o->props_mu, NULL);
    o->rf_auto = p->response_format == MT_RF_AUTO;
    o->rf = o->rf_auto ? MT_RF_JSON_SCHEMA : p->response_format;
    snprintf(o->ep, sizeof o->ep, "%s", ep);
    o->ctx_opt = p->n_ctx;
    o->scale = 1.0;
    o->api_key = key_env != NULL;
    o->kind = key_env ? MTX_SK_AZURE : MTX_SK_UNKNOWN;
    o->model = mt_strdup(model);
    if (!o->model) {
        openai_free(o);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    apply_preset(o); /* Azure's is known from its spec */
    st = mtx_http_new(url, &hp, &o->http, err);
    if (st != MT_OK) {
        openai_free(o);
        return st;
    }
    mtx_http_url(o->http, o->ep, o->url, sizeof o->url);
    return MTX_MODEL_TAKE(out, &openai_ops, o, err);
}

enum mt_status mtx_llm_openai_open(const char *url, const char *model,
                                   const struct mt_llm_params *p,
                                   struct mt_llm **out, struct mt_error *err)
{
    return chat_open(url, "chat/completions", model, NULL, p, out, err);
}

/* ==== Azure OpenAI ==== */

#define AZURE_API_VERSION "2024-10-21" /* the latest GA data-plane API */
#define AZURE_KEY_ENV "AZURE_OPENAI_API_KEY"

static int ends_with(const char *s, size_t n, const char *tail)
{
    size_t k = strlen(tail);

    return n >= k && strncmp(s + n - k, tail, k) == 0;
}

enum mt_status mtx_llm_azure_open(const char *url, const char *deployment,
                                  const struct mt_llm_params *p,
                                  struct mt_llm **out, struct mt_error *err)
{
    const char *q = strstr(url, "?api-version=");
    const char *env = getenv("AZURE_OPENAI_API_VERSION");
    size_t n = q ? (size_t)(q - url) : strlen(url);
    char base[1024];
    char ep[160];

    while (n > 0 && url[n - 1] == '/')
        n--;
    if (ends_with(url, n, "/openai/v1")) /* the v1 API: no api-version */
        return chat_open(url, "chat/completions", deployment, AZURE_KEY_ENV, p,
                         out, err);
    if (n + strlen(deployment) + 32 > sizeof base || strchr(deployment, '/') ||
        strchr(deployment, '?'))
        return mt_fail(err, MT_EINVAL,
                       "'azure:%s#%s' needs the form azure:https://RESOURCE."
                       "openai.azure.com#DEPLOYMENT (or .../openai/v1#"
                       "DEPLOYMENT): fix --llm/MEDTRUST_LLM",
                       url, deployment);
    snprintf(base, sizeof base, "%.*s/openai/deployments/%s", (int)n, url,
             deployment);
    snprintf(ep, sizeof ep, "chat/completions?api-version=%.100s",
             q             ? q + 13
             : env && *env ? env
                           : AZURE_API_VERSION);
    return chat_open(base, ep, deployment, AZURE_KEY_ENV, p, out, err);
}
