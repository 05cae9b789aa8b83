/* `medtrust verify`: a text checked sentence by sentence. Each sentence
 * that states something is a claim (or, with decompose, several); the
 * documents it cites are looked up and its quotes checked verbatim first,
 * then the cited documents and the top k of a hybrid search are judged by
 * the answerer's verifier, and the rule of docs/verify.md gives the
 * verdict. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"
#include "medtrust/retrieve.h"
#include "model/nli.h"
#include "qa/verify_int.h"
#include "text/utf8.h"

#define QUOTE_DOC_MAX                                                          \
    ((size_t)16 << 20) /* bytes of a cited document read                       \
                          for its quotes */
#define DECOMPOSE_TOKENS 512
#define DECOMPOSE_MAX 16 /* atomic claims kept per sentence */

/* A document a claim is judged against. */
struct vdoc {
    const char *doc_id;
    const char *title;
    const char *url;
    const char *text; /* what the verifier reads (doc_chars) */
    const char *full; /* the whole text, for quotes (cited only) */
};

/* One text in flight. */
struct vrun {
    struct qa_run r;          /* r.mem: the result's arena */
    struct mt_qa_result qres; /* the current search's documents, usage */
    struct mt_verify_params vp;
    struct mt_verify_result *res;
    const char *text;
    size_t tn;
    size_t failed; /* FAILED claims */
    int whole;     /* the text is one claim (mt_verify_claim) */
};

/* The answerer's search settings a verification starts from. */
static void search_of(const struct mt_qa_params *p, struct mt_verify_params *vp)
{
    vp->w_lex = p->w_lex;
    vp->w_sem = p->w_sem;
    vp->source = p->source;
    vp->year_from = p->year_from;
    vp->year_to = p->year_to;
    vp->author = p->author;
    vp->journal = p->journal;
    vp->pub_type = p->pub_type;
    vp->search_mode = p->search_mode;
}

void mt_verify_default_params(const struct mt_qa *q,
                              struct mt_verify_params *vp)
{
    struct mt_qa_params d;

    memset(vp, 0, sizeof *vp);
    if (!q)
        mt_qa_default_params(&d);
    search_of(q ? &q->p : &d, vp);
    vp->k = 5;
    vp->support_min = 0.5f;
    vp->contradict_min = 0.5f;
    vp->min_words = 4;
    vp->search_cited = 1;
    vp->max_text_bytes = (size_t)1 << 20;
}

/* ==== The rule ==== */

static void best_of(const struct mt_verify_evidence *ev, size_t n,
                    enum mt_verdict l, float min, long *by)
{
    size_t i;

    *by = -1;
    for (i = 0; i < n; i++)
        if (ev[i].label == l && ev[i].score >= min &&
            (*by < 0 || ev[i].score > ev[*by].score))
            *by = (long)i;
}

enum mt_verdict mtx_vf_decide(const struct mt_verify_evidence *ev, size_t n,
                              float support_min, float contradict_min, long *by)
{
    size_t i;

    best_of(ev, n, MT_VERDICT_CONTRADICT, contradict_min, by);
    if (*by >= 0)
        return MT_VERDICT_CONTRADICT;
    for (i = 0; i < n; i++)
        if (ev[i].label == MT_VERDICT_FAILED) {
            *by = -1;
            return MT_VERDICT_FAILED; /* it might have contradicted */
        }
    best_of(ev, n, MT_VERDICT_SUPPORT, support_min, by);
    return *by >= 0 ? MT_VERDICT_SUPPORT : MT_VERDICT_NO_EVIDENCE;
}

/* ==== Judging one document ==== */

static int cancelled(const struct vrun *v)
{
    return v->vp.cancelled && v->vp.cancelled(v->vp.cancelled_user);
}

static char *keep(struct vrun *v, const char *s)
{
    return s ? mtx_qa_keep(&v->r, s, strlen(s)) : NULL;
}

static enum mt_verdict from_qa(enum mt_qa_label l)
{
    return l == MT_QA_SUPPORT      ? MT_VERDICT_SUPPORT
           : l == MT_QA_CONTRADICT ? MT_VERDICT_CONTRADICT
                                   : MT_VERDICT_NO_EVIDENCE;
}

static enum mt_status judge_doc(struct vrun *v, const char *claim,
                                const struct vdoc *d,
                                struct mt_verify_evidence *e,
                                struct mt_error *err)
{
    struct mt_qa_doc qd = {d->doc_id, d->title, d->text, 0, d->url};
    enum mt_qa_label l = MT_QA_NO_EVIDENCE;
    char why[512] = "";
    char *prem = mtx_qa_premise(&qd);
    enum mt_status st;

    e->doc_id = d->doc_id;
    e->title = d->title;
    e->url = d->url;
    e->text = d->text;
    if (!prem)
        return mt_fail(err, MT_ENOMEM, "verify: out of memory");
    st = cancelled(v)
             ? MT_ECANCELED
             : mtx_qa_judge(&v->r, claim, prem, &l, &e->score, why, sizeof why);
    mt_free(prem);
    if (st == MT_ENOMEM || st == MT_ECANCELED)
        return mt_fail(err, st, "%s",
                       st == MT_ENOMEM ? "verify: out of memory"
                                       : "the verification was cancelled");
    if (st != MT_OK) {
        e->label = MT_VERDICT_FAILED;
        e->score = 0;
        e->error = keep(v, why[0] ? why : mt_status_str(st));
        return e->error ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    }
    e->label = from_qa(l);
    if (e->label == MT_VERDICT_NO_EVIDENCE)
        return MT_OK;
    st = mtx_qa_evidence(&v->r, claim, d->text, &e->sentence, err);
    return st == MT_ENOMEM ? st : MT_OK; /* the sentence is optional */
}

/* ==== Cited documents ==== */

/* One claim being judged: its evidence and the documents behind it. */
struct vclaim {
    struct mt_verify_claim *c;
    struct vdoc *docs; /* docs[i] behind c->evidence[i] (NULL ids: none) */
    size_t cap;
};

static enum mt_status add_cited(struct vrun *v, const struct vf_cite *ct,
                                struct vclaim *vc, struct mt_error *err)
{
    struct mt_verify_evidence *e = &vc->c->evidence[vc->c->nevidence];
    struct vdoc *d = &vc->docs[vc->c->nevidence];
    struct mt_retrieved_doc rd;
    enum mt_status st = mt_retriever_lookup(v->r.q->ret, ct->field, ct->key,
                                            QUOTE_DOC_MAX, &rd, err);

    memset(e, 0, sizeof *e);
    memset(d, 0, sizeof *d);
    e->cited = 1;
    if (st == MT_ENOTFOUND) { /* a citation the store cannot back */
        e->doc_id = ct->key;
        e->label = MT_VERDICT_NO_REFERENCE;
        vc->c->nevidence++;
        return MT_OK;
    }
    if (st != MT_OK)
        return st;
    d->doc_id = keep(v, rd.doc_id);
    d->title = keep(v, rd.title);
    d->url = keep(v, rd.url);
    d->full = keep(v, rd.text);
    d->text = d->full ? mtx_qa_keep(&v->r, d->full,
                                    mtx_utf8_cut(d->full, strlen(d->full),
                                                 v->r.q->p.doc_chars))
                      : NULL;
    mt_retrieved_doc_free(&rd);
    if (!d->doc_id || !d->full || !d->text || (rd.title && !d->title))
        return mt_fail(err, MT_ENOMEM, "verify: out of memory");
    e->doc_id = d->doc_id;
    vc->c->nevidence++;
    return MT_OK;
}

/* Each quote against the cited documents: the best finding of any. */
static int quotes_hold(struct vrun *v, const struct vf_sent *ps,
                       struct vclaim *vc)
{
    struct mt_verify_claim *c = vc->c;
    size_t i, k;
    int ok = 1;

    for (i = 0; i < ps->nquotes; i++) {
        struct mt_verify_quote *q = &c->quotes[c->nquotes++];

        q->text = ps->quotes[i];
        q->status = MT_QUOTE_NOT_FOUND;
        for (k = 0; k < c->nevidence && q->status != MT_QUOTE_FOUND; k++) {
            enum mt_quote_status s;

            if (!vc->docs[k].full)
                continue;
            s = mtx_vf_quote(q->text, vc->docs[k].full);
            if (!q->doc_id || s == MT_QUOTE_FOUND ||
                (s == MT_QUOTE_STITCHED && q->status == MT_QUOTE_NOT_FOUND)) {
                q->status = s;
                q->doc_id = vc->docs[k].doc_id;
            }
        }
        ok &= q->status == MT_QUOTE_FOUND;
    }
    (void)v;
    return ok;
}

/* ==== Searched documents ==== */

static int has_doc(const struct vclaim *vc, const char *id)
{
    size_t i;

    for (i = 0; i < vc->c->nevidence; i++)
        if (vc->c->evidence[i].doc_id &&
            strcmp(vc->c->evidence[i].doc_id, id) == 0)
            return 1;
    return 0;
}

static enum mt_status search_docs(struct vrun *v, const char *claim,
                                  struct vclaim *vc, struct mt_error *err)
{
    struct mt_qa_result *qr = &v->qres;
    size_t i;
    enum mt_status st;

    qr->docs = NULL;
    qr->ndocs = 0;
    st = mtx_qa_retrieve(&v->r, claim, err);
    v->res->search = qr->search;
    for (i = 0; st == MT_OK && i < qr->ndocs; i++) {
        const struct mt_qa_doc *q = &qr->docs[i];
        struct vdoc *d = &vc->docs[vc->c->nevidence];

        if (has_doc(vc, q->doc_id) || vc->c->nevidence == vc->cap)
            continue;
        *d = (struct vdoc){q->doc_id, q->title, q->url, q->text, NULL};
        memset(&vc->c->evidence[vc->c->nevidence], 0, sizeof *vc->c->evidence);
        vc->c->nevidence++;
    }
    return st;
}

/* Pairs of one claim an onnx: classifier judges in one batched call. */
#define VF_BATCH_MAX 64

/* Evidence i from the batch's label l and probabilities p, as judge_doc
 * sets it from mtx_qa_judge's. */
static enum mt_status batch_fill(struct vrun *v, struct vclaim *vc, size_t i,
                                 enum mt_nli_label l, const float p[3],
                                 struct mt_error *err)
{
    struct mt_verify_evidence *e = &vc->c->evidence[i];
    const struct vdoc *d = &vc->docs[i];
    enum mt_status st;

    v->r.res->usage.verifications++;
    e->doc_id = d->doc_id;
    e->title = d->title;
    e->url = d->url;
    e->text = d->text;
    e->score = (unsigned)l < 3 ? p[l] : 0;
    e->label = from_qa(mtx_qa_from_nli((int)l));
    if (e->label == MT_VERDICT_NO_EVIDENCE)
        return MT_OK;
    st = mtx_qa_evidence(&v->r, vc->c->text, d->text, &e->sentence, err);
    return st == MT_ENOMEM ? st : MT_OK; /* the sentence is optional */
}

/* An onnx: classifier's pairs, the claim against each document from
 * 'from' on, as padded batches (mtx_nli_classify_batch): *done 1 when
 * judged so; 0 (nothing set) when the batch failed or does not apply,
 * and the documents are judged one a call, each failure its own. */
static enum mt_status judge_batched(struct vrun *v, struct vclaim *vc,
                                    size_t from, int *done,
                                    struct mt_error *err)
{
    const char *cl[VF_BATCH_MAX], *prem[VF_BATCH_MAX];
    char *own[VF_BATCH_MAX];
    size_t at[VF_BATCH_MAX], m = 0, i;
    float p[VF_BATCH_MAX][3];
    enum mt_nli_label l[VF_BATCH_MAX];
    struct mt_error e = {MT_OK, ""};
    enum mt_status st = MT_OK;

    *done = 0;
    if (!mtx_nli_batches(v->r.q->nli) || cancelled(v))
        return MT_OK;
    for (i = from; st == MT_OK && i < vc->c->nevidence; i++) {
        struct mt_qa_doc qd = {vc->docs[i].doc_id, vc->docs[i].title,
                               vc->docs[i].text, 0, vc->docs[i].url};

        if (!vc->docs[i].doc_id)
            continue;
        if (m == VF_BATCH_MAX)
            break;
        cl[m] = vc->c->text;
        at[m] = i;
        own[m] = mtx_qa_premise(&qd);
        prem[m] = own[m];
        st = own[m++] ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (st == MT_OK && i == vc->c->nevidence && m > 0 &&
        mtx_nli_classify_batch(v->r.q->nli, cl, prem, m, p, l, &e) == MT_OK) {
        *done = 1;
        for (i = 0; st == MT_OK && i < m; i++)
            st = batch_fill(v, vc, at[i], l[i], p[i], err);
    }
    for (i = 0; i < m; i++)
        mt_free(own[i]);
    return st;
}

/* Judges the documents from evidence 'from' on. */
static enum mt_status judge_from(struct vrun *v, struct vclaim *vc, size_t from,
                                 struct mt_error *err)
{
    size_t i;
    int done = 0;
    enum mt_status st = judge_batched(v, vc, from, &done, err);

    if (st != MT_OK || done)
        return st;
    for (i = from; st == MT_OK && i < vc->c->nevidence; i++)
        if (vc->docs[i].doc_id)
            st = judge_doc(v, vc->c->text, &vc->docs[i], &vc->c->evidence[i],
                           err);
    return st;
}

/* ==== One claim ==== */

static enum mt_status claim_init(struct vrun *v, const struct vf_sent *ps,
                                 struct vclaim *vc)
{
    struct mt_verify_claim *c = vc->c;
    const char **cites =
        mtx_arena_alloc(v->r.mem, (ps->ncites + 1) * sizeof *cites);
    size_t i;

    vc->cap = ps->ncites + v->vp.k + 1;
    c->evidence = mtx_arena_alloc(v->r.mem, vc->cap * sizeof *c->evidence);
    c->quotes =
        mtx_arena_alloc(v->r.mem, (ps->nquotes + 1) * sizeof *c->quotes);
    vc->docs = mt_calloc(vc->cap, sizeof *vc->docs);
    if (!c->evidence || !c->quotes || !cites || !vc->docs)
        return MT_ENOMEM;
    memset(c->quotes, 0, (ps->nquotes + 1) * sizeof *c->quotes);
    for (i = 0; i < ps->ncites; i++)
        cites[i] = ps->cites[i].key;
    c->cites = cites;
    c->ncites = ps->ncites;
    c->decided_by = -1;
    return MT_OK;
}

/* The cited documents first: looked up, quotes checked, judged. Returns
 * 1 in *done when they decide the claim. */
static enum mt_status cited_first(struct vrun *v, const struct vf_sent *ps,
                                  struct vclaim *vc, int *done,
                                  struct mt_error *err)
{
    struct mt_verify_claim *c = vc->c;
    size_t i, known = 0;
    enum mt_status st = MT_OK;

    *done = 0;
    for (i = 0; st == MT_OK && i < ps->ncites; i++)
        st = add_cited(v, &ps->cites[i], vc, err);
    for (i = 0; i < c->nevidence; i++)
        known += vc->docs[i].doc_id != NULL;
    if (st != MT_OK || ps->ncites == 0)
        return st;
    if (known == 0) {
        c->verdict = MT_VERDICT_NO_REFERENCE;
        *done = 1;
        return MT_OK;
    }
    if (!quotes_hold(v, ps, vc)) { /* before any model is asked */
        c->verdict = MT_VERDICT_MISQUOTED;
        *done = 1;
        for (i = known = 0; i < c->nevidence; i++) /* none was judged */
            if (!vc->docs[i].doc_id)
                c->evidence[known++] = c->evidence[i];
        c->nevidence = known;
        return MT_OK;
    }
    st = judge_from(v, vc, 0, err);
    c->verdict = mtx_vf_decide(c->evidence, c->nevidence, v->vp.support_min,
                               v->vp.contradict_min, &c->decided_by);
    *done = c->verdict != MT_VERDICT_NO_EVIDENCE || !v->vp.search_cited;
    return st;
}

static enum mt_status judge_claim(struct vrun *v, const struct vf_sent *ps,
                                  struct mt_verify_claim *c,
                                  struct mt_error *err)
{
    struct vclaim vc = {c, NULL, 0};
    size_t from;
    int done = 0;
    enum mt_status st = claim_init(v, ps, &vc);

    if (st != MT_OK) {
        mt_free(vc.docs);
        return mt_fail(err, st, "verify: out of memory");
    }
    st = cited_first(v, ps, &vc, &done, err);
    from = c->nevidence;
    if (st == MT_OK && !done)
        st = search_docs(v, c->text, &vc, err);
    if (st == MT_OK && !done)
        st = judge_from(v, &vc, from, err);
    if (st == MT_OK && !done)
        c->verdict = mtx_vf_decide(c->evidence, c->nevidence, v->vp.support_min,
                                   v->vp.contradict_min, &c->decided_by);
    for (from = 0; st == MT_OK && c->verdict == MT_VERDICT_FAILED &&
                   !c->error && from < c->nevidence;
         from++)
        c->error = c->evidence[from].error; /* the first failure's why */
    mt_free(vc.docs);
    return st;
}

/* ==== Decomposition (FActScore) ==== */

static struct mt_llm *decompose_llm(const struct mt_qa *q)
{
    return q->answer_llm ? q->answer_llm : q->judge_llm;
}

/* The atomic claims of one sentence, from the model's {"claims":[...]}. */
static enum mt_status read_claims(struct vrun *v, const char *reply,
                                  const char **out, size_t *n, char *why,
                                  size_t wn)
{
    json_t *o = mtx_reply_extract(reply, why, wn);
    json_t *a = json_object_get(o, "claims");
    size_t i;
    enum mt_status st = json_is_array(a) ? MT_OK : MT_EPARSE;

    if (o && st != MT_OK)
        snprintf(why, wn, "the reply has no \"claims\" array");
    *n = 0;
    for (i = 0; st == MT_OK && i < json_array_size(a) && *n < DECOMPOSE_MAX;
         i++) {
        const char *s = json_string_value(json_array_get(a, i));

        if (!s || mtx_str_trim(mtx_str_from(s)).n == 0)
            continue;
        out[*n] = keep(v, s);
        st = out[(*n)++] ? MT_OK : MT_ENOMEM;
    }
    json_decref(o);
    return o ? st : MT_EPARSE;
}

static enum mt_status decompose(struct vrun *v, const char *sentence,
                                const char **out, size_t *n, char *why,
                                size_t wn)
{
    static const char *const keys[] = {"SENTENCE"};
    const char *vals[1] = {sentence};
    char *reply = NULL;
    enum mt_status st;

    if (cancelled(v))
        return MT_ECANCELED;
    st = mtx_qa_chat(&v->r, decompose_llm(v->r.q), "verify_decompose", keys,
                     vals, 1, 0, DECOMPOSE_TOKENS, 1, &reply, why, wn);
    if (st == MT_OK)
        st = read_claims(v, reply, out, n, why, wn);
    mt_free(reply);
    return st;
}

/* ==== One sentence ==== */

static enum mt_status report(struct vrun *v, size_t si, size_t ci)
{
    json_t *o;
    char *js;

    if (!v->vp.on_claim)
        return MT_OK;
    o = mtx_vf_claim_json(&v->res->sentences[si].claims[ci]);
    js = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!js)
        return MT_ENOMEM;
    v->vp.on_claim(v->vp.on_claim_user, si, ci, v->res->nsentences, js);
    mt_free(js);
    return MT_OK;
}

/* The claims of a claim sentence: its text, or the model's atomic claims
 * (a failed decomposition is one FAILED claim). */
static enum mt_status sentence_claims(struct vrun *v, const struct vf_sent *ps,
                                      struct mt_verify_sentence *s,
                                      const char **texts, const char **fail,
                                      struct mt_error *err)
{
    char why[512] = "";
    size_t n = 0;
    enum mt_status st = MT_OK;

    *fail = NULL;
    if (v->vp.decompose)
        st = decompose(v, ps->text, texts, &n, why, sizeof why);
    if (st == MT_ENOMEM || st == MT_ECANCELED)
        return mt_fail(err, st, "%s",
                       st == MT_ENOMEM ? "verify: out of memory"
                                       : "the verification was cancelled");
    if (st != MT_OK) {
        *fail = keep(v, why[0] ? why : mt_status_str(st));
        n = 0;
    }
    if (n == 0)
        texts[n++] = ps->text;
    s->claims = mtx_arena_alloc(v->r.mem, n * sizeof *s->claims);
    if (!s->claims)
        return mt_fail(err, MT_ENOMEM, "verify: out of memory");
    memset(s->claims, 0, n * sizeof *s->claims);
    s->nclaims = n;
    return MT_OK;
}

static int worse(enum mt_verdict a, enum mt_verdict b)
{
    static const int rank[MT_VERDICT_N] = {0, 5, 1, 2, 4, 3, -1};

    return rank[a] > rank[b];
}

static enum mt_status one_claim(struct vrun *v, const struct vf_sent *ps,
                                size_t si, size_t ci, const char *fail,
                                struct mt_error *err)
{
    struct mt_verify_sentence *s = &v->res->sentences[si];
    struct mt_verify_claim *c = &s->claims[ci];
    enum mt_status st = MT_OK;

    if (fail) { /* the decomposition failed: so does the claim */
        c->decided_by = -1;
        c->verdict = MT_VERDICT_FAILED;
        c->error = fail;
    } else {
        st = judge_claim(v, ps, c, err);
    }
    if (st != MT_OK)
        return st;
    v->res->counts[c->verdict]++;
    v->failed += c->verdict == MT_VERDICT_FAILED;
    if (ci == 0 || worse(c->verdict, s->status))
        s->status = c->verdict;
    return report(v, si, ci) == MT_OK
               ? MT_OK
               : mt_fail(err, MT_ENOMEM, "verify: out of memory");
}

static enum mt_status one_sentence(struct vrun *v, size_t si,
                                   struct mt_error *err)
{
    struct mt_verify_sentence *s = &v->res->sentences[si];
    const char *texts[DECOMPOSE_MAX + 1];
    const char *fail = NULL;
    struct vf_sent ps = {NULL, NULL, 0, NULL, 0};
    size_t i;
    enum mt_status st;

    st = mtx_vf_parse(v->r.mem, s->text, strlen(s->text), v->r.q->label_pre,
                      v->r.q->label_suf, &ps);
    if (st != MT_OK)
        return mt_fail(err, st, "verify: out of memory");
    if (!v->whole && (!mtx_vf_is_claim(v->text, v->tn, v->text + s->start,
                                       s->end - s->start, v->vp.min_words) ||
                      !mtx_vf_is_claim(ps.text, strlen(ps.text), ps.text,
                                       strlen(ps.text), v->vp.min_words))) {
        s->status = MT_VERDICT_NOT_A_CLAIM;
        v->res->counts[MT_VERDICT_NOT_A_CLAIM]++;
        return MT_OK;
    }
    st = sentence_claims(v, &ps, s, texts, &fail, err);
    for (i = 0; st == MT_OK && i < s->nclaims; i++) {
        s->claims[i].text = texts[i];
        st = one_claim(v, &ps, si, i, fail, err);
    }
    return st;
}

/* ==== The text ==== */

static enum mt_status check_text(const struct mt_qa *q, const char *text,
                                 const struct mt_verify_params *vp,
                                 struct mt_error *err)
{
    size_t n = text ? strlen(text) : 0;

    if (!q->p.db_dir)
        return mt_fail(err, MT_EINVAL, "verify: no corpus: give --db DIR");
    if (vp->decompose && !decompose_llm(q))
        return mt_fail(err, MT_EINVAL,
                       "verify: --decompose needs a chat model: give --llm "
                       "SPEC (or MEDTRUST_LLM)");
    if (mtx_str_trim((struct mt_str){text ? text : "", n}).n == 0)
        return mt_fail(err, MT_EINVAL, "verify: the text is empty");
    if (n > vp->max_text_bytes)
        return mt_fail(err, MT_ELIMIT,
                       "verify: the text is %zu bytes; the limit is %zu", n,
                       vp->max_text_bytes);
    if (mtx_utf8_validate(text, n, NULL) != MT_OK)
        return mt_fail(err, MT_EINVAL, "verify: the text is not UTF-8");
    return MT_OK;
}

/* The answerer's settings with this text's search settings. */
static void run_params(struct vrun *v)
{
    struct mt_qa_params *p = &v->r.p;

    *p = v->r.q->p;
    p->k = v->vp.k;
    p->w_lex = v->vp.w_lex;
    p->w_sem = v->vp.w_sem;
    p->source = v->vp.source;
    p->year_from = v->vp.year_from;
    p->year_to = v->vp.year_to;
    p->author = v->vp.author;
    p->journal = v->vp.journal;
    p->pub_type = v->vp.pub_type;
    p->search_mode = v->vp.search_mode;
    p->cancelled = v->vp.cancelled;
    p->cancelled_user = v->vp.cancelled_user;
    p->on_claim = NULL;
    p->on_answer_token = NULL;
}

static enum mt_status make_sentences(struct vrun *v, struct mt_error *err)
{
    struct mt_span *sp = NULL;
    size_t n = 0, i;
    enum mt_status st = MT_OK;

    if (v->whole) { /* one span: the text trimmed */
        struct mt_str t = mtx_str_trim((struct mt_str){v->text, v->tn});

        sp = mt_malloc(sizeof *sp);
        if (!sp)
            return mt_fail(err, MT_ENOMEM, "verify: out of memory");
        sp[0].start = (size_t)(t.p - v->text);
        sp[0].end = sp[0].start + t.n;
        n = 1;
    } else {
        st = mtx_vf_split(v->text, v->tn, &sp, &n, err);
    }
    if (st != MT_OK)
        return st;
    v->res->sentences =
        mtx_arena_alloc(v->r.mem, (n + 1) * sizeof *v->res->sentences);
    st = v->res->sentences ? MT_OK : MT_ENOMEM;
    for (i = 0; st == MT_OK && i < n; i++) {
        struct mt_verify_sentence *s = &v->res->sentences[i];

        memset(s, 0, sizeof *s);
        s->start = sp[i].start;
        s->end = sp[i].end;
        s->text = mtx_qa_keep(&v->r, v->text + s->start, s->end - s->start);
        st = s->text ? MT_OK : MT_ENOMEM;
    }
    v->res->nsentences = st == MT_OK ? n : 0;
    mt_free(sp);
    return st == MT_OK ? MT_OK : mt_fail(err, st, "verify: out of memory");
}

/* The notes, each once (a BM25-only note comes with every search). */
static enum mt_status finish_notes(struct vrun *v)
{
    const char **out =
        mtx_arena_alloc(v->r.mem, (v->r.nnotes + 1) * sizeof *out);
    const char *p = v->r.notes.data;
    size_t i, k, n = 0;

    if (!out)
        return MT_ENOMEM;
    for (i = 0; i < v->r.nnotes; i++, p += strlen(p) + 1) {
        for (k = 0; k < n && strcmp(out[k], p) != 0; k++)
            ;
        if (k < n)
            continue;
        out[n] = keep(v, p);
        if (!out[n++])
            return MT_ENOMEM;
    }
    v->res->notes = out;
    v->res->nnotes = n;
    return MT_OK;
}

/* o (taken) as compact text in *txt (caller frees); MT_ENOMEM when none. */
static enum mt_status emit(json_t *o, char **txt)
{
    *txt = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return *txt ? MT_OK : MT_ENOMEM;
}

static enum mt_status report_split(struct vrun *v)
{
    json_t *a;
    char *txt = NULL;
    size_t i;
    enum mt_status st;

    if (!v->vp.on_split)
        return MT_OK;
    a = json_array();
    for (i = 0; a && i < v->res->nsentences; i++) {
        const struct mt_verify_sentence *s = &v->res->sentences[i];

        json_array_append_new(a, json_pack("{s:s,s:[I,I]}", "text", s->text,
                                           "span", (json_int_t)s->start,
                                           (json_int_t)s->end));
    }
    st = emit(a, &txt);
    if (st == MT_OK)
        v->vp.on_split(v->vp.on_claim_user, v->res->nsentences, txt);
    mt_free(txt);
    return st;
}

static enum mt_status report_sentence(struct vrun *v, size_t i)
{
    char *txt = NULL;
    enum mt_status st;

    if (!v->vp.on_sentence)
        return MT_OK;
    st = emit(mtx_vf_sentence_json(&v->res->sentences[i]), &txt);
    if (st == MT_OK)
        v->vp.on_sentence(v->vp.on_claim_user, i, v->res->nsentences, txt);
    mt_free(txt);
    return st;
}

static enum mt_status run_text(struct vrun *v, struct mt_error *err)
{
    size_t i;
    enum mt_status st = make_sentences(v, err);

    if (st == MT_OK && report_split(v) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "verify: out of memory");
    for (i = 0; st == MT_OK && i < v->res->nsentences; i++) {
        st = one_sentence(v, i, err);
        if (st == MT_OK && report_sentence(v, i) != MT_OK)
            st = mt_fail(err, MT_ENOMEM, "verify: out of memory");
    }
    if (st == MT_OK && v->qres.usage.verify_failures)
        st = mtx_qa_note(&v->r,
                         "the verifier failed on %u of %u (claim, "
                         "document) pairs: their claims are FAILED",
                         v->qres.usage.verify_failures,
                         v->qres.usage.verifications);
    if (st == MT_OK && finish_notes(v) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "verify: out of memory");
    return st;
}

static enum mt_status vrun_init(struct vrun *v, struct mt_qa *q,
                                const char *text,
                                const struct mt_verify_params *vp)
{
    struct mt_arena *mem = mt_calloc(1, sizeof *mem);

    memset(v, 0, sizeof *v);
    if (!mem)
        return MT_ENOMEM;
    *mem = MT_ARENA_INIT(64 * 1024);
    v->r.q = q;
    v->r.mem = mem;
    v->r.res = &v->qres;
    v->r.notes = MT_BUF_INIT((size_t)1 << 20);
    v->qres.search = "bm25";
    v->vp = *vp;
    v->text = text;
    v->tn = strlen(text);
    run_params(v);
    v->res = mtx_arena_alloc(mem, sizeof *v->res);
    if (!v->res)
        return MT_ENOMEM;
    memset(v->res, 0, sizeof *v->res);
    v->res->mem_ = mem;
    v->res->search = "bm25";
    return MT_OK;
}

static enum mt_status verify(struct mt_qa *q, const char *text,
                             const struct mt_verify_params *vp, int whole,
                             struct mt_verify_result **out,
                             struct mt_error *err)
{
    struct mt_verify_params dp;
    struct vrun v;
    double t0 = mtx_clock_now();
    enum mt_status st;

    *out = NULL;
    if (!vp) {
        mt_verify_default_params(q, &dp);
        vp = &dp;
    }
    /* the CLI's bounds for every caller (a library's, Python's) */
    st = mt_param_check(&mt_verify_param_table, vp, 0, err);
    if (st == MT_OK)
        st = check_text(q, text, vp, err);
    if (st != MT_OK)
        return st;
    st = vrun_init(&v, q, text, vp);
    v.whole = whole;
    if (st == MT_OK)
        st = run_text(&v, err);
    else
        mt_fail(err, st, "verify: out of memory");
    mtx_buf_free(&v.r.notes);
    if (st != MT_OK) {
        if (v.r.mem)
            mtx_arena_free(v.r.mem);
        mt_free(v.r.mem);
        return st;
    }
    v.res->usage = v.qres.usage;
    v.res->usage.seconds = mtx_clock_now() - t0;
    /* asked after the run: the classifier says its mapping once loaded */
    if (q->nli && mt_nli_describe(q->nli))
        v.res->verifier = keep(&v, mt_nli_describe(q->nli));
    *out = v.res;
    if (v.failed)
        return mt_fail(err, MT_EMODEL,
                       "%zu claim%s FAILED (a model call failed): their "
                       "verdict was never given",
                       v.failed, v.failed == 1 ? "" : "s");
    return MT_OK;
}

enum mt_status mt_verify_text(struct mt_qa *q, const char *text,
                              const struct mt_verify_params *vp,
                              struct mt_verify_result **out,
                              struct mt_error *err)
{
    return verify(q, text, vp, 0, out, err);
}

enum mt_status mt_verify_one_claim(struct mt_qa *q, const char *claim,
                                   const struct mt_verify_params *vp,
                                   struct mt_verify_result **out,
                                   struct mt_error *err)
{
    return verify(q, claim, vp, 1, out, err);
}

/* ==== A correction (issue 32) ==== */

/* A passage's document: its text when given, else read by its id. */
static enum mt_status passage_doc(struct vrun *v, const char *id,
                                  const char *text, struct vdoc *d,
                                  struct mt_error *err)
{
    struct mt_retrieved_doc rd;
    enum mt_status st;

    *d = (struct vdoc){keep(v, id), NULL, NULL, keep(v, text), NULL};
    if (!text && !v->r.q->p.db_dir)
        return MT_ENOTFOUND; /* nothing to read it from */
    if (text)
        return d->doc_id && d->text ? MT_OK : MT_ENOMEM;
    st = mt_retriever_lookup(v->r.q->ret, "id", id, v->r.q->p.doc_chars, &rd,
                             err);
    if (st != MT_OK)
        return st;
    d->title = keep(v, rd.title);
    d->url = keep(v, rd.url);
    d->text = mtx_qa_keep(&v->r, rd.text,
                          mtx_utf8_cut(rd.text, rd.len, v->r.q->p.doc_chars));
    mt_retrieved_doc_free(&rd);
    return d->doc_id && d->text ? MT_OK : MT_ENOMEM;
}

/* The documents both sentences are judged against: the given passages,
 * else the top k of a search for the corrected sentence. */
static enum mt_status correction_docs(struct vrun *v, const char *corrected,
                                      const char *const *ids,
                                      const char *const *texts, size_t n,
                                      struct vclaim *vc, struct mt_error *err)
{
    size_t i;

    vc->cap = (n > v->vp.k ? n : v->vp.k) + 1;
    vc->c->evidence =
        mtx_arena_alloc(v->r.mem, vc->cap * sizeof *vc->c->evidence);
    vc->docs = mt_calloc(vc->cap, sizeof *vc->docs);
    if (!vc->c->evidence || !vc->docs)
        return mt_fail(err, MT_ENOMEM, "verify: out of memory");
    vc->c->decided_by = -1;
    if (n == 0)
        return search_docs(v, corrected, vc, err);
    for (i = 0; i < n; i++) {
        enum mt_status st = passage_doc(v, ids[i], texts ? texts[i] : NULL,
                                        &vc->docs[vc->c->nevidence], err);

        if (st == MT_ENOTFOUND) /* gone from the store since the run */
            continue;
        if (st != MT_OK)
            return st;
        memset(&vc->c->evidence[vc->c->nevidence++], 0,
               sizeof *vc->c->evidence);
    }
    return MT_OK;
}

/* Judges 'text' against the documents of 'from' (its docs), into c. */
static enum mt_status correction_side(struct vrun *v, const char *text,
                                      const struct vclaim *from,
                                      struct mt_verify_claim *c,
                                      struct mt_error *err)
{
    struct vclaim vc = {c, from->docs, from->cap};
    enum mt_status st;

    c->text = text;
    c->decided_by = -1;
    c->evidence = mtx_arena_alloc(v->r.mem, from->cap * sizeof *c->evidence);
    if (!c->evidence)
        return mt_fail(err, MT_ENOMEM, "verify: out of memory");
    memset(c->evidence, 0, from->cap * sizeof *c->evidence);
    c->nevidence = from->c->nevidence;
    st = judge_from(v, &vc, 0, err);
    if (st == MT_OK)
        c->verdict = mtx_vf_decide(c->evidence, c->nevidence, v->vp.support_min,
                                   v->vp.contradict_min, &c->decided_by);
    return st;
}

static json_t *side_json(const struct mt_verify_evidence *e)
{
    json_t *o = json_pack("{s:s,s:f,s:o}", "label", mt_verdict_str(e->label),
                          "score", (double)e->score, "sentence",
                          e->sentence ? json_string(e->sentence) : json_null());

    if (o && e->error)
        json_object_set_new(o, "error", json_string(e->error));
    return o;
}

static char *correction_json(const struct mt_verify_claim *cc,
                             const struct mt_verify_claim *co, int searched,
                             const char *search)
{
    json_t *ev = json_array();
    json_t *o;
    char *s;
    size_t i;

    for (i = 0; i < cc->nevidence; i++) {
        const struct mt_verify_evidence *e = &cc->evidence[i];

        json_array_append_new(
            ev,
            json_pack("{s:s,s:o,s:o,s:o,s:o}", "doc", e->doc_id, "title",
                      e->title ? json_string(e->title) : json_null(), "url",
                      e->url ? json_string(e->url) : json_null(), "corrected",
                      side_json(e), "original", side_json(&co->evidence[i])));
    }
    o = json_pack("{s:s,s:s,s:b,s:s,s:o}", "verdict_corrected",
                  mt_verdict_str(cc->verdict), "verdict_original",
                  mt_verdict_str(co->verdict), "strongest",
                  cc->verdict == MT_VERDICT_SUPPORT &&
                      co->verdict == MT_VERDICT_CONTRADICT,
                  "source", searched ? search : "run", "evidence", ev);
    s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

enum mt_status mt_verify_correction(struct mt_qa *q, const char *corrected,
                                    const char *original,
                                    const char *const *ids,
                                    const char *const *texts, size_t n,
                                    char **json, struct mt_error *err)
{
    struct mt_verify_params vp;
    struct mt_verify_claim cc, co;
    struct vclaim vc = {&cc, NULL, 0};
    struct vrun v;
    enum mt_status st;

    *json = NULL;
    memset(&cc, 0, sizeof cc);
    memset(&co, 0, sizeof co);
    mt_verify_default_params(q, &vp);
    if (n == 0 && !q->p.db_dir)
        return mt_fail(err, MT_EINVAL,
                       "verify the correction: no passages and no corpus "
                       "to search (give --db DIR)");
    st = vrun_init(&v, q, corrected, &vp);
    if (st == MT_OK)
        st = correction_docs(&v, corrected, ids, texts, n, &vc, err);
    if (st == MT_OK)
        st = correction_side(&v, corrected, &vc, &cc, err);
    if (st == MT_OK)
        st = correction_side(&v, original, &vc, &co, err);
    if (st == MT_OK) {
        *json = correction_json(&cc, &co, n == 0, v.qres.search);
        st = *json ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    }
    mt_free(vc.docs);
    mtx_buf_free(&v.r.notes);
    if (v.r.mem)
        mtx_arena_free(v.r.mem);
    mt_free(v.r.mem);
    return st;
}

enum mt_status mt_verify_lookup(struct mt_qa *q, const char *field,
                                const char *key, size_t max,
                                struct mt_retrieved_doc *out,
                                struct mt_error *err)
{
    if (!q->p.db_dir) {
        memset(out, 0, sizeof *out);
        return mt_fail(err, MT_EINVAL, "verify: no corpus: give --db DIR");
    }
    return mt_retriever_lookup(q->ret, field, key, max, out, err);
}

void mt_verify_result_free(struct mt_verify_result *r)
{
    struct mt_arena *mem;

    if (!r)
        return;
    mem = r->mem_;
    mtx_arena_free(mem); /* r lives in the arena */
    mt_free(mem);
}
