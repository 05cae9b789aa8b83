/* medtrust qa-eval: verified QA on PubMedQA queries (answer accuracy from
 * the closing yes/no/maybe, citation precision against the relevant PMID,
 * verdict shares, hallucinated citations), or the verifier alone on a
 * claim-verification CSV (claim, evidence, label): accuracy and macro-F1,
 * as VerifAI reports for SciFact and HealthVer. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cli/qa_opts.h"
#include "core/csv.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"

#define BOOT_RESAMPLES 1000

static const struct cli_opt qa_eval_opts[] = {
    QA_OPTS,
    {"queries", 'q', "FILE",
     "PubMedQA-style JSONL: {\"id\",\"query\","
     "\"relevant\",\"answer\"}",
     0},
    {"claims", 'c', "FILE",
     "CSV with claim, evidence and label columns: "
     "score the verifier only",
     0},
    {"verify", 0, "FILE",
     "CSV with claim, evidence (text or document id) and label columns "
     "(HealthVer, SciFact): verify each claim against --db as `verify` "
     "does",
     0},
    {"given-evidence", 0, NULL,
     "with --verify: judge the gold (claim, evidence) pair only", 0},
    {"out", 'o', "FILE",
     "per-question results (JSONL), journaled for "
     "--resume",
     0},
    {"jobs", 'J', "N", "questions or claims at once, 1..256 (default 4)", 0},
    {"limit", 'n', "N", "only the first N questions or claims", 0},
    {"resume", 'r', NULL, "keep the questions OUT.journal says are done", 0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {"json", 'j', NULL, "print the metrics as one JSON object", 0},
    {NULL, 0, NULL, NULL, 0},
};

/* ==== PubMedQA ==== */

struct qa_tally {
    size_t questions, failed, missing;
    double *correct; /* per question, for the bootstrap */
    size_t cited, cited_relevant;
    size_t claims, claim_labels[MT_QA_NLABELS];
    size_t pairs, no_reference;
};

static int is_relevant(const struct qa_item *x, const char *id)
{
    size_t i;

    for (i = 0; i < x->nrel; i++)
        if (strcmp(x->relevant[i], id) == 0)
            return 1;
    return 0;
}

/* Counts the answer's distinct cited ids and its verdicts. */
static void tally_claims(struct qa_tally *t, const struct qa_item *x,
                         json_t *claims)
{
    json_t *seen = json_object();
    json_t *c, *v, *ref;
    void *it;
    size_t i, k;
    enum mt_qa_label l;

    json_array_foreach(claims, i, c)
    {
        if (mt_qa_label_parse(json_string_value(json_object_get(c, "label")),
                              &l) == MT_OK)
            t->claim_labels[l]++;
        t->claims++;
        json_array_foreach(json_object_get(c, "refs"), k,
                           ref) if (json_is_string(ref))
            json_object_set(seen, json_string_value(ref), json_true());
        json_array_foreach(json_object_get(c, "verdicts"), k, v)
        {
            const char *s = json_string_value(json_object_get(v, "label"));

            t->pairs++;
            t->no_reference += s && strcmp(s, "NO_REFERENCE") == 0;
        }
    }
    t->cited += json_object_size(seen);
    for (it = json_object_iter(seen); it; it = json_object_iter_next(seen, it))
        t->cited_relevant += (size_t)is_relevant(x, json_object_iter_key(it));
    json_decref(seen);
}

static void tally_one(struct qa_tally *t, const struct qa_item *x)
{
    json_t *o = x->line ? json_loads(x->line, 0, NULL) : NULL;
    const char *v = json_string_value(json_object_get(o, "final_verdict"));

    t->correct[t->questions++] = v && x->gold && strcasecmp(v, x->gold) == 0;
    if (!o || json_object_get(o, "error")) {
        t->failed++;
        json_decref(o);
        return;
    }
    t->missing += v == NULL;
    tally_claims(t, x, json_object_get(o, "claims"));
    json_decref(o);
}

static double share(size_t a, size_t b)
{
    return b ? (double)a / (double)b : 0;
}

#define FMT_J                                                                  \
    "{\"mode\":\"pubmedqa\",\"questions\":%zu,\"failed\":%zu,"                 \
    "\"answer_accuracy\":%.4f,\"accuracy_ci95\":[%.4f,%.4f],"                  \
    "\"verdict_missing\":%zu,\"citations\":%zu,\"citation_precision\":"        \
    "%.4f,\"claims\":%zu,\"claim_shares\":{\"SUPPORT\":%.4f,"                  \
    "\"CONTRADICT\":%.4f,\"NO_EVIDENCE\":%.4f,\"NO_REFERENCE\":%.4f,"          \
    "\"UNVERIFIED\":%.4f},\"pairs\":%zu,\"hallucinated_share\":%.4f}\n"
#define FMT_T                                                                  \
    "questions %zu (failed %zu)\nanswer accuracy %.4f (95%% CI %.4f.."         \
    "%.4f; %zu without a yes/no/maybe)\ncitations %zu, precision %.4f\n"       \
    "claims %zu: SUPPORT %.4f, CONTRADICT %.4f, NO_EVIDENCE %.4f, "            \
    "NO_REFERENCE %.4f, UNVERIFIED %.4f\n(claim, document) pairs %zu, "        \
    "hallucinated citations %.4f\n"

static void print_pubmedqa(const struct qa_tally *t, double acc, double lo,
                           double hi, int json)
{
    const size_t *c = t->claim_labels;

    printf(json ? FMT_J : FMT_T, t->questions, t->failed, acc, lo, hi,
           t->missing, t->cited, share(t->cited_relevant, t->cited), t->claims,
           share(c[0], t->claims), share(c[1], t->claims),
           share(c[2], t->claims), share(c[3], t->claims),
           share(c[4], t->claims), t->pairs, share(t->no_reference, t->pairs));
}

static enum mt_status report_pubmedqa(const struct qa_item *v, size_t n,
                                      int json, struct mt_error *err)
{
    struct qa_tally t;
    double acc = 0, lo = 0, hi = 0;
    size_t i;

    memset(&t, 0, sizeof t);
    t.correct = mt_calloc(n + 1, sizeof *t.correct);
    if (!t.correct)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < n; i++)
        tally_one(&t, &v[i]);
    for (i = 0; i < n; i++)
        acc += t.correct[i];
    acc = share((size_t)acc, n);
    if (n)
        mt_eval_bootstrap_ci(t.correct, n, BOOT_RESAMPLES, MT_EVAL_BOOT_SEED,
                             &lo, &hi);
    print_pubmedqa(&t, acc, lo, hi, json);
    mt_free(t.correct);
    return MT_OK;
}

static enum mt_status eval_queries(const struct cli_args *a, struct mt_qa *q,
                                   unsigned jobs, size_t limit,
                                   struct mt_error *err)
{
    struct qa_batch_stats bs;
    struct qa_item *v = NULL;
    size_t n = 0;
    enum mt_status st = qa_batch_file(a, "queries", "qa-eval", q, jobs, limit,
                                      &v, &n, &bs, err);

    if (st == MT_OK)
        st = report_pubmedqa(v, n, cli_get(a, "json") != NULL, err);
    qa_items_free(v, n);
    return st;
}

/* ==== Claim verification ==== */

struct claim_row {
    char *claim;
    char *evidence;
    enum mt_qa_label gold;
    int pred; /* enum mt_qa_label, -1 when the verifier failed */
};

struct claim_set {
    struct mt_qa *q;
    struct claim_row *rows;
    size_t n;
    size_t next;
    size_t skipped; /* rows whose label is not one of the three */
    pthread_mutex_t mu;
};

static void *verify_worker(void *arg)
{
    struct claim_set *s = arg;

    for (;;) {
        struct claim_row *r = NULL;
        enum mt_qa_label l;
        float sc;

        pthread_mutex_lock(&s->mu);
        if (s->next < s->n)
            r = &s->rows[s->next++];
        pthread_mutex_unlock(&s->mu);
        if (!r)
            return NULL;
        r->pred =
            mt_qa_verify(s->q, r->claim, r->evidence, &l, &sc, NULL) == MT_OK
                ? (int)l
                : -1;
    }
}

static long column(struct mt_csv *c, const char *name)
{
    char cap[32];
    long k = mtx_csv_find(c, name);

    snprintf(cap, sizeof cap, "%c%s", toupper((unsigned char)name[0]),
             name + 1);
    return k >= 0 ? k : mtx_csv_find(c, cap);
}

static enum mt_status add_row(struct claim_set *s, struct mt_csv *c,
                              const long *col, size_t *cap)
{
    struct mt_str f[3];
    struct claim_row *r;
    char lab[64];
    size_t i;

    for (i = 0; i < 3; i++)
        f[i] = mtx_csv_field(c, (size_t)col[i]);
    snprintf(lab, sizeof lab, "%.*s", (int)(f[2].n < 63 ? f[2].n : 63),
             f[2].p ? f[2].p : "");
    if (s->n == *cap) {
        r = mt_realloc(s->rows, (*cap ? *cap * 2 : 64) * sizeof *r);
        if (!r)
            return MT_ENOMEM;
        s->rows = r;
        *cap = *cap ? *cap * 2 : 64;
    }
    r = &s->rows[s->n];
    if (mt_qa_label_parse(lab, &r->gold) != MT_OK ||
        r->gold > MT_QA_NO_EVIDENCE) {
        s->skipped++;
        return MT_OK;
    }
    r->claim = mt_strndup(f[0].p ? f[0].p : "", f[0].n);
    r->evidence = mt_strndup(f[1].p ? f[1].p : "", f[1].n);
    s->n += r->claim && r->evidence;
    return r->claim && r->evidence ? MT_OK : MT_ENOMEM;
}

static enum mt_status load_claims(const char *path, size_t limit,
                                  struct claim_set *s, struct mt_error *err)
{
    struct mt_csv *c = NULL;
    long col[3];
    size_t cap = 0;
    int got = 0;
    enum mt_status st = mtx_csv_open(path, NULL, &c, err);

    if (st == MT_OK)
        st = mtx_csv_next(c, &got, err);
    col[0] = got ? column(c, "claim") : -1;
    col[1] = got ? column(c, "evidence") : -1;
    col[2] = got ? column(c, "label") : -1;
    if (st == MT_OK && (col[0] < 0 || col[1] < 0 || col[2] < 0))
        st = mt_fail(err, MT_EPARSE,
                     "%s: needs claim, evidence and label "
                     "columns",
                     path);
    while (st == MT_OK && (!limit || s->n < limit)) {
        st = mtx_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        st = add_row(s, c, col, &cap);
    }
    mtx_csv_close(c);
    return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
}

static void print_claims(const struct claim_set *s, int json)
{
    size_t cm[3][4] = {{0}}; /* gold x predicted (3 = failed) */
    double f1[3], macro = 0;
    size_t i, k, right = 0, failed = 0;

    for (i = 0; i < s->n; i++) {
        int p =
            s->rows[i].pred < 0 || s->rows[i].pred > 2 ? 3 : s->rows[i].pred;

        cm[s->rows[i].gold][p]++;
        right += p == (int)s->rows[i].gold;
        failed += p == 3;
    }
    for (k = 0; k < 3; k++) {
        size_t tp = cm[k][k], pp = cm[0][k] + cm[1][k] + cm[2][k];
        size_t gp = cm[k][0] + cm[k][1] + cm[k][2] + cm[k][3];

        f1[k] = tp ? 2.0 * (double)tp / (double)(pp + gp) : 0;
        macro += f1[k] / 3;
    }
    printf(json ? "{\"mode\":\"claims\",\"claims\":%zu,\"skipped\":%zu,"
                  "\"failed\":%zu,\"accuracy\":%.4f,\"macro_f1\":%.4f,"
                  "\"f1\":{\"SUPPORT\":%.4f,\"CONTRADICT\":%.4f,"
                  "\"NO_EVIDENCE\":%.4f}}\n"
                : "claims %zu (skipped %zu with another label, verifier "
                  "failed on %zu)\naccuracy %.4f, macro-F1 %.4f (F1 SUPPORT "
                  "%.4f, CONTRADICT %.4f, NO_EVIDENCE %.4f)\n",
           s->n, s->skipped, failed, share(right, s->n), macro, f1[0], f1[1],
           f1[2]);
}

static enum mt_status eval_claims(const struct cli_args *a, struct mt_qa *q,
                                  unsigned jobs, size_t limit,
                                  struct mt_error *err)
{
    struct claim_set s;
    pthread_t t[256];
    unsigned started = 0, i;
    enum mt_status st;

    memset(&s, 0, sizeof s);
    s.q = q;
    pthread_mutex_init(&s.mu, NULL);
    st = load_claims(cli_get(a, "claims"), limit, &s, err);
    for (i = 0; st == MT_OK && i < jobs; i++)
        started += pthread_create(&t[started], NULL, verify_worker, &s) == 0;
    if (st == MT_OK && started == 0)
        verify_worker(&s);
    for (i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    if (st == MT_OK)
        print_claims(&s, cli_get(a, "json") != NULL);
    for (i = 0; i < s.n; i++) {
        mt_free(s.rows[i].claim);
        mt_free(s.rows[i].evidence);
    }
    mt_free(s.rows);
    pthread_mutex_destroy(&s.mu);
    return st;
}

/* ==== The verb ==== */

static int qa_eval_run(struct cli_args *a)
{
    struct mt_qa_params p;
    struct mt_qa *q = NULL;
    struct mt_error err = {MT_OK, ""};
    unsigned long jobs = 4, limit = 0;
    int claims = cli_get(a, "claims") != NULL;
    int verify = cli_get(a, "verify") != NULL;
    int given = cli_get(a, "given-evidence") != NULL;
    enum mt_status st;

    if (qa_opts_read(a, &p) < 0 || cli_get_uint(a, "jobs", 1, 256, &jobs) < 0 ||
        cli_get_uint(a, "limit", 1, 100000000, &limit) < 0)
        return 1;
    if (claims + verify + (cli_get(a, "queries") != NULL) != 1 || a->npos ||
        (!claims && !p.db_dir && !(verify && given)) || (given && !verify)) {
        fprintf(stderr, "medtrust qa-eval: give --queries FILE.jsonl with "
                        "--db DIR, --verify FILE.csv with --db DIR (or "
                        "--given-evidence), or --claims FILE.csv\nTry "
                        "'medtrust qa-eval --help'.\n");
        return 1;
    }
    if (claims)
        p.db_dir = NULL;        /* the verifier alone */
    p.answer_optional = verify; /* a chat model only for --decompose */
    p.final_verdict = 1;
    p.llm.max_concurrency = (uint32_t)jobs * 2;
    st = mt_qa_open(&p, &q, &err);
    if (st == MT_OK && verify)
        st = qa_eval_verify(a, q, (unsigned)jobs, limit, &err);
    else if (st == MT_OK)
        st = claims ? eval_claims(a, q, (unsigned)jobs, limit, &err)
                    : eval_queries(a, q, (unsigned)jobs, limit, &err);
    mt_qa_close(q);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_qa_eval = {
    "qa-eval",
    "evaluate verified QA (PubMedQA) or the claim verifier (CSV)",
    "--db DIR --queries FILE.jsonl [OPTIONS]  or  --claims FILE.csv",
    "With --queries, answers each question as `ask` does, asking for a\n"
    "closing 'Answer: yes|no|maybe' line, and reports answer accuracy (a\n"
    "missing verdict or a failed question counts as wrong; 95% bootstrap\n"
    "interval), citation precision (distinct cited ids of an answer that\n"
    "are its relevant PMID, pooled), the share of claims in each verdict\n"
    "and the share of (claim, document) pairs that are NO_REFERENCE\n"
    "(hallucinated citations). With --claims, runs the verifier (--nli)\n"
    "on each row and reports accuracy and macro-F1 over SUPPORT,\n"
    "CONTRADICT and NO_EVIDENCE (labels such as supports/refutes/NEI are\n"
    "read too; rows with other labels are skipped and counted). With\n"
    "--verify, verifies each claim as `medtrust verify` does (the top -k\n"
    "documents of a search, judged, the verdict rule of docs/verify.md)\n"
    "and reports evidence recall@k (the gold evidence, a document id or\n"
    "text, among the documents found), accuracy, macro-F1, the confusion\n"
    "matrix (a FAILED verdict is OTHER, counted wrong) and 95% bootstrap\n"
    "intervals; --given-evidence judges the gold pair only.",
    qa_eval_opts,
    qa_eval_run,
};
