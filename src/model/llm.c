/* LLM front end: spec parsing and per-role routing, parameter defaults and
 * checks, timing, and the optional call cache around each backend call. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/llm.h"
#include "model/spec.h"

#define CHAT_MAX_N 64
#define CHAT_MAX_STOP 8

/* ==== Defaults ==== */

void mt_llm_default_params(struct mt_llm_params *p)
{
    const char *t = getenv("MEDTRUST_LLM_TIMEOUT");
    const char *r = getenv("MEDTRUST_LLM_RETRIES");
    double v = t ? strtod(t, NULL) : 0;
    char *end = NULL;
    long n = r && *r ? strtol(r, &end, 10) : -1;

    memset(p, 0, sizeof *p);
    p->timeout_s = v > 0 ? v : MT_LLM_DEFAULT_TIMEOUT_S;
    p->max_retries = n >= 0 && n <= 10 && end && *end == '\0' ? (uint32_t)n : 4;
    p->backoff_base_s = 0.5;
    p->backoff_max_s = 30;
    p->max_concurrency = 4;
}

void mt_chat_default_params(struct mt_chat_params *p)
{
    memset(p, 0, sizeof *p);
    p->temperature = 0;
    p->top_p = 1;
    p->max_tokens = 512;
    p->n = 1;
    p->seed = 42;
}

/* ==== Results ==== */

enum mt_status mtx_chat_result_init(struct mt_chat_result *r, uint32_t n)
{
    memset(r, 0, sizeof *r);
    r->texts = mt_calloc(n ? n : 1, sizeof *r->texts);
    if (!r->texts)
        return MT_ENOMEM;
    r->n = n;
    return MT_OK;
}

void mt_chat_result_free(struct mt_chat_result *r)
{
    uint32_t i;

    if (!r)
        return;
    for (i = 0; r->texts && i < r->n; i++)
        mt_free(r->texts[i]);
    for (i = 0; r->reasoning && i < r->n; i++)
        mt_free(r->reasoning[i]);
    mt_free(r->texts);
    mt_free(r->reasoning);
    memset(r, 0, sizeof *r);
}

enum mt_status mtx_chat_reasoning_add(struct mt_chat_result *r, uint32_t i,
                                      const char *t, size_t n)
{
    char *old;
    size_t a;
    char *j;

    if (!r->reasoning)
        r->reasoning = mt_calloc(r->n ? r->n : 1, sizeof *r->reasoning);
    if (!r->reasoning)
        return MT_ENOMEM;
    old = r->reasoning[i];
    a = old ? strlen(old) : 0;
    j = mt_malloc(a + (old ? 1 : 0) + n + 1);
    if (!j)
        return MT_ENOMEM;
    if (old) {
        memcpy(j, old, a);
        j[a++] = '\n';
    }
    memcpy(j + a, t, n);
    j[a + n] = '\0';
    mt_free(old);
    r->reasoning[i] = j;
    return MT_OK;
}

/* Splits completion i at its reasoning's end (see mtx_chat_split_think). */
static enum mt_status split_one(struct mt_chat_result *r, uint32_t i)
{
    const char *t = r->texts[i];
    const char *h = t + strspn(t, " \t\r\n");
    int opened = strncmp(h, "<think>", 7) == 0;
    const char *from = opened ? h + 7 : t;
    const char *close = strstr(from, "</think>");
    const char *ans;
    char *keep;

    if (!close && !opened)
        return MT_OK;
    ans = close ? close + 8 : from + strlen(from);
    if (mtx_chat_reasoning_add(r, i, from,
                               (size_t)((close ? close : ans) - from)) != MT_OK)
        return MT_ENOMEM;
    ans += strspn(ans, " \t\r\n");
    keep = mt_strdup(ans);
    if (!keep)
        return MT_ENOMEM;
    mt_free(r->texts[i]);
    r->texts[i] = keep;
    return MT_OK;
}

enum mt_status mtx_chat_split_think(struct mt_chat_result *r)
{
    uint32_t i;

    for (i = 0; i < r->n; i++)
        if (r->texts[i] && split_one(r, i) != MT_OK)
            return MT_ENOMEM;
    return MT_OK;
}

/* ==== Opening and routing ==== */

enum mt_status mt_llm_open(const char *spec, const struct mt_llm_params *p,
                           struct mt_llm **out, struct mt_error *err)
{
    static const char *const kinds[] = {"openai", "gguf", "azure"};
    struct mt_llm_params d;
    struct mtx_spec ms;
    enum mt_status st;

    if (!p) {
        mt_llm_default_params(&d);
        p = &d;
    }
    /* the CLI's bounds for every caller (a library's, Python's) */
    st = mt_param_check(&mt_llm_param_table, p, 0, err);
    if (st != MT_OK)
        return st;
    if (!spec || !*spec)
        return mt_fail(err, MT_EINVAL,
                       "no LLM configured: set --llm or "
                       "MEDTRUST_LLM (openai:BASE_URL#MODEL or gguf:PATH)");
    st = mtx_spec_parse(spec, kinds, 3, "--llm/MEDTRUST_LLM", &ms, err);
    if (st == MT_ENOTFOUND)
        return mt_fail(err, MT_EINVAL,
                       "unknown LLM spec '%s': use openai:BASE_URL#MODEL, "
                       "azure:BASE_URL#DEPLOYMENT or gguf:PATH in --llm or "
                       "MEDTRUST_LLM",
                       spec);
    if (st == MT_OK)
        st = ms.kind == 0   ? mtx_llm_openai_open(ms.url, ms.model, p, out, err)
             : ms.kind == 2 ? mtx_llm_azure_open(ms.url, ms.model, p, out, err)
                            : mtx_llm_llama_open(ms.arg, p, out, err);
    mtx_spec_free(&ms);
    if (st == MT_OK && p->cache_path) {
        st = mtx_model_cache_open(&(*out)->m, p->cache_path, NULL, err);
        if (st != MT_OK)
            *out = NULL;
    }
    return st;
}

const char *mtx_llm_env_role(const char *entry, char *role, size_t n)
{
    static const char pre[] = "MEDTRUST_LLM_";
    const char *eq = strchr(entry, '=');
    size_t k;

    if (!eq || strncmp(entry, pre, sizeof pre - 1) != 0)
        return NULL;
    k = (size_t)(eq - entry) - (sizeof pre - 1);
    if (k == 0 || k >= n)
        return NULL;
    memcpy(role, entry + sizeof pre - 1, k);
    role[k] = '\0';
    if (strcmp(role, "TIMEOUT") == 0 || strcmp(role, "RETRIES") == 0)
        return NULL;
    return eq + 1;
}

const char *mt_llm_role_spec(const char *role, const char *fallback)
{
    char name[96] = "MEDTRUST_LLM_";
    size_t k = strlen(name);
    const char *v;
    size_t i;

    for (i = 0; role && role[i] && k + 1 < sizeof name; i++) {
        unsigned char c = (unsigned char)role[i];
        name[k++] = isalnum(c) ? (char)toupper(c) : '_';
    }
    name[k] = '\0';
    v = role && *role ? getenv(name) : NULL;
    if (v && *v)
        return v;
    if (fallback && *fallback) /* --llm before MEDTRUST_LLM, as documented */
        return fallback;
    v = getenv("MEDTRUST_LLM");
    return v && *v ? v : fallback;
}

enum mt_status mt_llm_open_role(const char *role, const char *fallback,
                                const struct mt_llm_params *p,
                                struct mt_llm **out, struct mt_error *err)
{
    return mt_llm_open(mt_llm_role_spec(role, fallback), p, out, err);
}

/* ==== Handle ==== */

void mt_llm_close(struct mt_llm *l)
{
    mtx_model_close(l ? &l->m : NULL);
}

const char *mt_llm_backend(const struct mt_llm *l)
{
    return l->m.ops->name;
}

const char *mt_llm_model(const struct mt_llm *l)
{
    return l->m.ops->model(l->m.self);
}

/* ==== Context and token counts ==== */

uint32_t mt_llm_n_ctx(struct mt_llm *l)
{
    return l->m.ops->n_ctx ? l->m.ops->n_ctx(l->m.self) : 0;
}

uint32_t mtx_llm_estimate_tokens(const char *s, size_t n)
{
    size_t ascii = 0;
    size_t other = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];

        if (b < 0x80)
            ascii++;
        else if ((b & 0xC0) != 0x80)
            other++;
    }
    ascii = (ascii + 2) / 3 + other;
    return ascii > UINT32_MAX ? UINT32_MAX : (uint32_t)ascii;
}

uint32_t mt_llm_count_tokens(struct mt_llm *l, const char *s, size_t n,
                             enum mt_token_count *how)
{
    enum mt_token_count h = MT_TOKENS_ESTIMATE;
    uint32_t t;

    if (l->m.ops->count)
        t = l->m.ops->count(l->m.self, s, n, &h);
    else
        t = mtx_llm_estimate_tokens(s, n);
    if (how)
        *how = h;
    return t;
}

const char *mt_token_count_str(enum mt_token_count how)
{
    return how == MT_TOKENS_VOCAB    ? "vocab"
           : how == MT_TOKENS_SERVER ? "server"
                                     : "estimate";
}

/* The number right after the first 'key' in low that has one (spaces
 * and an opening bracket between are skipped), or 0. */
static uint32_t number_after(const char *low, const char *key)
{
    const char *p;
    unsigned long v;

    for (p = strstr(low, key); p; p = strstr(p + 1, key)) {
        const char *d = p + strlen(key);

        while (*d == ' ' || *d == '(')
            d++;
        if (!isdigit((unsigned char)*d))
            continue;
        v = strtoul(d, NULL, 10);
        return v > UINT32_MAX ? 0 : (uint32_t)v;
    }
    return 0;
}

int mtx_llm_parse_ctx_error(const char *msg, uint32_t *ctx, uint32_t *prompt)
{
    static const char *const ctx_keys[] = {
        "available context size",    /* llama-server */
        "maximum context length is", /* vLLM, OpenAI */
        "max context size",          /* llama-server, no context shift */
    };
    static const char *const prompt_keys[] = {
        "request (", "input (", "has", "resulted in", "requested",
    };
    char low[MT_ERROR_MSG_MAX];
    const char *m;
    size_t i;

    for (i = 0; msg[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)msg[i]);
    low[i] = '\0';
    *ctx = *prompt = 0;
    for (i = 0; !*ctx && i < sizeof ctx_keys / sizeof *ctx_keys; i++)
        *ctx = number_after(low, ctx_keys[i]);
    /* "(N in the messages, M in the completion)": the prompt is N */
    m = strstr(low, " in the messages");
    while (m && m > low && isdigit((unsigned char)m[-1]))
        m--;
    if (m && isdigit((unsigned char)*m))
        *prompt = (uint32_t)strtoul(m, NULL, 10);
    for (i = 0; !*prompt && i < sizeof prompt_keys / sizeof *prompt_keys; i++)
        *prompt = number_after(low, prompt_keys[i]);
    return *ctx > 0;
}

const char *mt_llm_profile(struct mt_llm *l)
{
    return l->m.ops->profile ? l->m.ops->profile(l->m.self) : NULL;
}

/* ==== Requests ==== */

/* Validates n_msgs and p (n, n_stop, roles). */
static enum mt_status check_chat(const struct mt_llm_message *msgs,
                                 size_t n_msgs, const struct mt_chat_params *p,
                                 struct mt_error *err)
{
    size_t i;

    if (!msgs || n_msgs == 0)
        return mt_fail(err, MT_EINVAL, "chat: no messages");
    if (p->n < 1 || p->n > CHAT_MAX_N)
        return mt_fail(err, MT_EINVAL, "chat: n must be 1..%d, not %u",
                       CHAT_MAX_N, p->n);
    if (p->n_stop > CHAT_MAX_STOP || (p->n_stop && !p->stop))
        return mt_fail(err, MT_EINVAL, "chat: at most %d stop strings",
                       CHAT_MAX_STOP);
    if (p->max_tokens == 0 || p->temperature < 0 || p->top_p <= 0 ||
        p->top_p > 1)
        return mt_fail(err, MT_EINVAL,
                       "chat: max_tokens must be > 0, "
                       "temperature >= 0 and top_p in (0, 1]");
    for (i = 0; i < n_msgs; i++)
        if (!msgs[i].role || !msgs[i].content)
            return mt_fail(err, MT_EINVAL,
                           "chat: message %zu lacks a role "
                           "or content",
                           i);
    return MT_OK;
}

json_t *mtx_chat_messages_json(const struct mt_llm_message *msgs, size_t n)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < n; i++) {
        json_t *m = json_pack("{s:s,s:s}", "role", msgs[i].role, "content",
                              msgs[i].content);
        if (!m || json_array_append_new(a, m) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static int add_stops(json_t *o, const struct mt_chat_params *p)
{
    json_t *a;
    size_t i;

    if (p->n_stop == 0)
        return 0;
    a = json_array();
    for (i = 0; a && i < p->n_stop; i++)
        if (json_array_append_new(a, json_string(p->stop[i])) != 0)
            break;
    if (!a || i < p->n_stop) {
        json_decref(a);
        return -1;
    }
    return json_object_set_new(o, "stop", a);
}

/* Canonical request JSON (sorted keys, compact) for cache keys: messages
 * and every parameter that changes the output; the seed only when
 * temperature > 0. Caller frees with mt_free; NULL when out of memory. */
static char *request_key(const struct mt_llm_message *msgs, size_t n_msgs,
                         const struct mt_chat_params *p)
{
    json_t *o = json_pack("{s:o,s:f,s:f,s:I,s:I}", "messages",
                          mtx_chat_messages_json(msgs, n_msgs), "temperature",
                          (double)p->temperature, "top_p", (double)p->top_p,
                          "max_tokens", (json_int_t)p->max_tokens, "n",
                          (json_int_t)p->n);
    char *s = NULL;
    int bad = !o || add_stops(o, p) != 0;

    if (!bad && p->temperature > 0)
        bad = json_object_set_new(o, "seed",
                                  json_integer((json_int_t)p->seed)) != 0;
    if (!bad && p->grammar)
        bad = json_object_set_new(o, "grammar", json_string(p->grammar));
    else if (!bad && p->json_schema)
        bad = json_object_set_new(o, "schema", json_string(p->json_schema));
    if (!bad)
        s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

/* ==== Cache encoding ==== */

static char *result_encode(const struct mt_chat_result *r)
{
    json_t *a = json_array();
    json_t *o;
    char *s = NULL;
    uint32_t i;

    for (i = 0; a && i < r->n; i++)
        json_array_append_new(a, json_string(r->texts[i]));
    o = json_pack("{s:o,s:I,s:I}", "texts", a, "prompt_tokens",
                  (json_int_t)r->prompt_tokens, "completion_tokens",
                  (json_int_t)r->completion_tokens);
    if (o && r->tokens_estimated &&
        json_object_set_new(o, "tokens_estimated", json_true()) != 0)
        json_array_clear(a); /* out of memory: store nothing */
    if (o && json_array_size(a) == r->n)
        s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static enum mt_status result_decode(const char *s, size_t n,
                                    struct mt_chat_result *r)
{
    json_t *o = json_loadb(s, n, 0, NULL);
    json_t *a = json_object_get(o, "texts");
    enum mt_status st = MT_EPARSE;
    uint32_t i;

    if (!json_is_array(a) || json_array_size(a) > CHAT_MAX_N)
        goto out;
    st = mtx_chat_result_init(r, (uint32_t)json_array_size(a));
    for (i = 0; st == MT_OK && i < r->n; i++) {
        const char *t = json_string_value(json_array_get(a, i));
        r->texts[i] = mt_strdup(t ? t : "");
        if (!r->texts[i])
            st = MT_ENOMEM;
    }
    r->prompt_tokens =
        (uint64_t)json_integer_value(json_object_get(o, "prompt_tokens"));
    r->completion_tokens =
        (uint64_t)json_integer_value(json_object_get(o, "completion_tokens"));
    r->tokens_estimated = json_is_true(json_object_get(o, "tokens_estimated"));
    r->cached = 1;
    if (st != MT_OK)
        mt_chat_result_free(r);
out:
    json_decref(o);
    return st;
}

/* ==== Calls ==== */

/* A cached reply streams as one piece per completion. */
static enum mt_status cache_stream(const struct mt_chat_params *p,
                                   const struct mt_chat_result *res,
                                   struct mt_error *err)
{
    uint32_t i;

    for (i = 0; p->on_token && i < res->n; i++)
        if (res->texts[i][0] && p->on_token(p->on_token_ctx, i, res->texts[i],
                                            strlen(res->texts[i])) != 0)
            return mt_fail(err, MT_ECANCELED, "chat: stopped by the caller");
    return MT_OK;
}

static int cache_lookup(struct mt_llm *l, const char *key,
                        struct mt_chat_result *res)
{
    char *v = NULL;
    size_t n = 0;
    int hit;

    if (!mtx_model_cache_get(&l->m, key, &v, &n))
        return 0;
    hit = result_decode(v, n, res) == MT_OK;
    mt_free(v);
    return hit;
}

static void cache_store(struct mt_llm *l, const char *key,
                        const struct mt_chat_result *res)
{
    struct mt_error e;
    char *v = result_encode(res);

    if (v && mtx_model_cache_put(&l->m, key, v, strlen(v), &e) != MT_OK)
        mt_log(MT_LOG_WARN, "%s", e.msg);
    mt_free(v);
}

enum mt_status mt_llm_chat(struct mt_llm *l, const struct mt_llm_message *msgs,
                           size_t n_msgs, const struct mt_chat_params *p,
                           struct mt_chat_result *res, struct mt_error *err)
{
    struct mt_chat_params d;
    double t0 = mtx_clock_now();
    char *key = NULL;
    enum mt_status st;

    memset(res, 0, sizeof *res);
    if (!p) {
        mt_chat_default_params(&d);
        p = &d;
    }
    st = check_chat(msgs, n_msgs, p, err);
    if (st != MT_OK)
        return st;
    mtx_jsonl_init_alloc();
    if (l->m.cache) {
        key = request_key(msgs, n_msgs, p);
        if (!key)
            return mt_fail(err, MT_ENOMEM, "chat: out of memory");
        if (cache_lookup(l, key, res)) {
            st = cache_stream(p, res, err);
            goto done;
        }
    }
    st = l->m.ops->chat(l->m.self, msgs, n_msgs, p, res, err);
    if (st == MT_OK && mtx_chat_split_think(res) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "chat: out of memory");
    if (st == MT_OK && l->m.cache)
        cache_store(l, key, res);
done:
    mt_free(key);
    if (st != MT_OK)
        mt_chat_result_free(res);
    else
        res->seconds = mtx_clock_now() - t0;
    return st;
}
