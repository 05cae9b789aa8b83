/* One note's check: input validation, sentences, the verdict, and the
 * result as a struct, JSON and a MEDIQA-CORR submission line. */
#include <stdio.h>
#include <string.h>

#include "check/agent_int.h"
#include "check/strategy.h"
#include "check/usage.h"
#include "medtrust/core.h"
#include "text/sentence.h"
#include "text/utf8.h"

#define BLOCK_MAX ((size_t)16 << 20)

static enum mt_status check_input(const struct mt_agent *a,
                                  const struct mt_note *n, struct mt_error *err)
{
    size_t bad = 0;
    size_t i;

    if (!n->text || n->text_len == 0)
        return mt_fail(err, MT_EINVAL, "the note is empty");
    if (n->nmeta > MT_SEARCH_MAX_META || (n->nmeta && !n->meta))
        return mt_fail(err, MT_EINVAL,
                       "a note's search takes at most %d metadata conditions",
                       MT_SEARCH_MAX_META);
    if (n->text_len > a->p.max_note_bytes)
        return mt_fail(err, MT_ELIMIT,
                       "the note is %zu bytes; the limit "
                       "is %zu",
                       n->text_len, a->p.max_note_bytes);
    if (memchr(n->text, '\0', n->text_len) ||
        mtx_utf8_validate(n->text, n->text_len, &bad) != MT_OK)
        return mt_fail(err, MT_EINVAL,
                       "the note is not UTF-8 text (bad "
                       "byte at offset %zu)",
                       bad);
    for (i = 0; i < n->text_len; i++)
        if (n->text[i] != ' ' && (n->text[i] < '\t' || n->text[i] > '\r'))
            return MT_OK;
    return mt_fail(err, MT_EINVAL, "the note is empty (only white space)");
}

/* ==== Settings of one call ==== */

void mt_agent_check_default_params(const struct mt_agent *a,
                                   struct mt_agent_check_params *cp)
{
    const struct mt_agent_params *p = &a->p;

    memset(cp, 0, sizeof *cp);
    cp->strategy = p->strategy;
    cp->max_steps = p->max_steps;
    cp->max_rounds = p->max_rounds;
    cp->n_evals = p->n_evals;
    cp->accept_mean = p->accept_mean;
    cp->accept_min = p->accept_min;
    cp->eval_quorum = p->eval_quorum;
    cp->on_exhausted = p->on_exhausted;
    cp->search_mode = p->search_mode;
    cp->retrieve_k = p->retrieve_k;
    cp->rerank_k = p->rerank_k;
    cp->w_lex = p->w_lex;
    cp->w_sem = p->w_sem;
    cp->chunk_chars = p->chunk_chars;
    cp->evidence_tokens = p->evidence_tokens;
    cp->hit_chars = p->hit_chars;
    cp->temperature = p->temperature;
    cp->eval_temperature = p->eval_temperature;
    cp->max_tokens = p->max_tokens;
    cp->seed = p->seed;
    cp->on_step = p->on_step;
    cp->on_step_user = p->on_step_user;
    cp->cancelled = p->cancelled;
    cp->cancelled_user = p->cancelled_user;
    cp->passages_last = p->passages_last;
    cp->allow_fallbacks = p->allow_fallbacks;
}

/* The call's settings over the handle's copy in p. */
static void call_settings(struct mt_agent_params *p,
                          const struct mt_agent_check_params *cp)
{
    p->strategy = cp->strategy;
    p->max_steps = cp->max_steps;
    p->max_rounds = cp->max_rounds;
    p->n_evals = cp->n_evals;
    p->accept_mean = cp->accept_mean;
    p->accept_min = cp->accept_min;
    p->eval_quorum = cp->eval_quorum;
    p->on_exhausted = cp->on_exhausted;
    p->search_mode = cp->search_mode;
    p->retrieve_k = cp->retrieve_k;
    p->rerank_k = cp->rerank_k;
    p->w_lex = cp->w_lex;
    p->w_sem = cp->w_sem;
    p->chunk_chars = cp->chunk_chars;
    p->evidence_tokens = cp->evidence_tokens;
    p->hit_chars = cp->hit_chars;
    p->temperature = cp->temperature;
    p->eval_temperature = cp->eval_temperature;
    p->max_tokens = cp->max_tokens;
    p->seed = cp->seed;
    p->on_step = cp->on_step;
    p->on_step_user = cp->on_step_user;
    p->cancelled = cp->cancelled;
    p->cancelled_user = cp->cancelled_user;
    p->passages_last = cp->passages_last;
    p->allow_fallbacks = cp->allow_fallbacks;
}

/* The call's settings are in range, its strategy's parts open and its
 * search mode one the index can run (as mt_agent_open checks them). */
static enum mt_status check_settings(struct mt_agent *a,
                                     const struct mt_agent_check_params *cp,
                                     struct mt_error *err)
{
    enum mt_status st;

    if (cp->max_steps == 0 || cp->max_rounds == 0 || cp->n_evals == 0 ||
        cp->n_evals > 64 || cp->rerank_k == 0 ||
        cp->retrieve_k < cp->rerank_k ||
        cp->search_mode < MT_AGENT_SEARCH_AUTO ||
        cp->search_mode > (int)MT_SEARCH_HYBRID)
        return mt_fail(err, MT_EINVAL,
                       "check: steps, rounds and evaluators (1..64) must be "
                       "positive, retrieve-k >= rerank-k >= 1 and the "
                       "search mode auto, bm25, dense or hybrid");
    st = mt_agent_prepare(a, cp->strategy, err);
    if (st != MT_OK)
        return st;
    if (!mt_strategy_get(cp->strategy)->needs_retriever ||
        cp->search_mode == a->p.search_mode)
        return MT_OK;
    return mtx_agent_search_mode_check(a, cp->search_mode, err);
}

static enum mt_status from_field(struct run *r, const struct mt_note *n,
                                 struct mt_error *err)
{
    struct mt_medec_sentence *ms = NULL;
    size_t cnt = 0;
    size_t i;
    enum mt_status st = mtx_medec_sentences_parse(
        n->sentences, n->sentences_len, &ms, &cnt, err);

    if (st != MT_OK)
        return st;
    r->sents = mt_calloc(cnt ? cnt : 1, sizeof *r->sents);
    for (i = 0; r->sents && i < cnt; i++)
        r->sents[i] = (struct mt_str){n->sentences + ms[i].span.start,
                                      ms[i].span.end - ms[i].span.start};
    mt_free(ms);
    r->nsents = cnt;
    return r->sents ? MT_OK : MT_ENOMEM;
}

static enum mt_status from_text(struct run *r, const struct mt_note *n,
                                struct mt_error *err)
{
    struct mt_span *sp = NULL;
    size_t cnt = 0;
    size_t i;
    enum mt_status st =
        mtx_sentences_split(n->text, n->text_len, &sp, &cnt, err);

    if (st != MT_OK)
        return st;
    r->sents = mt_calloc(cnt ? cnt : 1, sizeof *r->sents);
    for (i = 0; r->sents && i < cnt; i++)
        r->sents[i] =
            (struct mt_str){n->text + sp[i].start, sp[i].end - sp[i].start};
    mt_free(sp);
    r->nsents = cnt;
    r->sents_in_text = 1;
    return r->sents ? MT_OK : MT_ENOMEM;
}

/* Appends s with line breaks as spaces. */
static enum mt_status put_flat(struct mt_buf *b, struct mt_str s)
{
    size_t i;
    enum mt_status st = MT_OK;

    for (i = 0; st == MT_OK && i < s.n; i++)
        st = mtx_buf_putc(b, s.p[i] == '\n' || s.p[i] == '\r' ? ' ' : s.p[i]);
    return st;
}

static enum mt_status make_block(struct run *r)
{
    struct mt_buf b = MT_BUF_INIT(BLOCK_MAX);
    enum mt_status st = mtx_buf_append_str(&b, "<sentences>\n");
    size_t i;

    for (i = 0; st == MT_OK && i < r->nsents; i++) {
        st = mtx_buf_printf(&b, "%zu | ", i);
        if (st == MT_OK)
            st = put_flat(&b, r->sents[i]);
        if (st == MT_OK)
            st = mtx_buf_putc(&b, '\n');
    }
    if (st == MT_OK)
        st = mtx_buf_append_str(&b, "</sentences>");
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    r->block = mtx_buf_take(&b);
    return MT_OK;
}

static enum mt_status run_init(struct run *r, struct mt_agent *a,
                               const struct mt_note *n,
                               const struct mt_agent_check_params *cp,
                               struct mt_error *err)
{
    enum mt_status st = MT_EPARSE;

    memset(r, 0, sizeof *r);
    r->a = a;
    r->p = a->p;
    if (cp)
        call_settings(&r->p, cp);
    r->sid = -1;
    r->note_id = n->id;
    r->sources = n->n_sources ? n->sources : r->p.sources;
    r->n_sources = n->n_sources ? n->n_sources : r->p.n_sources;
    if (r->n_sources > MT_AGENT_MAX_SOURCES)
        r->n_sources = MT_AGENT_MAX_SOURCES;
    r->meta = n->meta;
    r->nmeta = n->nmeta;
    r->text = (struct mt_str){n->text, n->text_len};
    r->trace = json_array();
    if (!r->trace)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (n->sentences && n->sentences_len > 0) {
        struct mt_error e2 = {MT_OK, ""};

        st = from_field(r, n, &e2);
        if (st == MT_EPARSE)
            mtx_run_event(
                r, MT_TRACE_SENTENCES,
                json_pack("{s:s,s:s}", "source", "split", "why", e2.msg));
        else if (st != MT_OK)
            return mt_fail(err, st, "%s", e2.msg);
    }
    if (st == MT_EPARSE)
        st = from_text(r, n, err);
    if (st == MT_OK && r->nsents == 0)
        st = mt_fail(err, MT_EINVAL, "the note has no sentences");
    if (st == MT_OK && make_block(r) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    return st;
}

static void run_free(struct run *r)
{
    json_decref(r->trace);
    mt_free(r->sents);
    mt_free(r->block);
    mt_free(r->corr);
}

/* ==== Result ==== */

/* First occurrence of s in t, or NULL (memmem is not POSIX). */
static const char *find(struct mt_str t, struct mt_str s)
{
    size_t i;

    for (i = 0; s.n > 0 && i + s.n <= t.n; i++)
        if (t.p[i] == s.p[0] && memcmp(t.p + i, s.p, s.n) == 0)
            return t.p + i;
    return NULL;
}

/* The note with sentence sid replaced by the correction. */
static char *corrected_text(const struct run *r)
{
    struct mt_buf b = MT_BUF_INIT(BLOCK_MAX);
    struct mt_str s;
    const char *at = NULL;
    size_t i;
    enum mt_status st = MT_OK;

    if (!r->flag || r->sid < 0) /* no error, or one not located */
        return mt_strndup(r->text.p, r->text.n);
    s = r->sents[r->sid];
    if (r->sents_in_text)
        at = s.p;
    else if (s.n > 0)
        at = find(r->text, s);
    if (at) {
        st = mtx_buf_append(&b, r->text.p, (size_t)(at - r->text.p));
        if (st == MT_OK)
            st = mtx_buf_append_str(&b, r->corr);
        if (st == MT_OK)
            st = mtx_buf_append(&b, at + s.n,
                                r->text.n - (size_t)(at + s.n - r->text.p));
    }
    for (i = 0; !at && st == MT_OK && i < r->nsents; i++) {
        st = i ? mtx_buf_putc(&b, ' ') : MT_OK; /* rebuilt from sentences */
        if (st == MT_OK)
            st = (int)i == r->sid
                     ? mtx_buf_append_str(&b, r->corr)
                     : mtx_buf_append(&b, r->sents[i].p, r->sents[i].n);
    }
    if (st == MT_OK)
        st = mtx_buf_reserve(&b, 1);
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* Why the verdict is a fallback, as mt_check_result.fallback_why and the
 * MT_EMODEL message say it. */
static char *fallback_why(const struct run *r)
{
    char buf[640];

    if (r->down)
        snprintf(buf, sizeof buf,
                 "the verdict is a fallback: the model calls of %u role%s "
                 "failed (%s)",
                 r->down, r->down == 1 ? "" : "s", r->down_why);
    else
        snprintf(buf, sizeof buf,
                 "the verdict is a fallback: the model gave no usable "
                 "reply (%s)",
                 r->fb_why[0] ? r->fb_why : "no usable reply");
    return mt_strdup(buf);
}

static enum mt_status fill_result(struct run *r, struct mt_check_result *o)
{
    memset(o, 0, sizeof *o);
    o->error_flag = r->flag;
    o->sentence_id = r->sid;
    o->strategy = r->p.strategy;
    o->usage = r->u;
    o->fallback = r->fallback;
    if (r->fallback && !(o->fallback_why = fallback_why(r))) {
        mt_check_result_free(o);
        return MT_ENOMEM;
    }
    o->error_sentence = r->flag && r->sid >= 0
                            ? mt_strndup(r->sents[r->sid].p, r->sents[r->sid].n)
                            : mt_strdup("");
    o->corrected_sentence = mt_strdup(r->flag && r->corr ? r->corr : "NA");
    o->corrected_text = corrected_text(r);
    o->trace = json_dumps(r->trace, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!o->error_sentence || !o->corrected_sentence || !o->corrected_text ||
        !o->trace) {
        mt_check_result_free(o);
        return MT_ENOMEM;
    }
    return MT_OK;
}

static enum mt_status dispatch(struct run *r)
{
    return mtx_strategy_def(r->p.strategy)->run(r);
}

enum mt_status mt_agent_check(struct mt_agent *a, const struct mt_note *note,
                              struct mt_check_result *out, struct mt_error *err)
{
    return mt_agent_check_with(a, note, NULL, out, err);
}

enum mt_status mt_agent_check_with(struct mt_agent *a,
                                   const struct mt_note *note,
                                   const struct mt_agent_check_params *cp,
                                   struct mt_check_result *out,
                                   struct mt_error *err)
{
    struct run r;
    char *ce = NULL; /* the correction's evidence (issue 32) */
    enum mt_status st;

    memset(out, 0, sizeof *out);
    st = cp ? check_settings(a, cp, err) : MT_OK;
    if (st == MT_OK)
        st = check_input(a, note, err);
    if (st != MT_OK)
        return st;
    st = run_init(&r, a, note, cp, err);
    if (st == MT_OK)
        st = dispatch(&r);
    if (st == MT_OK)
        mtx_run_event(&r, MT_TRACE_VERDICT,
                      json_pack("{s:i,s:i,s:b}", "error_flag", r.flag,
                                "sentence_id", r.sid, "fallback", r.fallback));
    if (st == MT_OK && r.flag && r.sid >= 0 && !r.fallback &&
        a->p.verify_correction)
        st = mtx_check_verify_correction(&r, &ce);
    if (st == MT_OK)
        st = fill_result(&r, out);
    if (st == MT_OK)
        out->correction_evidence = ce;
    else
        mt_free(ce);
    /* a verdict that exists only because the model's calls failed or its
     * replies were unusable (after the repeat) is no answer: 'out' holds
     * the fallback, and the check fails, unless the caller allowed
     * fallbacks (then it shows out->fallback as such) */
    if (st == MT_OK && r.fallback && !r.p.allow_fallbacks)
        st = mt_fail(err, MT_EMODEL, "%s", out->fallback_why);
    if (st == MT_ENOMEM)
        mt_fail(err, st, "checker: out of memory");
    if (st == MT_ELIMIT && r.fail_why[0])
        mt_fail(err, st, "%s", r.fail_why);
    if (st == MT_ECANCELED)
        mt_fail(err, st, "the check was cancelled");
    run_free(&r);
    return st;
}

void mt_check_result_free(struct mt_check_result *r)
{
    if (!r)
        return;
    mt_free(r->error_sentence);
    mt_free(r->corrected_sentence);
    mt_free(r->corrected_text);
    mt_free(r->trace);
    mt_free(r->fallback_why);
    mt_free(r->correction_evidence);
    memset(r, 0, sizeof *r);
}

json_t *mtx_check_usage_json(const struct mt_check_usage *u)
{
    return json_pack(
        "{s:i,s:i,s:I,s:I,s:i,s:i,s:i,s:i}", "llm_calls", (int)u->llm_calls,
        "critical_calls", (int)u->critical_calls, "prompt_tokens",
        (json_int_t)u->prompt_tokens, "completion_tokens",
        (json_int_t)u->completion_tokens, "failed_calls", (int)u->failed_calls,
        "parse_failures", (int)u->parse_failures, "fallbacks",
        (int)u->fallbacks, "estimated_token_calls", (int)u->estimated_calls);
}

static uint64_t member(json_t *o, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(o, key));

    return v > 0 ? (uint64_t)v : 0;
}

void mtx_check_usage_read(json_t *o, struct mt_check_usage *u)
{
    u->llm_calls = (uint32_t)member(o, "llm_calls");
    u->critical_calls = (uint32_t)member(o, "critical_calls");
    u->prompt_tokens = member(o, "prompt_tokens");
    u->completion_tokens = member(o, "completion_tokens");
    u->failed_calls = (uint32_t)member(o, "failed_calls");
    u->parse_failures = (uint32_t)member(o, "parse_failures");
    u->fallbacks = (uint32_t)member(o, "fallbacks");
    u->estimated_calls = (uint32_t)member(o, "estimated_token_calls");
}

char *mt_check_result_json(const struct mt_check_result *r, int with_trace)
{
    json_t *o = json_pack(
        "{s:i,s:i,s:s,s:s,s:s,s:s,s:o}", "error_flag", r->error_flag,
        "error_sentence_id", r->sentence_id, "error_sentence",
        r->error_sentence ? r->error_sentence : "", "corrected_sentence",
        r->corrected_sentence ? r->corrected_sentence : "NA", "corrected_text",
        r->corrected_text ? r->corrected_text : "", "strategy",
        mt_strategy_str(r->strategy), "usage", mtx_check_usage_json(&r->usage));
    char *s;

    if (o) { /* a fallback verdict is never the model's answer */
        json_object_set_new(o, "fallback", json_boolean(r->fallback));
        if (r->fallback)
            json_object_set_new(
                o, "fallback_why",
                json_string(r->fallback_why ? r->fallback_why : ""));
    }
    if (o && r->correction_evidence) {
        json_t *ce = json_loads(r->correction_evidence, 0, NULL);

        if (ce)
            json_object_set_new(o, "correction_evidence", ce);
    }
    if (o && with_trace) {
        json_t *t = r->trace ? json_loads(r->trace, 0, NULL) : NULL;

        json_object_set_new(o, "trace_version", json_integer(MT_TRACE_VERSION));
        json_object_set_new(o, "trace", t ? t : json_array());
    }
    s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

char *mt_check_submission_line(const char *id, const struct mt_check_result *r)
{
    struct mt_buf b = MT_BUF_INIT(BLOCK_MAX);
    const char *c = r ? r->corrected_sentence : NULL;
    enum mt_status st;

    if (r && r->error_flag && r->sentence_id < 0) /* guards: not located */
        st = mtx_buf_printf(&b, "%s 1 -1 NA", id);
    else if (!r || !r->error_flag || !c || !*c)
        st = mtx_buf_printf(&b, "%s 0 -1 NA", id);
    else
        st = mtx_buf_printf(&b, "%s 1 %d ", id, r->sentence_id);
    if (st == MT_OK && r && r->error_flag && r->sentence_id >= 0 && c && *c)
        st = put_flat(&b, mtx_str_from(c));
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}
