/* Verification of (claim, cited document) pairs: the NLI classifier
 * (its spec sets the pair order and label map, src/model/nli.c) or the
 * prompted LLM judge, the closest document sentence as evidence, and the
 * overall verdict of a claim. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "qa/qa_int.h"
#include "llmcall/fit.h"
#include "llmcall/llmcall.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"
#include "model/nli.h"
#include "text/sentence.h"

#define JUDGE_TOKENS 300

static const char *const label_names[MT_QA_NLABELS] = {
    "SUPPORT", "CONTRADICT", "NO_EVIDENCE", "NO_REFERENCE", "UNVERIFIED",
};

const char *mt_qa_label_str(enum mt_qa_label l)
{
    return (unsigned)l < MT_QA_NLABELS ? label_names[l] : "UNKNOWN";
}

/* Other spellings, as the claim-verification data sets write them. */
static const struct {
    const char *name;
    enum mt_qa_label label;
} aliases[] = {
    {"supports", MT_QA_SUPPORT},
    {"supported", MT_QA_SUPPORT},
    {"entailment", MT_QA_SUPPORT},
    {"support", MT_QA_SUPPORT},
    {"refutes", MT_QA_CONTRADICT},
    {"refuted", MT_QA_CONTRADICT},
    {"contradiction", MT_QA_CONTRADICT},
    {"contradict", MT_QA_CONTRADICT},
    {"contradicts", MT_QA_CONTRADICT},
    {"nei", MT_QA_NO_EVIDENCE},
    {"neutral", MT_QA_NO_EVIDENCE},
    {"not enough info", MT_QA_NO_EVIDENCE},
    {"not_enough_info", MT_QA_NO_EVIDENCE},
    {"no_evidence", MT_QA_NO_EVIDENCE},
    {"no evidence", MT_QA_NO_EVIDENCE},
    {"no_reference", MT_QA_NO_REFERENCE},
    {"unverified", MT_QA_UNVERIFIED},
};

enum mt_status mt_qa_label_parse(const char *s, enum mt_qa_label *out)
{
    struct mt_str t = mtx_str_trim(mtx_str_from(s ? s : ""));
    size_t i;

    for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strlen(aliases[i].name) == t.n &&
            strncasecmp(aliases[i].name, t.p, t.n) == 0) {
            *out = aliases[i].label;
            return MT_OK;
        }
    }
    return MT_EINVAL;
}

enum mt_qa_label mtx_qa_from_nli(int nli_label)
{
    switch (nli_label) {
    case MT_NLI_SUPPORT:
        return MT_QA_SUPPORT;
    case MT_NLI_CONTRADICT:
        return MT_QA_CONTRADICT;
    case MT_NLI_NO_EVIDENCE:
        return MT_QA_NO_EVIDENCE;
    default:
        return MT_QA_UNVERIFIED;
    }
}

enum mt_qa_label mtx_qa_overall(const struct mt_qa_verdict *v, size_t n)
{
    /* A contradiction decides alone; a pair the verifier failed on might
     * have contradicted, so SUPPORT and NO_EVIDENCE need every verdict
     * given: a claim whose verdict was never given is UNVERIFIED. */
    static const enum mt_qa_label order[] = {
        MT_QA_CONTRADICT,
        MT_QA_UNVERIFIED,
        MT_QA_SUPPORT,
        MT_QA_NO_EVIDENCE,
    };
    size_t i, k;

    for (k = 0; k < sizeof order / sizeof order[0]; k++)
        for (i = 0; i < n; i++)
            if (v[i].label == order[k])
                return order[k];
    return MT_QA_NO_REFERENCE;
}

/* ==== One pair ==== */

static const char *const judge_keys[] = {"CLAIM", "DOCUMENT"};

/* The bytes of doc the judge's context holds after the claim, its prompt
 * and JUDGE_TOKENS: all of it while the context is unknown, else cut at
 * a sentence boundary (0: not even a sentence fits). */
static size_t judge_fit(struct qa_run *r, const char *claim, const char *doc)
{
    struct mt_buf sys = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_buf user = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_llm *l = r->q->judge_llm;
    const char *vals[2] = {claim, ""};
    uint32_t n_ctx = mt_llm_n_ctx(l);
    uint32_t fixed = 0;
    size_t keep = strlen(doc);

    if (n_ctx && mtx_llmcall_render(r->q->prompts, "qa_judge", judge_keys, vals,
                                    2, &sys, &user) == MT_OK) {
        fixed = mt_llm_count_tokens(l, sys.data, sys.len, NULL) +
                mt_llm_count_tokens(l, user.data, user.len, NULL);
        fixed += MTX_FIT_REPAIR_TOKENS(JUDGE_TOKENS) / 2; /* most repairs */
        keep = mtx_fit_cut(doc, keep,
                           mtx_fit_budget(n_ctx, JUDGE_TOKENS, fixed, 2),
                           MTX_FIT_SENTENCES, mtx_fit_count_llm, l);
    }
    mtx_buf_free(&sys);
    mtx_buf_free(&user);
    return keep;
}

static enum mt_status judge_llm(struct qa_run *r, const char *claim,
                                const char *doc, enum mt_qa_label *label,
                                float *score, char *why, size_t wn)
{
    size_t keep = judge_fit(r, claim, doc);
    char *cut = keep < strlen(doc) ? mt_strndup(doc, keep) : NULL;
    const char *vals[2] = {claim, cut ? cut : doc};
    char *reply = NULL;
    json_t *o = NULL;
    double conf = 1;
    enum mt_status st = MT_OK;

    if (keep == 0 && *doc) {
        snprintf(why, wn,
                 "the judge's context (%u tokens) has no room for the "
                 "document after the claim: raise the context (--ctx)",
                 (unsigned)mt_llm_n_ctx(r->q->judge_llm));
        st = MT_ELIMIT;
    } else if (keep < strlen(doc) && !cut) {
        st = MT_ENOMEM;
    }
    if (st == MT_OK)
        st = mtx_qa_chat(r, r->q->judge_llm, "qa_judge", judge_keys, vals, 2, 0,
                         JUDGE_TOKENS, 1, &reply, why, wn);
    mt_free(cut);

    if (st == MT_OK)
        o = mtx_reply_extract(reply, why, wn);
    if (st == MT_OK && !o)
        st = MT_EPARSE;
    if (st == MT_OK &&
        (mt_qa_label_parse(mtx_reply_str(o, "label"), label) != MT_OK ||
         *label > MT_QA_NO_EVIDENCE)) {
        snprintf(why, wn,
                 "the judge gave no SUPPORT, CONTRADICT or "
                 "NO_EVIDENCE label");
        st = MT_EPARSE;
    }
    if (st == MT_OK && mtx_reply_conf(o, "confidence", &conf) != 0)
        conf = 1;
    *score = (float)conf;
    json_decref(o);
    mt_free(reply);
    return st;
}

static enum mt_status judge_nli(struct mt_nli *nli, const char *claim,
                                const char *doc, enum mt_qa_label *label,
                                float *score, char *why, size_t wn)
{
    struct mt_error e = {MT_OK, ""};
    enum mt_nli_label l = MT_NLI_NO_EVIDENCE;
    float probs[3] = {0, 0, 0};
    enum mt_status st;

    /* the pair's order is the verifier spec's (src/model/nli.c) */
    st = mt_nli_classify(nli, claim, doc, probs, &l, &e);
    if (st != MT_OK) {
        snprintf(why, wn, "NLI classifier failed: %s",
                 e.msg[0] ? e.msg : mt_status_str(st));
        return st;
    }
    *label = mtx_qa_from_nli((int)l);
    *score = (unsigned)l < 3 ? probs[l] : 0;
    return MT_OK;
}

enum mt_status mtx_qa_judge(struct qa_run *r, const char *claim,
                            const char *doc, enum mt_qa_label *label,
                            float *score, char *why, size_t wn)
{
    enum mt_status st;

    r->res->usage.verifications++;
    if (r->q->nli)
        st = judge_nli(r->q->nli, claim, doc, label, score, why, wn);
    else
        st = judge_llm(r, claim, doc, label, score, why, wn);
    if (st != MT_OK)
        r->res->usage.verify_failures++;
    return st;
}

enum mt_status mtx_qa_evidence(struct qa_run *r, const char *claim,
                               const char *doc, const char **out,
                               struct mt_error *err)
{
    struct mt_span *sp = NULL;
    struct mt_str *t = NULL;
    float *v = NULL;
    uint32_t dims = 0;
    size_t n = 0, i, best = 0;
    enum mt_status st = mtx_sentences_split(doc, strlen(doc), &sp, &n, err);

    if (st == MT_OK && n > 0 && !(t = mt_calloc(n + 1, sizeof *t)))
        st = mt_fail(err, MT_ENOMEM, "ask: out of memory");
    for (i = 0; t && i < n; i++)
        t[i + 1] = (struct mt_str){doc + sp[i].start, sp[i].end - sp[i].start};
    if (t) {
        t[0] = mtx_str_from(claim);
        st = mtx_qa_embed(r->q, t, n + 1, &v, &dims, err);
    }
    for (i = 1; st == MT_OK && v && i < n; i++)
        if (mtx_qa_dot(v, v + (i + 1) * dims, dims) >
            mtx_qa_dot(v, v + (best + 1) * dims, dims))
            best = i;
    if (st == MT_OK && t)
        *out = mtx_qa_keep(r, t[best + 1].p, t[best + 1].n);
    mt_free(v);
    mt_free(t);
    mt_free(sp);
    return st;
}

/* ==== Claims ==== */

static long doc_index(const struct mt_qa_result *res, const char *id)
{
    size_t i;

    for (i = 0; i < res->ndocs; i++)
        if (strcmp(res->docs[i].doc_id, id) == 0)
            return (long)i;
    return -1;
}

char *mtx_qa_premise(const struct mt_qa_doc *d)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);

    if (mtx_buf_printf(&b, "%s%s%s", d->title ? d->title : "",
                       d->title ? " " : "", d->text) != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* ==== Batched pairs ==== */

/* A verdict's 'error' while judge_batched has set its label and score and
 * verify_ref has still to add the evidence sentence. */
static const char judged_in_batch[] = "judged in a batch";

/* Every claim's (claim, cited document) pairs for an onnx: classifier. */
struct qa_pairs {
    const char **claim, **prem;
    char **own;
    struct mt_qa_verdict **v;
    float (*p)[3];
    enum mt_nli_label *l;
    size_t n;
};

static void pairs_free(struct qa_pairs *b)
{
    size_t i;

    for (i = 0; b->own && i < b->n; i++)
        mt_free(b->own[i]);
    mt_free(b->claim);
    mt_free(b->prem);
    mt_free(b->own);
    mt_free(b->v);
    mt_free(b->p);
    mt_free(b->l);
}

static enum mt_status pairs_collect(struct qa_run *r, struct qa_pairs *b,
                                    size_t cap)
{
    size_t i, k;

    b->claim = mt_calloc(cap + 1, sizeof *b->claim);
    b->prem = mt_calloc(cap + 1, sizeof *b->prem);
    b->own = mt_calloc(cap + 1, sizeof *b->own);
    b->v = mt_calloc(cap + 1, sizeof *b->v);
    b->p = mt_calloc(cap + 1, sizeof *b->p);
    b->l = mt_calloc(cap + 1, sizeof *b->l);
    if (!b->claim || !b->prem || !b->own || !b->v || !b->p || !b->l)
        return MT_ENOMEM;
    for (i = 0; i < r->res->nclaims; i++) {
        struct mt_qa_claim *c = &r->res->claims[i];

        for (k = 0; k < c->nrefs; k++) {
            long d = doc_index(r->res, c->verdicts[k].doc_id);

            if (d < 0)
                continue;
            b->own[b->n] = mtx_qa_premise(&r->res->docs[d]);
            if (!b->own[b->n])
                return MT_ENOMEM;
            b->prem[b->n] = b->own[b->n];
            b->claim[b->n] = c->text;
            b->v[b->n++] = &c->verdicts[k];
        }
    }
    return MT_OK;
}

/* An onnx: classifier judges every claim's cited documents at once, as
 * padded batches (mtx_nli_classify_batch); *judged[j] marks pair j's
 * verdict as set. A failed batch sets nothing: the pairs are then judged
 * one a call (verify_ref), each failure its own. */
static enum mt_status judge_batched(struct qa_run *r, size_t cap,
                                    struct mt_error *err)
{
    struct qa_pairs b;
    struct mt_error e = {MT_OK, ""};
    size_t j;
    enum mt_status st;

    memset(&b, 0, sizeof b);
    if (!r->q->nli || !mtx_nli_batches(r->q->nli) || cap == 0)
        return MT_OK;
    st = pairs_collect(r, &b, cap);
    if (st == MT_OK && b.n > 0 &&
        mtx_nli_classify_batch(r->q->nli, b.claim, b.prem, b.n, b.p, b.l, &e) ==
            MT_OK)
        for (j = 0; j < b.n; j++) {
            r->res->usage.verifications++;
            b.v[j]->label = mtx_qa_from_nli((int)b.l[j]);
            b.v[j]->score = (unsigned)b.l[j] < 3 ? b.p[j][b.l[j]] : 0;
            b.v[j]->error = judged_in_batch; /* verify_ref clears it */
        }
    pairs_free(&b);
    return st == MT_OK ? MT_OK : mt_fail(err, st, "ask: out of memory");
}

static enum mt_status verify_ref(struct qa_run *r, const struct mt_qa_claim *c,
                                 struct mt_qa_verdict *v, struct mt_error *err)
{
    long d = doc_index(r->res, v->doc_id);
    char why[512] = "";
    char *doc;
    enum mt_status st = MT_OK;

    if (d < 0) { /* hallucinated: never shown to the verifier */
        v->label = MT_QA_NO_REFERENCE;
        return MT_OK;
    }
    if (v->error == judged_in_batch) {
        v->error = NULL;
        doc = NULL;
    } else if (!(doc = mtx_qa_premise(&r->res->docs[d]))) {
        return mt_fail(err, MT_ENOMEM, "ask: out of memory");
    } else {
        st = mtx_qa_judge(r, c->text, doc, &v->label, &v->score, why,
                          sizeof why);
    }
    mt_free(doc);
    if (st == MT_ENOMEM)
        return mt_fail(err, st, "ask: out of memory");
    if (st == MT_ECANCELED)
        return mt_fail(err, st, "the question was cancelled");
    if (st != MT_OK) {
        v->label = MT_QA_UNVERIFIED;
        v->error = mtx_qa_keep(r, why, strlen(why));
        return v->error ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (v->label == MT_QA_SUPPORT || v->label == MT_QA_CONTRADICT)
        st = mtx_qa_evidence(r, c->text, r->res->docs[d].text, &v->evidence,
                             err);
    return st == MT_ENOMEM ? st : MT_OK; /* evidence is optional */
}

/* params.on_claim with claim i's final verdicts. */
static enum mt_status report_claim(const struct qa_run *r, size_t i)
{
    const struct mt_qa_params *p = &r->p;
    char *js;

    if (!p->on_claim)
        return MT_OK;
    js = mtx_qa_claim_json(&r->res->claims[i]);
    if (!js)
        return MT_ENOMEM;
    p->on_claim(p->on_claim_user, i, r->res->nclaims, js);
    mt_free(js);
    return MT_OK;
}

enum mt_status mtx_qa_verify_claims(struct qa_run *r, struct mt_error *err)
{
    struct mt_qa_result *res = r->res;
    size_t i, k, cap = 0;
    enum mt_status st = MT_OK;

    for (i = 0; i < res->nclaims; i++) {
        struct mt_qa_claim *c = &res->claims[i];

        c->verdicts =
            mtx_arena_alloc(r->mem, (c->nrefs + 1) * sizeof *c->verdicts);
        if (!c->verdicts)
            return mt_fail(err, MT_ENOMEM, "ask: out of memory");
        memset(c->verdicts, 0, (c->nrefs + 1) * sizeof *c->verdicts);
        for (k = 0; k < c->nrefs; k++)
            c->verdicts[k].doc_id = c->refs[k];
        cap += c->nrefs;
    }
    st = judge_batched(r, cap, err);
    for (i = 0; st == MT_OK && i < res->nclaims; i++) {
        struct mt_qa_claim *c = &res->claims[i];

        for (k = 0; st == MT_OK && k < c->nrefs; k++)
            st = verify_ref(r, c, &c->verdicts[k], err);
        c->nverdicts = c->nrefs;
        c->label = mtx_qa_overall(c->verdicts, c->nverdicts);
        if (st == MT_OK && report_claim(r, i) != MT_OK)
            return mt_fail(err, MT_ENOMEM, "ask: out of memory");
    }
    if (st == MT_OK && res->usage.verify_failures)
        st = mtx_qa_note(r,
                         "the verifier failed on %u of %u (claim, "
                         "document) pairs: they are UNVERIFIED",
                         res->usage.verify_failures, res->usage.verifications);
    for (i = 0; st == MT_OK && i < res->nclaims; i++)
        r->unverified += res->claims[i].label == MT_QA_UNVERIFIED;
    return st;
}

enum mt_status mt_qa_verify(struct mt_qa *q, const char *claim,
                            const char *evidence_text, enum mt_qa_label *label,
                            float *score, struct mt_error *err)
{
    struct mt_arena mem = MT_ARENA_INIT(4096);
    struct mt_qa_result res;
    struct qa_run r = {q, &mem, &res, MT_BUF_INIT(1 << 16), 0, 0, {0}, 0};
    char why[512] = "";
    enum mt_status st;

    memset(&res, 0, sizeof res);
    r.p = q->p;
    if (!claim || !evidence_text)
        return mt_fail(err, MT_EINVAL, "verify: claim and evidence needed");
    st = mtx_qa_judge(&r, claim, evidence_text, label, score, why, sizeof why);
    mtx_buf_free(&r.notes);
    mtx_arena_free(&mem);
    if (st != MT_OK)
        return mt_fail(err, st, "%s", why[0] ? why : mt_status_str(st));
    return MT_OK;
}
