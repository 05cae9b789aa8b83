/* `ask` and `qa-eval` options, and the options of their batch of
 * questions (the batch itself: src/batch/qa_batch.c). */
#include <stdio.h>
#include <string.h>

#include "cli/qa_opts.h"
#include "medtrust/core.h"

/* ==== Options ==== */

static int get_attribution(const struct cli_args *a, struct mt_qa_params *p)
{
    const char *v = cli_get(a, "attribution");

    if (!v || strcmp(v, "sentence") == 0)
        return 0;
    if (strcmp(v, "document") == 0) {
        p->attribution = MT_QA_ATTRIB_DOCUMENT;
        return 0;
    }
    fprintf(stderr,
            "medtrust: --attribution must be sentence or document, "
            "not '%s'\n",
            v);
    return -1;
}

int qa_opts_read(const struct cli_args *a, struct mt_qa_params *p)
{
    mt_qa_default_params(p);
    if (cli_params_read(a, &mt_qa_param_table, p) < 0 ||
        cli_llm_params_read(a, &p->llm) < 0 ||
        cli_get_search_mode(a, "search-mode", &p->search_mode) < 0 ||
        get_attribution(a, p) < 0)
        return -1;
    p->nltk_stopwords = cli_nltk_stopwords(a);
    p->author = cli_get(a, "author");
    p->journal = cli_get(a, "journal");
    p->pub_type = cli_get(a, "pub-type");
    p->db_dir = cli_get(a, "db");
    p->llm_spec = cli_get(a, "llm");
    p->nli_spec = cli_get(a, "nli");
    p->embedder_spec = cli_get(a, "embedder");
    p->reranker_spec = cli_get(a, "reranker");
    p->source = cli_get(a, "source");
    p->prompts_dir = cli_get(a, "prompts");
    if (cli_get(a, "label"))
        p->label_format = cli_get(a, "label");
    return 0;
}

/* ==== The batch ==== */

void qa_batch_failed_ids(const char *label, const struct mtx_qa_item *v,
                         size_t n)
{
    size_t i, k = 0;

    for (i = 0; i < n; i++) {
        if (!v[i].it.failed)
            continue;
        if (k++ == 0)
            fprintf(stderr,
                    "%s: failed (--resume asks them again; the reason "
                    "is in their \"error\"):",
                    label);
        if (k <= 50)
            fprintf(stderr, " %s", v[i].it.id);
    }
    if (k > 50)
        fprintf(stderr, " ... and %zu more", k - 50);
    if (k)
        fputc('\n', stderr);
}

enum mt_status qa_batch_file(const struct cli_args *a, const char *input,
                             const char *label, struct mt_qa *q, unsigned jobs,
                             size_t limit, struct mtx_qa_item **v, size_t *n,
                             struct mtx_items_stats *bs, struct mt_error *err)
{
    struct mtx_qa_batch_params bp = {cli_get(a, "out"),
                                     cli_get(a, "resume") != NULL, jobs,
                                     cli_get(a, "no-progress") != NULL, label};
    enum mt_status st = mtx_qa_items_load(cli_get(a, input), limit, v, n, err);

    memset(bs, 0, sizeof *bs);
    if (st == MT_OK)
        st = mtx_qa_batch_run(q, *v, *n, &bp, bs, err);
    return st;
}

static int qa_usage(const struct qa_run_input *in, const char *msg)
{
    fprintf(stderr, "medtrust %s: %s\nTry 'medtrust %s --help'.\n", in->verb,
            msg, in->verb);
    return 1;
}

int qa_run_args(const struct cli_args *a, const struct qa_run_input *in,
                struct mt_qa_params *p, unsigned long *jobs,
                unsigned long *limit)
{
    char msg[96];

    if (qa_opts_read(a, p) < 0 || cli_get_uint(a, "jobs", 1, 256, jobs) < 0 ||
        cli_get_uint(a, "limit", 1, 100000000, limit) < 0)
        return 1;
    if (!p->db_dir)
        return qa_usage(in, "give --db DIR (a store built by 'medtrust "
                            "index')");
    if (cli_get(a, "batch") && (!cli_get(a, "out") || a->npos)) {
        snprintf(msg, sizeof msg, "--batch needs --out FILE and no %s",
                 in->input);
        return qa_usage(in, msg);
    }
    if (!cli_get(a, "batch") && a->npos == 0)
        return qa_usage(in, in->give);
    return 0;
}
