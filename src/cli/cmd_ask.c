/* medtrust ask: one question answered from the corpus with citations,
 * each cited claim verified (VerifAI); or a JSONL batch of questions in
 * parallel, journaled so --resume finishes a killed run. */
#include <stdio.h>
#include <string.h>

#include "cli/qa_opts.h"
#include "core/buf.h"
#include "medtrust/core.h"

#define QUESTION_READ_MAX ((size_t)16 << 20)

static const struct cli_opt ask_opts[] = {
    QA_OPTS,
    {"json", 'j', NULL, "print the result as one JSON object", 0},
    {"batch", 'b', "FILE",
     "JSONL of {\"id\",\"query\"}: answer each "
     "(needs --out)",
     0},
    {"out", 'o', "FILE",
     "batch results, one JSON line per question in "
     "input order",
     0},
    {"jobs", 'J', "N", "batch questions at once, 1..256 (default 4)", 0},
    {"limit", 'n', "N", "only the first N batch questions", 0},
    {"resume", 'r', NULL, "keep the questions OUT.journal says are done", 0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {NULL, 0, NULL, NULL, 0},
};

/* ==== Text form ==== */

static void print_verdict(const struct mt_qa_verdict *v, const char *pre,
                          const char *suf)
{
    printf("      %s%s%s: %s", pre, v->doc_id, suf, mt_qa_label_str(v->label));
    if (v->label == MT_QA_NO_REFERENCE)
        printf(" (not among the retrieved documents)\n");
    else if (v->label == MT_QA_UNVERIFIED)
        printf(" (%s)\n", v->error ? v->error : "verifier failed");
    else
        printf(" %.2f%s%s%s\n", (double)v->score, v->evidence ? "  \"" : "",
               v->evidence ? v->evidence : "", v->evidence ? "\"" : "");
}

static void print_claims(const struct mt_qa_result *r, const char *pre,
                         const char *suf)
{
    size_t i, k;

    if (r->nclaims)
        printf("\nClaims:\n");
    for (i = 0; i < r->nclaims; i++) {
        const struct mt_qa_claim *c = &r->claims[i];

        printf("  %zu. [%s] %s\n", i + 1, mt_qa_label_str(c->label), c->text);
        for (k = 0; k < c->nverdicts; k++)
            print_verdict(&c->verdicts[k], pre, suf);
    }
}

static void print_text(const struct mt_qa_result *r, const char *label)
{
    const char *at = strstr(label, "{id}");
    char pre[128];
    const struct mt_qa_usage *u = &r->usage;
    size_t i;

    snprintf(pre, sizeof pre, "%.*s", at ? (int)(at - label) : 0, label);
    printf("Question: %s\n\nAnswer (%s search, %zu documents):\n%s\n",
           r->question, r->search, r->ndocs,
           r->answer[0] ? r->answer : "(none)");
    print_claims(r, pre, at ? at + 4 : "");
    if (r->ndocs)
        printf("\nDocuments:\n");
    for (i = 0; i < r->ndocs; i++)
        printf("  %zu. %s%s%s  %.4f  %s\n", i + 1, pre, r->docs[i].doc_id,
               at ? at + 4 : "", r->docs[i].score,
               r->docs[i].title ? r->docs[i].title : "");
    for (i = 0; i < r->nnotes; i++)
        printf("%s%s\n", i ? "  " : "\nNotes:\n  ", r->notes[i]);
    printf("\n%u LLM calls, %llu prompt + %llu completion tokens%s, %u "
           "verifications, %.1f s\n",
           u->llm_calls, (unsigned long long)u->prompt_tokens,
           (unsigned long long)u->completion_tokens,
           u->estimated_calls ? " (estimated: no usage from the server)" : "",
           u->verifications, u->seconds);
}

/* ==== One question ==== */

/* The question: the positional words joined, or stdin for "-". */
static enum mt_status question(const struct cli_args *a, struct mt_buf *b,
                               struct mt_error *err)
{
    char chunk[65536];
    size_t k;
    int i;
    enum mt_status st = mtx_buf_reserve(b, 1);

    if (a->npos == 1 && strcmp(a->pos[0], "-") == 0) {
        while (st == MT_OK && (k = fread(chunk, 1, sizeof chunk, stdin)))
            st = mtx_buf_append(b, chunk, k);
        return st == MT_OK ? MT_OK
                           : mt_fail(err, st, "stdin: over %zu bytes",
                                     QUESTION_READ_MAX);
    }
    for (i = 0; st == MT_OK && i < a->npos; i++)
        st = mtx_buf_printf(b, "%s%s", i ? " " : "", a->pos[i]);
    return st == MT_OK ? MT_OK : mt_fail(err, st, "question too long");
}

static enum mt_status ask_one(const struct cli_args *a, struct mt_qa *q,
                              const char *label, struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT(QUESTION_READ_MAX);
    struct mt_qa_result *r = NULL;
    enum mt_status st = question(a, &b, err);
    char *js;

    if (st == MT_OK)
        st = mt_qa_ask(q, b.data, &r, err);
    /* MT_EMODEL: the empty result and its notes are shown, exit status 1 */
    if (r && cli_get(a, "json")) {
        js = mt_qa_result_json(r);
        if (js)
            printf("%s\n", js);
        if (!js)
            st = mt_fail(err, MT_ENOMEM, "out of memory");
        mt_free(js);
    } else if (r) {
        print_text(r, label);
    }
    mt_qa_result_free(r);
    mtx_buf_free(&b);
    return st;
}

/* ==== Batch ==== */

static enum mt_status ask_batch(const struct cli_args *a, struct mt_qa *q,
                                unsigned jobs, size_t limit,
                                struct mt_error *err)
{
    struct mtx_items_stats bs;
    struct mtx_qa_item *v = NULL;
    size_t n = 0;
    enum mt_status st =
        qa_batch_file(a, "batch", "ask", q, jobs, limit, &v, &n, &bs, err);

    if (st == MT_OK)
        fprintf(stderr,
                "ask: %zu questions (%zu resumed, %zu answered, "
                "%zu failed: see their \"error\")\n",
                n, bs.resumed, bs.done, bs.failed);
    if (st == MT_OK)
        qa_batch_failed_ids("ask", v, n);
    mtx_qa_items_free(v, n);
    if (st == MT_OK && bs.failed) /* exit status 1, as mediqa's */
        return mt_fail(err, MT_EMODEL, "%zu question%s failed", bs.failed,
                       bs.failed == 1 ? "" : "s");
    return st;
}

static int ask_run(struct cli_args *a)
{
    struct mt_qa_params p;
    struct mt_qa *q = NULL;
    struct mt_error err = {MT_OK, ""};
    unsigned long jobs = 4, limit = 0;
    int batch = cli_get(a, "batch") != NULL;
    enum mt_status st;

    static const struct qa_run_input in = {
        "ask", "QUESTION", "give a QUESTION (or - to read it from stdin)"};

    if (qa_run_args(a, &in, &p, &jobs, &limit) != 0)
        return 1;
    p.llm.max_concurrency = (uint32_t)jobs * 2;
    st = mt_qa_open(&p, &q, &err);
    if (st == MT_OK)
        st = batch ? ask_batch(a, q, (unsigned)jobs, limit, &err)
                   : ask_one(a, q, p.label_format, &err);
    mt_qa_close(q);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_ask = {
    "ask",
    "answer a question with verified references (VerifAI)",
    "--db DIR [OPTIONS] QUESTION|-  or  --batch FILE.jsonl --out FILE",
    "Searches the corpus (hybrid when the index has vectors: each list over\n"
    "its top score, 0.7 BM25 + 0.3 vectors, chunk scores summed per\n"
    "document; BM25 otherwise, with a note), asks the model to answer from\n"
    "the top -k documents citing them as [PUBMED:ID], splits the answer\n"
    "into claims and verifies each (claim, cited document) pair: SUPPORT,\n"
    "CONTRADICT, NO_EVIDENCE, or NO_REFERENCE for an id that was not\n"
    "retrieved (never shown to the verifier). A claim is CONTRADICT when\n"
    "any cited document contradicts it, else UNVERIFIED when the verifier\n"
    "failed on one of its pairs, else SUPPORT when any supports it, else\n"
    "NO_EVIDENCE. An UNVERIFIED claim, an empty answer or failed answer\n"
    "calls fail the question: the result is printed, exit status 1 (in a\n"
    "batch: an \"error\" line, journaled as failed, asked again by\n"
    "--resume). --json prints {\"question\",\"answer\",\"claims\",\n"
    "\"documents\",\"search\",\"final_verdict\",\"notes\",\"usage\"}; notes\n"
    "say why a result is partial. --batch journals each answer to\n"
    "OUT.journal (synced), so --resume after a crash answers only the rest.",
    ask_opts,
    ask_run,
};
