/* OpenAI-compatible chat backend (openai:BASE_URL#MODEL): POST
 * /v1/chat/completions with n, seed, stop and response_format; replies are
 * validated field by field. */
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/http.h"
#include "model/llm.h"

struct openai {
    struct mt_http *http;
    char *model;
    char url[512];
};

static void openai_free(void *self)
{
    struct openai *o = self;

    if (!o)
        return;
    mt_http_free(o->http);
    mt_free(o->model);
    mt_free(o);
}

static const char *openai_model(const void *self)
{
    return ((const struct openai *)self)->model;
}

/* ==== Request ==== */

static int add_format(json_t *b, const struct mt_chat_params *p,
                      struct mt_error *err)
{
    json_error_t je;
    json_t *schema;

    if (p->grammar) /* llama.cpp's server accepts raw GBNF */
        return json_object_set_new(b, "grammar", json_string(p->grammar));
    if (!p->json_schema)
        return 0;
    schema = json_loads(p->json_schema, 0, &je);
    if (!schema) {
        mt_fail(err, MT_EINVAL, "chat: json_schema is not JSON: %s", je.text);
        return -1;
    }
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

static enum mt_status make_body(const struct openai *o,
                                const struct mt_llm_message *m, size_t nm,
                                const struct mt_chat_params *p, uint32_t n,
                                uint64_t seed, json_t **out,
                                struct mt_error *err)
{
    json_t *b = json_pack(
        "{s:s,s:o,s:f,s:f,s:I,s:I,s:I}", "model", o->model, "messages",
        mt_chat_messages_json(m, nm), "temperature", (double)p->temperature,
        "top_p", (double)p->top_p, "max_tokens", (json_int_t)p->max_tokens, "n",
        (json_int_t)n, "seed", (json_int_t)(seed & 0x7fffffffffffffffULL));
    struct mt_error e = {MT_OK, ""};

    if (!b || add_stops(b, p) != 0 || add_format(b, p, &e) != 0) {
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

static enum mt_status take_choices(const struct openai *o, json_t *reply,
                                   struct mt_chat_result *r, uint32_t *got,
                                   struct mt_error *err)
{
    json_t *ch = json_object_get(reply, "choices");
    char f[64];
    size_t i;

    if (!json_is_array(ch) || json_array_size(ch) == 0)
        return bad_field(o, err, "choices");
    for (i = 0; i < json_array_size(ch) && *got < r->n; i++) {
        json_t *msg = json_object_get(json_array_get(ch, i), "message");
        const char *t = json_string_value(json_object_get(msg, "content"));
        if (!t) {
            snprintf(f, sizeof f, "choices[%zu].message.content", i);
            return bad_field(o, err, f);
        }
        r->texts[*got] = mt_strdup(t);
        if (!r->texts[*got])
            return mt_fail(err, MT_ENOMEM, "chat: out of memory");
        (*got)++;
    }
    return MT_OK;
}

static enum mt_status take_usage(const struct openai *o, json_t *reply,
                                 struct mt_chat_result *r, struct mt_error *err)
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
    return MT_OK;
}

/* Servers that ignore n (llama.cpp's) return one choice: the rest are
 * requested again with the remaining count and a shifted seed. */
static enum mt_status openai_chat(void *self, const struct mt_llm_message *m,
                                  size_t nm, const struct mt_chat_params *p,
                                  struct mt_chat_result *r,
                                  struct mt_error *err)
{
    struct openai *o = self;
    uint32_t got = 0;
    uint64_t round;
    enum mt_status st = mt_chat_result_init(r, p->n);

    for (round = 0; st == MT_OK && got < p->n; round++) {
        json_t *reply = NULL;
        json_t *b = NULL;
        st = make_body(o, m, nm, p, p->n - got, p->seed + round, &b, err);
        if (st != MT_OK)
            break;
        st = mt_http_post_json(o->http, "chat/completions", b, &reply, err);
        json_decref(b);
        if (st == MT_OK)
            st = take_choices(o, reply, r, &got, err);
        if (st == MT_OK)
            st = take_usage(o, reply, r, err);
        json_decref(reply);
    }
    return st;
}

static const struct mt_llm_ops openai_ops = {
    "openai",
    openai_chat,
    openai_model,
    openai_free,
};

enum mt_status mt_llm_openai_open(const char *url, const char *model,
                                  const struct mt_llm_params *p,
                                  struct mt_llm **out, struct mt_error *err)
{
    struct mt_http_params hp = {p->timeout_s,       p->max_retries,
                                p->backoff_base_s,  p->backoff_max_s,
                                p->max_concurrency, "--llm/MEDTRUST_LLM"};
    struct openai *o = mt_calloc(1, sizeof *o);
    enum mt_status st;

    if (!o)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    o->model = mt_strdup(model);
    if (!o->model) {
        openai_free(o);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    st = mt_http_new(url, &hp, &o->http, err);
    if (st != MT_OK) {
        openai_free(o);
        return st;
    }
    mt_http_url(o->http, "chat/completions", o->url, sizeof o->url);
    return mt_llm_new_take(&openai_ops, o, p, out, err);
}
