/* `ask` and `qa-eval` options, and their parallel batch of questions with
 * a journal (fdatasync per question) so a killed run resumes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "batch/journal.h"
#include "cli/qa_opts.h"
#include "core/jsonl.h"
#include "core/progress.h"
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

/* ==== Questions ==== */

void qa_items_free(struct qa_item *v, size_t n)
{
    size_t i, j;

    for (i = 0; v && i < n; i++) {
        for (j = 0; j < v[i].nrel; j++)
            mt_free(v[i].relevant[j]);
        mt_free(v[i].relevant);
        mt_free(v[i].id);
        mt_free(v[i].query);
        mt_free(v[i].gold);
        mt_free(v[i].line);
    }
    mt_free(v);
}

static char *dup_json_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s ? mt_strdup(s) : NULL;
}

static enum mt_status fill_item(struct qa_item *x, json_t *o)
{
    json_t *rel = json_object_get(o, "relevant");
    size_t i;

    x->id = dup_json_str(o, "id");
    x->query = dup_json_str(o, "query");
    x->gold = dup_json_str(o, "answer");
    if (!x->id || !x->query)
        return MT_EPARSE;
    x->relevant = mt_calloc(json_array_size(rel) + 1, sizeof *x->relevant);
    if (!x->relevant)
        return MT_ENOMEM;
    for (i = 0; i < json_array_size(rel); i++) {
        const char *s = json_string_value(json_array_get(rel, i));

        if (s && !(x->relevant[x->nrel++] = mt_strdup(s)))
            return MT_ENOMEM;
    }
    return MT_OK;
}

static enum mt_status grow(struct qa_item **v, size_t n, size_t *cap)
{
    struct qa_item *x;

    if (n < *cap)
        return MT_OK;
    x = mt_realloc(*v, (*cap ? *cap * 2 : 64) * sizeof *x);
    if (!x)
        return MT_ENOMEM;
    *v = x;
    *cap = *cap ? *cap * 2 : 64;
    return MT_OK;
}

enum mt_status qa_items_load(const char *path, size_t limit,
                             struct qa_item **out, size_t *n,
                             struct mt_error *err)
{
    struct mt_jsonl_params jp = mtx_jsonl_default_params();
    struct mt_jsonl *r = NULL;
    struct qa_item *v = NULL;
    size_t cap = 0;
    json_t *o = NULL; /* owned by the reader */
    enum mt_status st = mtx_jsonl_open(path, &jp, &r, err);

    *n = 0;
    while (st == MT_OK && (!limit || *n < limit)) {
        st = mtx_jsonl_next(r, &o, err);
        if (st != MT_OK || !o)
            break;
        st = grow(&v, *n, &cap);
        if (st == MT_OK) {
            memset(&v[*n], 0, sizeof v[*n]);
            st = fill_item(&v[(*n)++], o);
        }
        if (st == MT_EPARSE)
            mt_fail(err, st,
                    "%s:%zu: each line needs string \"id\" and "
                    "\"query\" fields",
                    path, mtx_jsonl_line(r));
    }
    mtx_jsonl_close(r);
    if (st != MT_OK) {
        qa_items_free(v, *n);
        return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
    }
    *out = v;
    return MT_OK;
}

/* ==== The batch ==== */

struct batch {
    struct mt_qa *q;
    struct qa_item *v;
    struct mtx_work_queue wq; /* wq.mu also guards stats */
    struct mtx_journal *journal;
    struct mt_progress *bar;
    struct qa_batch_stats stats;
};

/* {"id":ID,...result} or {"id":ID,"question":Q,"error":why}. */
static char *result_line(const struct qa_item *x, const struct mt_qa_result *r,
                         const struct mt_error *e)
{
    return mtx_work_line(x->id, r ? mt_qa_result_json(r) : NULL,
                         r ? NULL
                           : json_pack("{s:s,s:s,s:s}", "id", x->id, "question",
                                       x->query, "error", e->msg));
}

static void record(struct batch *b, struct qa_item *x, char *line,
                   const struct mt_error *e)
{
    struct mt_error err = {MT_OK, ""};
    int ok = e->status == MT_OK;
    enum mt_status st = !line ? mt_fail(&err, MT_ENOMEM, "out of memory")
                        : b->journal
                            ? mtx_journal_append(b->journal, x->id, line,
                                                 ok ? NULL : e->msg, &err)
                            : MT_OK;

    pthread_mutex_lock(&b->wq.mu);
    x->line = line;
    x->failed = !ok;
    mtx_work_fail_locked(&b->wq, st, &err);
    b->stats.answered += ok != 0;
    b->stats.failed += ok == 0;
    pthread_mutex_unlock(&b->wq.mu);
    mtx_progress_add(b->bar, 1);
}

static void ask_one(size_t i, void *user)
{
    struct batch *b = user;
    struct qa_item *x = &b->v[i];
    struct mt_qa_result *r = NULL;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    if (x->resumed)
        return;
    st = mt_qa_ask(b->q, x->query, &r, &err);
    if (st != MT_OK && !err.msg[0])
        snprintf(err.msg, sizeof err.msg, "%s", mt_status_str(st));
    err.status = st; /* MT_EMODEL: no answer, whatever r holds */
    record(b, x, result_line(x, st == MT_OK ? r : NULL, &err), &err);
    mt_qa_result_free(r);
}

static void on_resumed(const char *id, const char *line, void *user)
{
    struct batch *b = user;
    size_t i;

    for (i = 0; i < b->wq.n; i++) {
        struct qa_item *x = &b->v[i];

        if (x->resumed || strcmp(x->id, id) != 0)
            continue;
        x->line = mt_strdup(line);
        x->resumed = x->line != NULL;
        b->stats.resumed += (size_t)x->resumed;
        return;
    }
}

static enum mt_status start(struct batch *b, const struct qa_batch_params *bp,
                            struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    enum mt_status st = MT_OK;

    if (bp->journal)
        st = mtx_journal_open(bp->journal, bp->resume, on_resumed, b,
                              &b->journal, err);
    if (st != MT_OK)
        return st;
    pp.label = bp->label;
    pp.total = b->wq.n;
    pp.quiet = bp->quiet;
    st = mtx_progress_new(&pp, &b->bar);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    mtx_progress_update(b->bar, b->stats.resumed);
    return MT_OK;
}

enum mt_status qa_batch_run(struct mt_qa *q, struct qa_item *v, size_t n,
                            const struct qa_batch_params *bp,
                            struct qa_batch_stats *stats, struct mt_error *err)
{
    struct batch b;
    enum mt_status st;

    memset(&b, 0, sizeof b);
    b.q = q;
    b.v = v;
    mtx_work_init(&b.wq, n);
    st = start(&b, bp, err);
    if (st == MT_OK)
        st = mtx_work_run(&b.wq, bp->jobs ? bp->jobs : 1, ask_one, &b, err);
    if (b.bar)
        mtx_progress_finish(b.bar);
    mtx_progress_free(b.bar);
    mtx_journal_close(b.journal);
    mtx_work_destroy(&b.wq);
    *stats = b.stats;
    return st;
}

void qa_batch_failed_ids(const char *label, const struct qa_item *v, size_t n)
{
    size_t i, k = 0;

    for (i = 0; i < n; i++) {
        if (!v[i].failed)
            continue;
        if (k++ == 0)
            fprintf(stderr,
                    "%s: failed (--resume asks them again; the reason "
                    "is in their \"error\"):",
                    label);
        if (k <= 50)
            fprintf(stderr, " %s", v[i].id);
    }
    if (k > 50)
        fprintf(stderr, " ... and %zu more", k - 50);
    if (k)
        fputc('\n', stderr);
}

/* An item with no line (out of memory) is written as {}, so the output
 * keeps one line an input item. */
static const char *item_line(size_t i, void *user)
{
    const struct qa_item *v = user;

    return v[i].line ? v[i].line : "{}";
}

enum mt_status qa_batch_file(const struct cli_args *a, const char *input,
                             const char *label, struct mt_qa *q, unsigned jobs,
                             size_t limit, struct qa_item **v, size_t *n,
                             struct qa_batch_stats *bs, struct mt_error *err)
{
    struct qa_batch_params bp = {NULL, cli_get(a, "resume") != NULL, jobs,
                                 cli_get(a, "no-progress") != NULL, label};
    const char *out = cli_get(a, "out");
    char jpath[4200];
    enum mt_status st = qa_items_load(cli_get(a, input), limit, v, n, err);

    memset(bs, 0, sizeof *bs);
    if (out) {
        snprintf(jpath, sizeof jpath, "%s.journal", out);
        bp.journal = jpath;
    }
    if (st == MT_OK)
        st = qa_batch_run(q, *v, *n, &bp, bs, err);
    if (st == MT_OK && out)
        st = mtx_work_write_lines(out, *n, item_line, *v, err);
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
