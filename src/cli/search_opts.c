/* Parsing of the search options shared by `search` and `retrieval-eval`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/search_opts.h"
#include "medtrust/core.h"
#include "core/progress.h"
#include "medtrust/retrieve.h"

static int read_mode(const struct cli_args *a, struct mt_search_params *p)
{
    const char *f = cli_get(a, "fusion");
    int mode = (int)p->mode;

    if (cli_get_search_mode(a, "mode", &mode) < 0)
        return -1;
    p->mode = (enum mt_search_mode)mode;
    if (f && strcmp(f, "linear") != 0 && strcmp(f, "rrf") != 0) {
        fprintf(stderr, "medtrust: --fusion must be linear or rrf\n");
        return -1;
    }
    if (f)
        p->fusion = strcmp(f, "rrf") == 0 ? MT_FUSION_RRF : MT_FUSION_LINEAR;
    return 0;
}

/* Parses one end of a --filter range; an empty end is unbounded. */
static int range_end(const char *p, size_t n, double unbounded, double *out)
{
    char buf[64];
    char *end = NULL;

    if (n == 0) {
        *out = unbounded;
        return 0;
    }
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    *out = strtod(buf, &end);
    return *end || end == buf ? -1 : 0;
}

/* Parses --filter KEY=MIN..MAX (either end may be left out). */
static int read_filter(const struct cli_args *a, struct mt_search_params *p)
{
    static char key[128];
    const char *f = cli_get(a, "filter");
    const char *eq = f ? strchr(f, '=') : NULL;
    const char *dots = eq ? strstr(eq, "..") : NULL;

    if (!f)
        return 0;
    if (!eq || !dots || eq == f || (size_t)(eq - f) >= sizeof key ||
        range_end(eq + 1, (size_t)(dots - eq - 1), -HUGE_VAL, &p->filter_min) <
            0 ||
        range_end(dots + 2, strlen(dots + 2), HUGE_VAL, &p->filter_max) < 0) {
        fprintf(stderr,
                "medtrust: --filter must be KEY=MIN..MAX, e.g. "
                "year=2010..2015, not '%s'\n",
                f);
        return -1;
    }
    memcpy(key, f, (size_t)(eq - f));
    key[eq - f] = '\0';
    p->filter_key = key;
    return 0;
}

/* --author, --journal and --pub-type as the search's metadata
 * conditions (inside the first stage; see mt_search_params.meta). */
static void read_meta(const struct cli_args *a, struct mt_search_params *p)
{
    static struct mt_meta_cond c[3];

    p->nmeta = mt_search_pubmed_conds(
        cli_get(a, "author"), cli_get(a, "journal"), cli_get(a, "pub-type"), c);
    p->meta = p->nmeta ? c : NULL;
}

int cli_nltk_stopwords(const struct cli_args *a)
{
    return cli_get(a, "nltk-stopwords") != NULL;
}

int search_opts_read(const struct cli_args *a, struct mt_search_params *p,
                     unsigned *jobs)
{
    unsigned long v = 0;

    mt_search_default_params(p);
    if (read_mode(a, p) < 0 ||
        cli_params_read(a, &mt_search_param_table, p) < 0 ||
        cli_get_uint(a, "jobs", 0, 256, &v) < 0 || read_filter(a, p) < 0)
        return -1;
    *jobs = (unsigned)v;
    p->doc_sum = cli_get(a, "doc-sum") != NULL;
    p->nltk_stopwords = cli_nltk_stopwords(a);
    read_meta(a, p);
    p->source = cli_get(a, "source");
    if (!cli_get(a, "db")) {
        fprintf(stderr, "medtrust: --db is required\n");
        return -1;
    }
    return 0;
}

enum mt_status search_open_retriever(const struct cli_args *a,
                                     struct mt_search_params *p, int lazy,
                                     struct mt_retriever **out,
                                     struct mt_error *err)
{
    struct mt_retriever_params rp;

    mt_retriever_default_params(&rp);
    rp.db_dir = cli_get(a, "db");
    rp.embedder_spec =
        p->mode == MT_SEARCH_BM25 ? "none" : cli_get(a, "embedder");
    rp.reranker_spec = cli_get(a, "reranker");
    rp.lazy = lazy;
    if (rp.reranker_spec && !p->rerank_depth)
        p->rerank_depth = 50;
    return mt_retriever_open(&rp, out, err);
}

struct batch_cli {
    struct mt_progress *bar;
    mtx_search_batch_fn fn;
    void *user;
};

static void on_progress(void *user, size_t done, size_t total)
{
    struct batch_cli *b = user;

    (void)total;
    mtx_progress_update(b->bar, done);
}

static void on_result(void *user, const struct mtx_query *q, size_t i,
                      const struct mt_search_result *res, enum mt_status st,
                      const struct mt_error *err)
{
    struct batch_cli *b = user;

    b->fn(b->user, q, i, res, st, err);
}

enum mt_status search_batch_cli(struct mt_retriever *ret, struct mtx_query *q,
                                size_t n, const struct mt_search_params *p,
                                unsigned jobs, mtx_search_batch_fn fn,
                                void *user, struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mtx_search_batch_params bp;
    struct batch_cli b = {NULL, fn, user};
    enum mt_status st;

    pp.label = "queries";
    pp.total = n;
    if (mtx_progress_new(&pp, &b.bar) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    mtx_search_batch_default_params(&bp);
    bp.search = p;
    bp.jobs = jobs;
    bp.on_result = on_result;
    bp.on_progress = on_progress;
    bp.user = &b;
    st = mtx_search_batch_run(ret, q, n, &bp, err);
    if (st == MT_OK)
        mtx_progress_finish(b.bar);
    mtx_progress_free(b.bar);
    return st;
}
