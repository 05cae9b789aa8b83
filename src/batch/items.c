/* A resumable batch of JSONL items (batch/items.h), on the batch layer's
 * journal and work queue (batch/journal.h); moved here from the copies
 * `ask`/`qa-eval` (src/cli/qa_opts.c) and `verify` (src/cli/cmd_verify.c)
 * each kept (issue 33). */
#include <stdio.h>
#include <string.h>

#include "batch/items.h"
#include "batch/journal.h"
#include "core/buf.h"
#include "core/jsonl.h"
#include "core/progress.h"
#include "medtrust/core.h"

/* ==== Reading ==== */

void mtx_items_free(void *v, size_t n, size_t size, mtx_item_free_fn free_fn)
{
    size_t i;

    for (i = 0; v && i < n; i++) {
        struct mtx_item *x = MTX_ITEM(v, size, i);

        if (free_fn)
            free_fn(x);
        mt_free(x->id);
        mt_free(x->line);
    }
    mt_free(v);
}

static enum mt_status read_item(struct mtx_item *x, size_t size, json_t *o,
                                const char *field, mtx_item_read_fn read)
{
    const char *id = json_string_value(json_object_get(o, "id"));

    memset(x, 0, size);
    if (!id || !json_string_value(json_object_get(o, field)))
        return MT_EPARSE;
    x->id = mt_strdup(id);
    return x->id ? read(x, o) : MT_ENOMEM;
}

enum mt_status mtx_items_load(const char *path, size_t limit, size_t size,
                              const char *field, mtx_item_read_fn read,
                              mtx_item_free_fn free_fn, void **out, size_t *n,
                              struct mt_error *err)
{
    struct mt_jsonl_params jp = mtx_jsonl_default_params();
    struct mt_jsonl *r = NULL;
    void *v = NULL;
    size_t cap = 0;
    json_t *o = NULL; /* owned by the reader */
    enum mt_status st = mtx_jsonl_open(path, &jp, &r, err);

    *out = NULL;
    *n = 0;
    while (st == MT_OK && (!limit || *n < limit)) {
        st = mtx_jsonl_next(r, &o, err);
        if (st != MT_OK || !o)
            break;
        st = mtx_grow(&v, &cap, *n + 1, size);
        if (st == MT_OK)
            st = read_item(MTX_ITEM(v, size, (*n)++), size, o, field, read);
        if (st == MT_EPARSE)
            mt_fail(err, st,
                    "%s:%zu: each line needs string \"id\" and \"%s\" "
                    "fields",
                    path, mtx_jsonl_line(r), field);
    }
    mtx_jsonl_close(r);
    if (st != MT_OK) {
        mtx_items_free(v, *n, size, free_fn);
        *n = 0;
        return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
    }
    *out = v;
    return MT_OK;
}

/* ==== Running ==== */

struct run {
    void *v;
    size_t size;
    const struct mtx_items_params *p;
    struct mtx_work_queue wq; /* wq.mu also guards stats */
    struct mtx_journal *journal;
    struct mt_progress *bar;
    struct mtx_items_stats stats;
};

static void record(struct run *b, struct mtx_item *x, char *line,
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
    b->stats.done += ok != 0;
    b->stats.failed += ok == 0;
    pthread_mutex_unlock(&b->wq.mu);
    mtx_progress_add(b->bar, 1);
}

static void run_one(size_t i, void *user)
{
    struct run *b = user;
    struct mtx_item *x = MTX_ITEM(b->v, b->size, i);
    struct mt_error err = {MT_OK, ""};
    char *line;

    if (x->resumed)
        return;
    line = b->p->run(b->p->user, x, &err);
    record(b, x, line, &err);
}

static void on_resumed(const char *id, const char *line, void *user)
{
    struct run *b = user;
    size_t i;

    for (i = 0; i < b->wq.n; i++) {
        struct mtx_item *x = MTX_ITEM(b->v, b->size, i);

        if (x->resumed || strcmp(x->id, id) != 0)
            continue;
        x->line = mt_strdup(line);
        x->resumed = x->line != NULL;
        b->stats.resumed += (size_t)x->resumed;
        return;
    }
}

static enum mt_status start(struct run *b, struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    enum mt_status st = MT_OK;

    if (b->p->journal)
        st = mtx_journal_open(b->p->journal, b->p->resume, on_resumed, b,
                              &b->journal, err);
    if (st != MT_OK)
        return st;
    pp.label = b->p->label;
    pp.total = b->wq.n;
    pp.quiet = b->p->quiet;
    st = mtx_progress_new(&pp, &b->bar);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    mtx_progress_update(b->bar, b->stats.resumed);
    return MT_OK;
}

enum mt_status mtx_items_run(void *v, size_t n, size_t size,
                             const struct mtx_items_params *p,
                             struct mtx_items_stats *stats,
                             struct mt_error *err)
{
    struct run b;
    enum mt_status st;

    memset(&b, 0, sizeof b);
    b.v = v;
    b.size = size;
    b.p = p;
    mtx_work_init(&b.wq, n);
    st = start(&b, err);
    if (st == MT_OK)
        st = mtx_work_run(&b.wq, p->jobs ? p->jobs : 1, run_one, &b, err);
    if (b.bar)
        mtx_progress_finish(b.bar);
    mtx_progress_free(b.bar);
    mtx_journal_close(b.journal);
    mtx_work_destroy(&b.wq);
    *stats = b.stats;
    return st;
}

/* ==== Writing ==== */

struct lines {
    const void *v;
    size_t size;
};

static const char *item_line(size_t i, void *user)
{
    const struct lines *l = user;
    const struct mtx_item *x =
        (const struct mtx_item *)((const char *)l->v + i * l->size);

    return x->line ? x->line : "{}";
}

enum mt_status mtx_items_write(const char *path, const void *v, size_t n,
                               size_t size, struct mt_error *err)
{
    struct lines l = {v, size};

    return mtx_work_write_lines(path, n, item_line, &l, err);
}
