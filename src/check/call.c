/* Role calls: prompt rendering, the chat request, JSON extraction and
 * validation, one repeat, fallbacks counted, every attempt traced. */
#include <stdio.h>
#include <string.h>

#include "check/agent_int.h"
#include "llmcall/llmcall.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"
#include "text/utf8.h"

#define TRACE_REPLY_MAX 8192

static const char *const role_names[ROLE_COUNT] = {
    "react", "eval", "reflect", "parser", "guard", "single",
};

static json_t *record_new(const struct call *c, int attempt)
{
    return json_pack("{s:s,s:s,s:s,s:i}", "step",
                     mt_trace_kind_get(MT_TRACE_CALL)->name, "role",
                     role_names[c->role], "prompt", c->prompt, "attempt",
                     attempt + 1);
}

/* A JSON string of at most max bytes of s, cut before any ill-formed
 * UTF-8 so the trace always serialises. */
static json_t *text_json(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    size_t bad = n;

    while (n > 0 && mtx_utf8_validate(s, n, &bad) != MT_OK)
        n = bad < n ? bad : n - 1;
    return json_stringn_nocheck(s, n);
}

/* The call's token counts in its trace record, labelled "server" when the
 * server reported them and "estimated" when it sent no usage, and the
 * endpoint that answered an openai: call. */
static void usage_trace(json_t *rec, const struct mt_chat_result *res)
{
    json_object_set_new(rec, "prompt_tokens",
                        json_integer((json_int_t)res->prompt_tokens));
    json_object_set_new(rec, "completion_tokens",
                        json_integer((json_int_t)res->completion_tokens));
    json_object_set_new(
        rec, "tokens",
        json_string(res->tokens_estimated ? "estimated" : "server"));
    if (res->endpoint) /* which of an endpoint pool answered */
        json_object_set_new(rec, "endpoint", json_string(res->endpoint));
}

/* The completions' reasoning (a reasoning model's thinking, which the
 * backend keeps apart from the reply: never parsed, never sent back in a
 * conversation's history) as "reasoning": one entry a completion, null
 * where it had none; nothing when none had any. */
static void reasoning_trace(json_t *rec, const struct mt_chat_result *res)
{
    json_t *a;
    uint32_t i;

    if (!res->reasoning)
        return;
    a = json_array();
    for (i = 0; a && i < res->n; i++)
        json_array_append_new(
            a, res->reasoning[i] ? text_json(res->reasoning[i], TRACE_REPLY_MAX)
                                 : json_null());
    json_object_set_new(rec, "reasoning", a);
}

/* Validates each completion; keeps the valid ones. Returns the number
 * kept; 'why' gets the last problem. */
static size_t take_replies(struct run *r, struct call *c,
                           const struct mt_chat_result *res, json_t *rec,
                           char *why, size_t wn)
{
    json_t *raws = json_array();
    json_t *parsed = json_array();
    size_t kept = 0;
    uint32_t i;

    for (i = 0; i < res->n; i++) {
        json_t *o = mtx_reply_extract(res->texts[i], why, wn);

        json_array_append_new(raws, text_json(res->texts[i], TRACE_REPLY_MAX));
        /* the object as extracted (null: none), valid or not, so a
         * reader never extracts JSON from the raw text again */
        json_array_append_new(parsed, o ? json_deep_copy(o) : json_null());
        if (o && c->check(r, o, c->check_user, why, wn) != 0) {
            json_decref(o);
            o = NULL;
        }
        if (!o)
            continue;
        json_array_append_new(c->objs, o);
        if (!c->raw)
            c->raw = mt_strdup(res->texts[i]);
        kept++;
    }
    json_object_set_new(rec, "replies", raws);
    json_object_set_new(rec, "parsed", parsed);
    reasoning_trace(rec, res);
    return kept;
}

/* The reply's JSON Schema, unless the caller turned grammars off: a gguf
 * model gets it as a grammar, an OpenAI-compatible server as
 * response_format (json_schema, or what --response-format falls back
 * to when the server refuses it). */
static char *reply_schema(const struct run *r, const struct call *c)
{
    if (!r->p.grammar)
        return NULL;
    return mtx_reply_schema_for(c->prompt, r->sents, r->nsents);
}

/* The call in flight, for the loop's callbacks. */
struct inflight {
    struct run *r;
    struct call *c;
    char *bad; /* the last unusable reply, for the repair turn */
};

/* Keeps the first completion of an unusable reply for the repair turn. */
static void keep_bad(struct inflight *f, const struct mt_chat_result *res)
{
    mt_free(f->bad);
    f->bad = res->n > 0 && res->texts[0] ? mt_strdup(res->texts[0]) : NULL;
}

static const char *bad_reply(void *user)
{
    return ((const struct inflight *)user)->bad;
}

/* One request and its validation. */
static enum mtx_outcome attempt(void *user, const struct mt_llm_message *m,
                                size_t nm, int k, char *why, size_t wn)
{
    struct inflight *f = user;
    struct run *r = f->r;
    struct call *c = f->c;
    struct mt_chat_params cp;
    struct mt_chat_result res;
    struct mt_error err = {MT_OK, ""};
    json_t *rec = record_new(c, k);
    char *schema;
    enum mt_status st;
    size_t kept = 0;

    mt_chat_default_params(&cp);
    cp.temperature = r->p.role_temperature[c->role] >= 0
                         ? r->p.role_temperature[c->role]
                         : c->temperature;
    cp.n = c->n ? c->n : 1;
    cp.max_tokens = r->p.role_max_tokens[c->role]
                        ? r->p.role_max_tokens[c->role]
                        : r->p.max_tokens;
    cp.seed = r->p.seed + (uint64_t)k;
    schema = reply_schema(r, c);
    cp.json_schema = schema;
    st = mt_llm_chat(r->a->llm[c->role], m, nm, &cp, &res, &err);
    mt_free(schema);
    c->u.llm_calls++;
    c->u.critical_calls++;
    if (st != MT_OK) {
        c->u.failed_calls++;
        mtx_llmcall_failed_why(st, &err, why, wn);
    } else {
        c->u.prompt_tokens += res.prompt_tokens;
        c->u.completion_tokens += res.completion_tokens;
        c->u.estimated_calls += res.tokens_estimated ? 1 : 0;
        json_object_set_new(rec, "ms",
                            json_integer((json_int_t)(res.seconds * 1000)));
        usage_trace(rec, &res);
        kept = take_replies(r, c, &res, rec, why, wn);
        if (!kept) {
            c->u.parse_failures++;
            keep_bad(f, &res);
        }
        mt_chat_result_free(&res);
    }
    json_object_set_new(rec, "ok", json_boolean(kept > 0));
    if (!kept)
        json_object_set_new(rec, "error", json_string(why));
    json_array_append_new(c->records, rec);
    if (st == MT_ELIMIT) /* refused as too long: not repeated as is */
        return MTX_OUTCOME_TOO_LONG;
    if (st != MT_OK)
        return MTX_OUTCOME_FAILED;
    return kept > 0 ? MTX_OUTCOME_OK : MTX_OUTCOME_BAD_REPLY;
}

static int cancelled(void *user)
{
    const struct inflight *f = user;
    const struct mt_agent_params *p = &f->r->p;

    return p->cancelled && p->cancelled(p->cancelled_user, f->r->note_id);
}

/* Messages: system, user, history (the loop adds the bad reply and the
 * parse error after a bad reply). m has room for nhist + 4. */
static size_t build_msgs(const struct call *c, struct mt_llm_message *m,
                         const char *sys, const char *user)
{
    size_t n = 0;
    size_t i;

    m[n++] = (struct mt_llm_message){"system", sys};
    m[n++] = (struct mt_llm_message){"user", user};
    for (i = 0; i < c->nhist; i++)
        m[n++] = c->hist[i];
    return n;
}

static enum mt_status call_loop(struct run *r, struct call *c, const char *sys,
                                const char *user)
{
    struct mt_llm_message *m = mt_calloc(c->nhist + 4, sizeof *m);
    struct inflight f = {r, c, NULL};
    struct mtx_llmcall lc;
    enum mtx_outcome last = MTX_OUTCOME_FAILED;
    char why[512] = "";
    enum mt_status st;

    if (!m)
        return MT_ENOMEM;
    lc.msgs = m;
    lc.nmsgs = build_msgs(c, m, sys, user);
    lc.attempt = attempt;
    lc.cancelled = cancelled;
    lc.user = &f;
    lc.bad_reply = bad_reply;
    lc.fix = NULL; /* a JSON reply */
    lc.llm = r->a->llm[c->role];
    lc.max_tokens = r->p.role_max_tokens[c->role]
                        ? r->p.role_max_tokens[c->role]
                        : r->p.max_tokens;
    st = mtx_llmcall_run(&lc, &last, why, sizeof why);
    mt_free(f.bad);
    mt_free(m);
    if (st != MT_OK)
        return st;
    c->ok = last == MTX_OUTCOME_OK;
    if (!c->ok) {
        c->u.fallbacks++;
        snprintf(c->why, sizeof c->why, "%.250s",
                 why[0] ? why : "no usable reply");
    }
    /* the role has no answer because the backend failed, not because the
     * model answered badly: the run reports it up (MT_EMODEL) */
    if (last == MTX_OUTCOME_FAILED || last == MTX_OUTCOME_TOO_LONG)
        snprintf(c->down_why, sizeof c->down_why, "%.250s", why);
    return MT_OK;
}

/* Fits (c->fit), renders and runs the call once. */
static enum mt_status run_once(struct run *r, struct call *c)
{
    struct mt_buf sys = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_buf user = MT_BUF_INIT(MTX_PROMPT_MAX);
    enum mt_status st = c->fit ? c->fit(r, c) : MT_OK;

    if (st == MT_OK)
        st = mtx_llmcall_render(r->a->prompts, c->prompt, c->keys, c->vals,
                                c->nvars, &sys, &user);
    if (st == MT_OK)
        st = call_loop(r, c, sys.data, user.data);
    mtx_buf_free(&sys);
    mtx_buf_free(&user);
    return st;
}

/* A call whose context was unknown and whose server refused the prompt as
 * too long (the refusal taught the context) is fitted and sent once more;
 * the trace keeps both tries' records. */
static enum mt_status refit_once(struct run *r, struct call *c, uint32_t ctx0)
{
    uint32_t ctx = mtx_role_ctx(r, c->role);
    json_t *rec;

    if (c->ok || !c->fit || ctx0 || !ctx || !c->down_why[0])
        return MT_OK;
    rec = json_pack("{s:s,s:s,s:I,s:s}", "step",
                    mt_trace_kind_get(MT_TRACE_CONTEXT_RETRY)->name, "role",
                    c->prompt, "ctx_tokens", (json_int_t)ctx, "rule",
                    "the server refused the prompt as longer than its "
                    "context: fitted to it and sent once more");
    if (!rec || json_array_append_new(c->records, rec) != 0)
        return MT_ENOMEM;
    c->ok = 0;
    c->down_why[0] = '\0';
    c->u.fallbacks = 0;
    return run_once(r, c);
}

void mtx_call_init(struct call *c, enum agent_role role, const char *prompt,
                   reply_check_fn check, const char *const *keys,
                   const char *const *vals, size_t nvars)
{
    memset(c, 0, sizeof *c);
    c->role = role;
    c->prompt = prompt;
    c->check = check;
    c->keys = keys;
    c->vals = vals;
    c->nvars = nvars;
}

enum mt_status mtx_call_run(struct run *r, struct call *c)
{
    uint32_t ctx0 = c->fit ? mtx_role_ctx(r, c->role) : 0;
    enum mt_status st;

    c->ok = 0;
    c->down_why[0] = '\0';
    c->why[0] = '\0';
    c->fail[0] = '\0';
    memset(&c->u, 0, sizeof c->u);
    c->objs = json_array();
    c->records = json_array();
    if (!c->objs || !c->records)
        return MT_ENOMEM;
    st = run_once(r, c);
    if (st == MT_OK)
        st = refit_once(r, c, ctx0);
    return st;
}

void mtx_call_free(struct call *c)
{
    json_decref(c->objs);
    json_decref(c->records);
    mt_free(c->raw);
    c->objs = c->records = NULL;
    c->raw = NULL;
}

json_t *mtx_call_obj(const struct call *c)
{
    return c->ok ? json_array_get(c->objs, 0) : NULL;
}

/* Passes the trace records from index 'from' on to params.on_step. */
static void notify(struct run *r, size_t from)
{
    size_t i;

    for (i = from; r->p.on_step && i < json_array_size(r->trace); i++) {
        char *txt = json_dumps(json_array_get(r->trace, i),
                               JSON_COMPACT | JSON_PRESERVE_ORDER);

        if (txt)
            r->p.on_step(r->p.on_step_user, r->note_id, txt);
        mt_free(txt); /* jansson allocates through mt_malloc here */
    }
}

/* Adds c's usage and trace records to r; 'crit' is the critical-path
 * share (the call's own count, or the longer of a parallel pair). */
static void merge(struct run *r, const struct call *c, uint32_t crit)
{
    size_t from;

    r->u.llm_calls += c->u.llm_calls;
    r->u.critical_calls += crit;
    r->u.prompt_tokens += c->u.prompt_tokens;
    r->u.completion_tokens += c->u.completion_tokens;
    r->u.failed_calls += c->u.failed_calls;
    r->u.parse_failures += c->u.parse_failures;
    r->u.fallbacks += c->u.fallbacks;
    r->u.estimated_calls += c->u.estimated_calls;
    if (c->down_why[0]) {
        r->down++;
        snprintf(r->down_why, sizeof r->down_why, "%s", c->down_why);
    }
    from = json_array_size(r->trace);
    json_array_extend(r->trace, c->records);
    notify(r, from);
}

/* A note that does not fit the context fails with c's reason. */
static void take_fail(struct run *r, const struct call *c, enum mt_status st)
{
    if (st == MT_ELIMIT && c->fail[0] && !r->fail_why[0])
        snprintf(r->fail_why, sizeof r->fail_why, "%s", c->fail);
}

enum mt_status mtx_call_do(struct run *r, struct call *c)
{
    enum mt_status st = mtx_call_run(r, c);

    if (st == MT_OK)
        merge(r, c, c->u.critical_calls);
    take_fail(r, c, st);
    return st;
}

struct pair_job {
    struct run *r;
    struct call *c;
    enum mt_status st;
};

static void *pair_main(void *arg)
{
    struct pair_job *j = arg;

    j->st = mtx_call_run(j->r, j->c);
    return NULL;
}

enum mt_status mtx_call_pair(struct run *r, struct call *a, struct call *b)
{
    struct pair_job jb = {r, b, MT_OK};
    pthread_t t;
    int threaded = pthread_create(&t, NULL, pair_main, &jb) == 0;
    enum mt_status st = mtx_call_run(r, a);
    uint32_t crit;

    if (threaded)
        pthread_join(t, NULL);
    else
        pair_main(&jb);
    take_fail(r, a, st);
    take_fail(r, b, jb.st);
    if (st == MT_OK)
        st = jb.st;
    if (st != MT_OK)
        return st;
    crit = a->u.critical_calls > b->u.critical_calls ? a->u.critical_calls
                                                     : b->u.critical_calls;
    if (!threaded) /* ran one after the other */
        crit = a->u.critical_calls + b->u.critical_calls;
    merge(r, a, crit);
    merge(r, b, 0);
    return MT_OK;
}

void mtx_run_no_answer(struct run *r, const char *role, const char *why,
                       int verdict)
{
    snprintf(r->fb_why, sizeof r->fb_why, "%s: %.280s", role,
             why && *why ? why : "no usable reply");
    if (verdict)
        r->fallback = 1;
}

void mtx_run_event(struct run *r, enum mt_trace_kind kind, json_t *o)
{
    size_t from = json_array_size(r->trace);

    if (!o)
        o = json_object();
    json_object_set_new(o, "step", json_string(mt_trace_kind_get(kind)->name));
    json_array_append_new(r->trace, o);
    notify(r, from);
}
