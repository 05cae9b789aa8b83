/* medtrust qa-eval: verified QA on PubMedQA queries (answer accuracy from
 * the closing yes/no/maybe, citation precision against the relevant PMID,
 * verdict shares, hallucinated citations), or the verifier alone on a
 * claim-verification CSV (claim, evidence, label): accuracy and macro-F1,
 * as VerifAI reports for SciFact and HealthVer. */
#include <stdio.h>
#include <string.h>

#include "cli/qa_opts.h"
#include "eval/pubmedqa.h"
#include "medtrust/core.h"

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

static void print_pubmedqa(const struct mtx_pubmedqa_score *t, int json)
{
    const size_t *c = t->claim_labels;

    printf(json ? FMT_J : FMT_T, t->questions, t->failed, t->acc, t->acc_lo,
           t->acc_hi, t->missing, t->cited, share(t->cited_relevant, t->cited),
           t->claims, share(c[0], t->claims), share(c[1], t->claims),
           share(c[2], t->claims), share(c[3], t->claims),
           share(c[4], t->claims), t->pairs, share(t->no_reference, t->pairs));
}

static enum mt_status report_pubmedqa(const struct mtx_qa_item *v, size_t n,
                                      int json, struct mt_error *err)
{
    struct mtx_pubmedqa_score t;
    size_t i;

    if (mtx_pubmedqa_init(&t, n) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < n; i++)
        mtx_pubmedqa_add(&t, v[i].it.line, v[i].gold, v[i].relevant, v[i].nrel);
    mtx_pubmedqa_finish(&t);
    print_pubmedqa(&t, json);
    mtx_pubmedqa_free(&t);
    return MT_OK;
}

static enum mt_status eval_queries(const struct cli_args *a, struct mt_qa *q,
                                   unsigned jobs, size_t limit,
                                   struct mt_error *err)
{
    struct mtx_items_stats bs;
    struct mtx_qa_item *v = NULL;
    size_t n = 0;
    enum mt_status st = qa_batch_file(a, "queries", "qa-eval", q, jobs, limit,
                                      &v, &n, &bs, err);

    if (st == MT_OK)
        st = report_pubmedqa(v, n, cli_get(a, "json") != NULL, err);
    mtx_qa_items_free(v, n);
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
        st = claims ? qa_eval_claims(a, q, (unsigned)jobs, limit, &err)
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
