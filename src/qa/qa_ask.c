/* One question: input checks, retrieval, the referenced answer, claims
 * and their verification; the result's memory and its JSON form. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/clock.h"
#include "qa/qa_int.h"
#include "llmcall/fit.h"
#include "llmcall/llmcall.h"
#include "medtrust/core.h"
#include "medtrust/model.h"
#include "text/utf8.h"

#define DOCS_MAX ((size_t)64 << 20)

static enum mt_status check_question(const struct mt_qa *q, const char *s,
                                     struct mt_error *err)
{
    size_t n = s ? strlen(s) : 0;

    if (!q->p.db_dir || !q->answer_llm)
        return mt_fail(err, MT_EINVAL, "ask: no corpus: give --db DIR");
    if (mtx_str_trim((struct mt_str){s ? s : "", n}).n == 0)
        return mt_fail(err, MT_EINVAL, "ask: the question is empty");
    if (n > q->p.max_question_bytes)
        return mt_fail(err, MT_ELIMIT,
                       "ask: the question is %zu bytes; "
                       "the limit is %zu",
                       n, q->p.max_question_bytes);
    if (mtx_utf8_validate(s, n, NULL) != MT_OK)
        return mt_fail(err, MT_EINVAL,
                       "ask: the question is not UTF-8 "
                       "text");
    return MT_OK;
}

/* ==== The answer ==== */

/* One document's entry, "[LABEL] title\ntext\n\n", with text[0..n). */
static enum mt_status doc_entry(const struct qa_run *r,
                                const struct mt_qa_doc *d, size_t n,
                                struct mt_buf *b)
{
    return mtx_buf_printf(b, "[%s%s%s] %s\n%.*s\n\n", r->q->label_pre,
                          d->doc_id, r->q->label_suf, d->title ? d->title : "",
                          (int)n, d->text);
}

static uint32_t count(const struct qa_run *r, const struct mt_buf *b)
{
    return mt_llm_count_tokens(r->q->answer_llm, b->data ? b->data : "", b->len,
                               NULL);
}

/* Adds document d whole when it fits the tokens left (*left), else cut
 * at a sentence boundary to fit; returns 1 when no more will fit. */
static int fit_doc(struct qa_run *r, const struct mt_qa_doc *d, uint32_t *left,
                   struct mt_buf *b, enum mt_status *st)
{
    struct mt_buf e = MT_BUF_INIT(DOCS_MAX);
    size_t n = strlen(d->text);
    uint32_t t;

    *st = doc_entry(r, d, n, &e);
    t = *st == MT_OK ? count(r, &e) : 0;
    if (*st == MT_OK && t <= *left) {
        *st = mtx_buf_append(b, e.data, e.len);
        r->res->fit.docs_shown++;
        r->res->fit.bytes_shown += n;
        *left -= t;
        mtx_buf_free(&e);
        return *left == 0;
    }
    mtx_buf_reset(&e);
    if (*st == MT_OK)
        *st = doc_entry(r, d, 0, &e); /* the label and title alone */
    t = *st == MT_OK ? count(r, &e) : UINT32_MAX;
    n = t < *left ? mtx_fit_cut(d->text, n, *left - t, MTX_FIT_SENTENCES,
                                mtx_fit_count_llm, r->q->answer_llm)
                  : 0;
    mtx_buf_reset(&e);
    if (*st == MT_OK && n > 0)
        *st = doc_entry(r, d, n, &e);
    if (*st == MT_OK && n > 0) {
        *st = mtx_buf_append(b, e.data, e.len);
        r->res->fit.docs_shown++;
        r->res->fit.bytes_shown += n;
        r->res->fit.doc_cut = 1;
    }
    mtx_buf_free(&e);
    return 1;
}

/* "<documents>[LABEL] title\ntext\n\n...</documents>": whole documents in
 * rank order while they fit 'budget' tokens, the next one cut at a
 * sentence boundary, the rest left out (the model's context is known and
 * smaller than all of them); every document when budget is UINT32_MAX. */
static enum mt_status docs_block(struct qa_run *r, uint32_t budget,
                                 struct mt_buf *b)
{
    struct mt_qa_result *res = r->res;
    enum mt_status st = mtx_buf_append_str(b, "<documents>\n");
    uint32_t left = budget;
    size_t i;

    res->fit.docs_shown = res->fit.bytes_shown = res->fit.bytes = 0;
    res->fit.doc_cut = 0;
    for (i = 0; i < res->ndocs; i++)
        res->fit.bytes += strlen(res->docs[i].text);
    for (i = 0; st == MT_OK && i < res->ndocs; i++) {
        const struct mt_qa_doc *d = &res->docs[i];

        if (budget != UINT32_MAX) {
            if (fit_doc(r, d, &left, b, &st))
                break;
            continue;
        }
        st = doc_entry(r, d, strlen(d->text), b);
        res->fit.docs_shown++;
        res->fit.bytes_shown += strlen(d->text);
    }
    if (st == MT_OK)
        st = mtx_buf_append_str(b, "</documents>");
    return st;
}

/* The answer prompt's variables; vals[1] (the documents) is left NULL. */
static enum mt_status answer_vals(const struct qa_run *r, struct mt_buf *label,
                                  const char **vals)
{
    vals[0] = r->res->question;
    vals[1] = NULL;
    vals[3] = r->q->p.final_verdict
                  ? "Finish with one last line that reads 'Answer: yes', "
                    "'Answer: no' or 'Answer: maybe'."
                  : "";
    if (mtx_buf_printf(label, "%sID%s", r->q->label_pre, r->q->label_suf) !=
        MT_OK)
        return MT_ENOMEM;
    vals[2] = label->data;
    return MT_OK;
}

static const char *const answer_keys[] = {"QUESTION", "DOCUMENTS", "LABEL",
                                          "FINAL"};

/* The tokens the documents may take: the context less --max-tokens and
 * the prompt around them (rendered with no documents); UINT32_MAX while
 * the context is unknown. */
static uint32_t docs_budget(struct qa_run *r, const char **vals)
{
    struct mt_buf sys = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_buf user = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_llm *l = r->q->answer_llm;
    uint32_t n_ctx = mt_llm_n_ctx(l);
    uint32_t fixed = 0;
    enum mt_token_count how = MT_TOKENS_ESTIMATE;

    r->res->fit.ctx_tokens = n_ctx;
    vals[1] = "<documents>\n</documents>";
    if (n_ctx && mtx_llmcall_render(r->q->prompts, "qa_answer", answer_keys,
                                    vals, 4, &sys, &user) == MT_OK) {
        fixed = mt_llm_count_tokens(l, sys.data, sys.len, &how) +
                mt_llm_count_tokens(l, user.data, user.len, NULL);
        r->res->fit.counted = mt_token_count_str(how);
    }
    vals[1] = NULL;
    mtx_buf_free(&sys);
    mtx_buf_free(&user);
    r->res->fit.budget_tokens =
        mtx_fit_budget(n_ctx, r->p.max_tokens, fixed, 2);
    return r->res->fit.budget_tokens;
}

/* Says in the notes what the model's context left out. */
static enum mt_status fit_note(struct qa_run *r)
{
    const struct mt_qa_result *res = r->res;

    if (res->fit.docs_shown == res->ndocs && !res->fit.doc_cut)
        return MT_OK;
    return mtx_qa_note(
        r,
        "the answer model's context (%u tokens, %u for documents after the "
        "prompt and --max-tokens %u) held %zu of %zu documents (%zu of %zu "
        "bytes%s); the rest were left out",
        (unsigned)res->fit.ctx_tokens, (unsigned)res->fit.budget_tokens,
        (unsigned)r->p.max_tokens, res->fit.docs_shown, res->ndocs,
        res->fit.bytes_shown, res->fit.bytes,
        res->fit.doc_cut ? ", the last cut at a sentence boundary" : "");
}

/* The documents fitted to the context and the answer call; *refit is set
 * when the context was unknown before the call and a refusal taught it. */
static enum mt_status answer_once(struct qa_run *r, const char **vals,
                                  char **reply, char *why, size_t wn,
                                  int *refit)
{
    struct mt_buf docs = MT_BUF_INIT(DOCS_MAX);
    uint32_t budget = docs_budget(r, vals);
    enum mt_status st = docs_block(r, budget, &docs);

    if (st == MT_OK && budget != UINT32_MAX && r->res->fit.docs_shown == 0) {
        snprintf(why, wn,
                 "the answer model's context (%u tokens) has no room for "
                 "a document after the question and --max-tokens %u: "
                 "lower --max-tokens or raise the context (--ctx)",
                 (unsigned)r->res->fit.ctx_tokens, (unsigned)r->p.max_tokens);
        st = MT_EIO;
    } else if (st == MT_OK) {
        vals[1] = docs.data;
        st = mtx_qa_chat(r, r->q->answer_llm, "qa_answer", answer_keys, vals, 4,
                         r->q->p.temperature, r->p.max_tokens, 0, reply, why,
                         wn);
    }
    *refit = st == MT_EIO && budget == UINT32_MAX &&
             mt_llm_n_ctx(r->q->answer_llm) > 0;
    mtx_buf_free(&docs);
    return st;
}

static enum mt_status answer(struct qa_run *r)
{
    struct mt_buf label = MT_BUF_INIT(256);
    const char *vals[4];
    char why[512] = "";
    char *reply = NULL;
    int refit = 0;
    enum mt_status st = answer_vals(r, &label, vals);

    if (st == MT_OK)
        st = answer_once(r, vals, &reply, why, sizeof why, &refit);
    if (refit) { /* one retry, the prompt fitted to what the refusal said */
        st = mtx_qa_note(r,
                         "the server refused the prompt as longer than its "
                         "%u-token context: the documents were fitted to it "
                         "and the question asked again",
                         (unsigned)mt_llm_n_ctx(r->q->answer_llm));
        if (st == MT_OK)
            st = answer_once(r, vals, &reply, why, sizeof why, &refit);
    }
    if (st == MT_OK || st == MT_EIO) {
        enum mt_status sn = fit_note(r);
        st = sn != MT_OK ? sn : st;
    }
    r->answer_failed = st == MT_EIO;
    if (st == MT_EIO) /* the model failed twice: an honest empty answer */
        st = mtx_qa_note(r, "no answer: %s", why);
    r->res->answer = mtx_qa_keep(r, reply, reply ? strlen(reply) : 0);
    if (st == MT_OK && !r->res->answer)
        st = MT_ENOMEM;
    mt_free(reply);
    mtx_buf_free(&label);
    return st;
}

/* ==== The pipeline ==== */

static enum mt_status finish_notes(struct qa_run *r)
{
    const char **v = mtx_arena_alloc(r->mem, (r->nnotes + 1) * sizeof *v);
    const char *p = r->notes.data;
    size_t i;

    if (!v)
        return MT_ENOMEM;
    for (i = 0; i < r->nnotes; i++) {
        v[i] = mtx_qa_keep(r, p, strlen(p));
        if (!v[i])
            return MT_ENOMEM;
        p += strlen(p) + 1;
    }
    r->res->notes = v;
    r->res->nnotes = r->nnotes;
    return MT_OK;
}

static enum mt_status after_answer(struct qa_run *r, struct mt_error *err)
{
    struct mt_qa_result *res = r->res;
    enum mt_status st;

    if (!res->answer[0])
        return r->answer_failed
                   ? MT_OK
                   : mtx_qa_note(r, "the model returned an empty answer");
    res->final_verdict = mtx_qa_final_word(res->answer);
    st = mtx_qa_claims(r, err);
    if (st == MT_OK && res->nclaims == 0)
        st = mtx_qa_note(r, "the answer cites none of the documents: no "
                            "claim could be verified");
    if (st == MT_OK)
        st = mtx_qa_verify_claims(r, err);
    return st;
}

static enum mt_status pipeline(struct qa_run *r, const char *question,
                               struct mt_error *err)
{
    enum mt_status st;

    r->res->question = mtx_qa_keep(r, question, strlen(question));
    if (!r->res->question)
        return MT_ENOMEM;
    st = mtx_qa_retrieve(r, question, err);
    if (st != MT_OK)
        return st;
    if (r->res->ndocs == 0) {
        r->res->answer = "";
        return mtx_qa_note(r, "no document matched the question: no answer "
                              "was generated");
    }
    st = answer(r);
    if (st == MT_OK)
        st = after_answer(r, err);
    return st;
}

/* The "no answer: ..." note, which says why the model gave none. */
static const char *no_answer_note(const struct mt_qa_result *res)
{
    size_t i;

    for (i = 0; i < res->nnotes; i++)
        if (strncmp(res->notes[i], "no answer: ", 11) == 0)
            return res->notes[i];
    return "no answer: the model calls failed";
}

/* The verifier's reason on the first UNVERIFIED pair. */
static const char *unverified_why(const struct mt_qa_result *res)
{
    size_t i, k;

    for (i = 0; i < res->nclaims; i++)
        for (k = 0; k < res->claims[i].nverdicts; k++)
            if (res->claims[i].verdicts[k].label == MT_QA_UNVERIFIED &&
                res->claims[i].verdicts[k].error)
                return res->claims[i].verdicts[k].error;
    return "no reason given";
}

void mt_qa_ask_default_params(const struct mt_qa *q,
                              struct mt_qa_ask_params *ap)
{
    ap->k = q->p.k;
    ap->w_lex = q->p.w_lex;
    ap->w_sem = q->p.w_sem;
    ap->source = q->p.source;
    ap->year_from = q->p.year_from;
    ap->year_to = q->p.year_to;
    ap->author = q->p.author;
    ap->journal = q->p.journal;
    ap->pub_type = q->p.pub_type;
    ap->search_mode = q->p.search_mode;
    ap->on_claim = q->p.on_claim;
    ap->on_claim_user = q->p.on_claim_user;
    ap->cancelled = q->p.cancelled;
    ap->cancelled_user = q->p.cancelled_user;
    ap->on_answer_token = q->p.on_answer_token;
    ap->on_answer_token_user = q->p.on_answer_token_user;
}

/* The handle's params with the question's settings in r->p. */
static enum mt_status run_params(struct qa_run *r,
                                 const struct mt_qa_ask_params *ap,
                                 struct mt_error *err)
{
    r->p = r->q->p;
    if (!ap)
        return MT_OK;
    if (ap->k == 0 || ap->k > 1000)
        return mt_fail(err, MT_EINVAL, "ask: k must be in 1..1000");
    r->p.k = ap->k;
    r->p.w_lex = ap->w_lex;
    r->p.w_sem = ap->w_sem;
    r->p.source = ap->source;
    r->p.year_from = ap->year_from;
    r->p.year_to = ap->year_to;
    r->p.author = ap->author;
    r->p.journal = ap->journal;
    r->p.pub_type = ap->pub_type;
    r->p.search_mode = ap->search_mode;
    r->p.on_claim = ap->on_claim;
    r->p.on_claim_user = ap->on_claim_user;
    r->p.cancelled = ap->cancelled;
    r->p.cancelled_user = ap->cancelled_user;
    r->p.on_answer_token = ap->on_answer_token;
    r->p.on_answer_token_user = ap->on_answer_token_user;
    return MT_OK;
}

enum mt_status mt_qa_ask(struct mt_qa *q, const char *question,
                         struct mt_qa_result **out, struct mt_error *err)
{
    return mt_qa_ask_with(q, question, NULL, out, err);
}

enum mt_status mt_qa_ask_with(struct mt_qa *q, const char *question,
                              const struct mt_qa_ask_params *ap,
                              struct mt_qa_result **out, struct mt_error *err)
{
    struct mt_arena *mem;
    struct qa_run r = {q, NULL, NULL, MT_BUF_INIT((size_t)1 << 20),
                       0, 0,    {0},  0};
    double t0 = mtx_clock_now();
    enum mt_status st = check_question(q, question, err);

    *out = NULL;
    if (st == MT_OK)
        st = run_params(&r, ap, err);
    if (st != MT_OK)
        return st;
    mem = mt_calloc(1, sizeof *mem);
    if (!mem)
        return mt_fail(err, MT_ENOMEM, "ask: out of memory");
    *mem = MT_ARENA_INIT(64 * 1024);
    r.mem = mem;
    r.res = mtx_arena_alloc(mem, sizeof *r.res);
    st = r.res ? MT_OK : MT_ENOMEM;
    if (st == MT_OK) {
        memset(r.res, 0, sizeof *r.res);
        r.res->mem_ = mem;
        r.res->search = "bm25";
        if (q->nli && mt_nli_describe(q->nli))
            r.res->verifier = mtx_qa_keep(&r, mt_nli_describe(q->nli),
                                          strlen(mt_nli_describe(q->nli)));
        st = pipeline(&r, question, err);
    }
    if (st == MT_OK)
        st = finish_notes(&r);
    mtx_buf_free(&r.notes);
    if (st != MT_OK) {
        mtx_arena_free(mem);
        mt_free(mem);
        if (st == MT_ECANCELED)
            return mt_fail(err, st, "the question was cancelled");
        return st == MT_ENOMEM ? mt_fail(err, st, "ask: out of memory") : st;
    }
    r.res->usage.seconds = mtx_clock_now() - t0;
    *out = r.res;
    if (r.answer_failed) /* the empty result is kept; it is no answer */
        return mt_fail(err, MT_EMODEL, "%s", no_answer_note(r.res));
    if (r.unverified) /* the result is kept; its verdicts are not given */
        return mt_fail(err, MT_EMODEL,
                       "%zu of %zu claims were never verified (the "
                       "verifier failed: %s): they are UNVERIFIED, not "
                       "SUPPORT or NO_EVIDENCE",
                       r.unverified, r.res->nclaims, unverified_why(r.res));
    return MT_OK;
}

void mt_qa_result_free(struct mt_qa_result *r)
{
    struct mt_arena *mem;

    if (!r)
        return;
    mem = r->mem_;
    mtx_arena_free(mem); /* r lives in the arena */
    mt_free(mem);
}

/* ==== JSON ==== */

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *verdict_json(const struct mt_qa_verdict *v)
{
    json_t *o = json_pack("{s:s,s:s,s:f,s:o}", "doc_id", v->doc_id, "label",
                          mt_qa_label_str(v->label), "score", (double)v->score,
                          "evidence_sentence", str_or_null(v->evidence));

    if (o && v->error)
        json_object_set_new(o, "error", json_string(v->error));
    return o;
}

static json_t *claim_json(const struct mt_qa_claim *c)
{
    json_t *refs = json_array();
    json_t *vs = json_array();
    size_t i;

    for (i = 0; i < c->nrefs; i++)
        json_array_append_new(refs, json_string(c->refs[i]));
    for (i = 0; i < c->nverdicts; i++)
        json_array_append_new(vs, verdict_json(&c->verdicts[i]));
    return json_pack("{s:s,s:o,s:o,s:s}", "text", c->text, "refs", refs,
                     "verdicts", vs, "label", mt_qa_label_str(c->label));
}

char *mtx_qa_claim_json(const struct mt_qa_claim *c)
{
    json_t *o = claim_json(c);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    json_decref(o);
    return s;
}

static json_t *usage_json(const struct mt_qa_usage *u)
{
    return json_pack("{s:i,s:i,s:I,s:I,s:i,s:i,s:i,s:f}", "llm_calls",
                     (int)u->llm_calls, "failed_calls", (int)u->failed_calls,
                     "prompt_tokens", (json_int_t)u->prompt_tokens,
                     "completion_tokens", (json_int_t)u->completion_tokens,
                     "estimated_token_calls", (int)u->estimated_calls,
                     "verifications", (int)u->verifications, "verify_failures",
                     (int)u->verify_failures, "seconds", u->seconds);
}

/* Every sentence of the answer in order: its claim's index and verdict,
 * or "UNREFERENCED" (VerifAI shows uncited sentences so). */
static json_t *sentences_json(const struct mt_qa_result *r)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < r->nsentences; i++) {
        const struct mt_qa_sentence *t = &r->sentences[i];
        int in = t->claim >= 0 && (size_t)t->claim < r->nclaims;

        json_array_append_new(
            a, json_pack("{s:s,s:o,s:s}", "text", t->text, "claim",
                         in ? json_integer(t->claim) : json_null(), "status",
                         in ? mt_qa_label_str(r->claims[t->claim].label)
                            : "UNREFERENCED"));
    }
    return a;
}

#define DOC_PREVIEW 400 /* bytes of a titleless document's text shown */

/* One document of the answer; one without a title (PubMedQA's abstracts)
 * also gets "preview", its text's opening, for the page to show as its
 * title and on hover. */
static json_t *doc_json(const struct mt_qa_doc *d)
{
    json_t *o = json_pack("{s:s,s:o,s:f,s:o}", "doc_id", d->doc_id, "title",
                          str_or_null(d->title), "score", d->score, "url",
                          str_or_null(d->url));
    size_t n = d->text ? strlen(d->text) : 0;

    if (o && !d->title && n)
        json_object_set_new(
            o, "preview",
            json_stringn(d->text, mtx_utf8_cut(d->text, n, DOC_PREVIEW)));
    return o;
}

/* What the answer model was shown of the documents (mt_qa_result.fit):
 * null when the context was unknown and everything was shown. */
static json_t *fit_json(const struct mt_qa_result *r)
{
    if (!r->fit.ctx_tokens)
        return json_null();
    return json_pack("{s:I,s:I,s:I,s:I,s:b,s:I,s:I,s:s?}", "ctx_tokens",
                     (json_int_t)r->fit.ctx_tokens, "budget_tokens",
                     (json_int_t)r->fit.budget_tokens, "documents_shown",
                     (json_int_t)r->fit.docs_shown, "documents",
                     (json_int_t)r->ndocs, "last_cut", r->fit.doc_cut,
                     "bytes_shown", (json_int_t)r->fit.bytes_shown, "bytes",
                     (json_int_t)r->fit.bytes, "counted", r->fit.counted);
}

static json_t *lists_json(const struct mt_qa_result *r, json_t *o)
{
    json_t *claims = json_array();
    json_t *docs = json_array();
    json_t *notes = json_array();
    size_t i;

    for (i = 0; i < r->nclaims; i++)
        json_array_append_new(claims, claim_json(&r->claims[i]));
    for (i = 0; i < r->ndocs; i++)
        json_array_append_new(docs, doc_json(&r->docs[i]));
    for (i = 0; i < r->nnotes; i++)
        json_array_append_new(notes, json_string(r->notes[i]));
    json_object_set_new(o, "claims", claims);
    json_object_set_new(o, "sentences", sentences_json(r));
    json_object_set_new(o, "documents", docs);
    json_object_set_new(o, "search", json_string(r->search));
    json_object_set_new(o, "final_verdict", str_or_null(r->final_verdict));
    if (r->verifier) /* the trace says how the classifier's labels map */
        json_object_set_new(o, "verifier", json_string(r->verifier));
    json_object_set_new(o, "notes", notes);
    json_object_set_new(o, "usage", usage_json(&r->usage));
    json_object_set_new(o, "context", fit_json(r));
    return o;
}

char *mt_qa_result_json(const struct mt_qa_result *r)
{
    json_t *o =
        json_pack("{s:s,s:s}", "question", r->question, "answer", r->answer);
    char *s =
        o ? json_dumps(lists_json(r, o), JSON_COMPACT | JSON_PRESERVE_ORDER)
          : NULL;

    json_decref(o);
    return s;
}
