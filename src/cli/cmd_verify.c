/* medtrust verify: any medical text (an argument, a file or stdin) checked
 * sentence by sentence against the corpus; or a JSONL batch of texts in
 * parallel, journaled so --resume finishes a killed run. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/qa_opts.h"
#include "core/buf.h"
#include "core/file.h"
#include "medtrust/core.h"
#include "medtrust/verify.h"

/* The most bytes read as one text: --max-text's highest value
 * (mt_verify_param_table). */
#define TEXT_READ_MAX ((size_t)16 << 20)
#define VERIFY_T (&mt_verify_param_table)

static const struct cli_opt verify_opts[] = {
    QA_OPTS_K(CLI_PARAM_KEY("top-k", 'k', VERIFY_T)),
    {"json", 'j', NULL, "print the result as one JSON object", 0},
    {"decompose", 0, NULL,
     "the LLM splits each claim sentence into atomic claims (FActScore; "
     "needs --llm)",
     0},
    CLI_PARAM("support-min", VERIFY_T),
    CLI_PARAM("contradict-min", VERIFY_T),
    CLI_PARAM("min-words", VERIFY_T),
    {"cited-only", 0, NULL,
     "judge a cited claim against its cited documents only (default: "
     "also search when they do not decide it)",
     0},
    CLI_PARAM("max-text", VERIFY_T),
    {"batch", 'b', "FILE",
     "JSONL of {\"id\",\"text\"}: verify each (needs --out)", 0},
    {"out", 'o', "FILE", "batch results, one JSON line per text in input order",
     0},
    {"jobs", 'J', "N", "batch texts at once, 1..256 (default 4)", 0},
    {"limit", 'n', "N", "only the first N batch texts", 0},
    {"resume", 'r', NULL, "keep the texts OUT.journal says are done", 0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {NULL, 0, NULL, NULL, 0},
};

/* ==== Settings ==== */

static int read_params(const struct cli_args *a, const struct mt_qa *q,
                       struct mt_verify_params *vp)
{
    mt_verify_default_params(q, vp);
    if (cli_params_read(a, &mt_verify_param_table, vp) < 0)
        return -1;
    vp->decompose = cli_get(a, "decompose") != NULL;
    vp->search_cited = cli_get(a, "cited-only") == NULL;
    return 0;
}

/* ==== Text form ==== */

static void print_evidence(const struct mt_verify_evidence *e, int decided)
{
    printf("      %s %s%s", decided ? "*" : "-", e->doc_id,
           e->cited ? " (cited)" : "");
    if (e->label == MT_VERDICT_NO_REFERENCE)
        printf(": NO_REFERENCE (not in the store)\n");
    else if (e->label == MT_VERDICT_FAILED)
        printf(": FAILED (%s)\n", e->error ? e->error : "no reason given");
    else
        printf(": %s %.2f%s%s%s%s%s\n", mt_verdict_str(e->label),
               (double)e->score, e->sentence ? "  \"" : "",
               e->sentence ? e->sentence : "", e->sentence ? "\"" : "",
               e->url ? "  " : "", e->url ? e->url : "");
}

static void print_claim(const struct mt_verify_claim *c, int several)
{
    size_t i;

    if (several)
        printf("    claim [%s] %s\n", mt_verdict_str(c->verdict), c->text);
    for (i = 0; i < c->nquotes; i++) {
        const struct mt_verify_quote *q = &c->quotes[i];
        const char *where = q->status == MT_QUOTE_FOUND      ? " in "
                            : q->status == MT_QUOTE_STITCHED ? " pieced from "
                                                             : " not in ";

        printf("      quote %s: \"%s\"%s%s\n", mt_quote_status_str(q->status),
               q->text, q->doc_id ? where : "", q->doc_id ? q->doc_id : "");
    }
    if (c->error)
        printf("      FAILED: %s\n", c->error);
    for (i = 0; i < c->nevidence; i++)
        print_evidence(&c->evidence[i], (long)i == c->decided_by);
}

static void print_text(const struct mt_verify_result *r)
{
    size_t i, k;

    for (i = 0; i < r->nsentences; i++) {
        const struct mt_verify_sentence *s = &r->sentences[i];

        printf("[%s] %s  (bytes %zu-%zu)\n", mt_verdict_str(s->status), s->text,
               s->start, s->end);
        for (k = 0; k < s->nclaims; k++)
            print_claim(&s->claims[k], s->nclaims > 1);
    }
    printf("\nSummary (%s search):", r->search);
    for (i = 0; i < MT_VERDICT_N; i++)
        if (r->counts[i])
            printf(" %s %zu", mt_verdict_str((enum mt_verdict)i), r->counts[i]);
    printf("\n");
    if (r->verifier)
        printf("Verifier: %s\n", r->verifier);
    for (i = 0; i < r->nnotes; i++)
        printf("%s%s\n", i ? "  " : "Notes:\n  ", r->notes[i]);
    printf("%u LLM calls, %u verifications, %.1f s\n", r->usage.llm_calls,
           r->usage.verifications, r->usage.seconds);
}

/* ==== One text ==== */

static int is_file(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The text: stdin for "-", a file's contents when the one argument names
 * a file, else the arguments joined by spaces. */
static enum mt_status read_text(const struct cli_args *a, struct mt_buf *b,
                                struct mt_error *err)
{
    char chunk[65536];
    size_t k;
    int i;
    enum mt_status st = mtx_buf_reserve(b, 1);

    if (a->npos == 1 && strcmp(a->pos[0], "-") == 0) {
        while (st == MT_OK && (k = fread(chunk, 1, sizeof chunk, stdin)))
            st = mtx_buf_append(b, chunk, k);
        return st == MT_OK
                   ? MT_OK
                   : mt_fail(err, st, "stdin: over %zu bytes", TEXT_READ_MAX);
    }
    if (a->npos == 1 && is_file(a->pos[0]))
        return mtx_file_read_all(a->pos[0], b, err);
    for (i = 0; st == MT_OK && i < a->npos; i++)
        st = mtx_buf_printf(b, "%s%s", i ? " " : "", a->pos[i]);
    return st == MT_OK ? MT_OK : mt_fail(err, st, "the text is too long");
}

static enum mt_status verify_one(const struct cli_args *a, struct mt_qa *q,
                                 const struct mt_verify_params *vp,
                                 struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT(TEXT_READ_MAX);
    struct mt_verify_result *r = NULL;
    enum mt_status st = read_text(a, &b, err);
    char *js;

    if (st == MT_OK)
        st = mt_verify_text(q, b.data, vp, &r, err);
    /* MT_EMODEL: the result is shown with its FAILED claims, exit 1 */
    if (r && cli_get(a, "json")) {
        js = mt_verify_result_json(r);
        if (js)
            printf("%s\n", js);
        else
            st = mt_fail(err, MT_ENOMEM, "out of memory");
        mt_free(js);
    } else if (r) {
        print_text(r);
    }
    mt_verify_result_free(r);
    mtx_buf_free(&b);
    return st;
}

/* ==== Batch ==== */

static void batch_report(const struct mtx_verify_item *v, size_t n,
                         const struct mtx_items_stats *bs)
{
    size_t i, k = 0;

    fprintf(stderr,
            "verify: %zu texts (%zu resumed, %zu verified, %zu "
            "failed: see their \"error\")\n",
            n, bs->resumed, bs->done, bs->failed);
    for (i = 0; i < n; i++) {
        if (!v[i].it.failed || k++ >= 50)
            continue;
        if (k == 1)
            fprintf(stderr, "verify: failed (--resume verifies them again):");
        fprintf(stderr, " %s", v[i].it.id);
    }
    if (k)
        fputc('\n', stderr);
}

/* The batch itself is the library's (src/batch/qa_batch.c). */
static enum mt_status verify_batch(const struct cli_args *a, struct mt_qa *q,
                                   const struct mt_verify_params *vp,
                                   unsigned jobs, size_t limit,
                                   struct mt_error *err)
{
    struct mtx_qa_batch_params bp = {
        cli_get(a, "out"), cli_get(a, "resume") != NULL, jobs,
        cli_get(a, "no-progress") != NULL, "verify"};
    struct mtx_items_stats bs = {0, 0, 0};
    struct mtx_verify_item *v = NULL;
    size_t n = 0;
    enum mt_status st =
        mtx_verify_items_load(cli_get(a, "batch"), limit, &v, &n, err);

    if (st == MT_OK)
        st = mtx_verify_batch_run(q, vp, v, n, &bp, &bs, err);
    if (st == MT_OK)
        batch_report(v, n, &bs);
    if (st == MT_OK && bs.failed)
        st = mt_fail(err, MT_EMODEL, "%zu text%s failed", bs.failed,
                     bs.failed == 1 ? "" : "s");
    mtx_verify_items_free(v, n);
    return st;
}

/* ==== The verb ==== */

static int verify_run(struct cli_args *a)
{
    struct mt_qa_params p;
    struct mt_verify_params vp;
    struct mt_qa *q = NULL;
    struct mt_error err = {MT_OK, ""};
    unsigned long jobs = 4, limit = 0;
    int batch = cli_get(a, "batch") != NULL;
    enum mt_status st;

    static const struct qa_run_input in = {
        "verify", "TEXT", "give a TEXT, a FILE, or - to read stdin"};

    if (qa_run_args(a, &in, &p, &jobs, &limit) != 0)
        return 1;
    p.answer_optional = 1; /* a chat model only for --decompose */
    p.llm.max_concurrency = (uint32_t)jobs * 2;
    st = mt_qa_open(&p, &q, &err);
    if (st == MT_OK && read_params(a, q, &vp) < 0) {
        mt_qa_close(q);
        return 1;
    }
    if (st == MT_OK)
        st = batch ? verify_batch(a, q, &vp, (unsigned)jobs, limit, &err)
                   : verify_one(a, q, &vp, &err);
    mt_qa_close(q);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_verify = {
    "verify",
    "verify any medical text sentence by sentence against the corpus",
    "--db DIR [--nli SPEC | --llm SPEC] [-k 5] [--json] TEXT|FILE|-  or  "
    "--batch TEXTS.jsonl --out RESULTS.jsonl",
    "Splits the text into sentences, each kept in order with its byte span;\n"
    "questions, headings and fragments under --min-words are NOT_A_CLAIM.\n"
    "Each other sentence is a claim (--decompose: the LLM's atomic claims).\n"
    "Citations ([PMID], PMID: N, DOI, a stored document's URL) are looked\n"
    "up first: an id the store does not hold is NO_REFERENCE; a quotation\n"
    "that is not verbatim in the cited document (or stitched from separate\n"
    "places) is MISQUOTED, before any model is asked. The cited documents,\n"
    "then the top -k (5) of a hybrid search, are judged by --nli (or the\n"
    "--llm judge): CONTRADICT when one contradicts with a score of at least\n"
    "--contradict-min, else FAILED when a judgement failed, else SUPPORT\n"
    "when one supports with at least --support-min, else NO_EVIDENCE.\n"
    "A FAILED claim (a model call failed) exits 1 with the result printed\n"
    "(in a batch: journaled as failed, verified again by --resume). --json\n"
    "prints "
    "{\"sentences\":[{\"text\",\"span\",\"status\",\"claims\":[{\"text\",\n"
    "\"verdict\",\"cites\",\"quotes\",\"evidence\":[{\"doc\",\"label\","
    "\"score\",\n"
    "\"sentence\",\"url\",\"cited\"}],\"decided_by\"}]}],\"summary\","
    "\"search\",\n"
    "\"notes\",\"usage\"}. docs/verify.md has the whole rule.",
    verify_opts,
    verify_run,
};
