/* One LLM over rows (batch/rows.h): the model, the work queue and the
 * journal of the batch layer (batch/journal.h), the progress bar. The
 * journal and its resume were corpus vote's own (src/cli/cmd_corpus.c)
 * until issue 33. */
#include <string.h>

#include "batch/journal.h"
#include "batch/rows.h"
#include "core/progress.h"
#include "medtrust/core.h"

struct mtx_rows {
    struct mtx_rows_params p;
    struct mt_llm *llm;
};

/* One run's state, shared by its threads. */
struct rows_run {
    struct mtx_rows *r;
    struct mtx_work_queue q;
    struct mt_progress *bar;
    const struct mtx_rows_fns *fns;
    struct mtx_journal *journal;
    unsigned char *resumed; /* per row: given back from the journal */
    size_t nresumed;
    size_t failed; /* under q.mu */
};

void mtx_rows_default_params(struct mtx_rows_params *p)
{
    memset(p, 0, sizeof *p);
    p->jobs = 4;
}

enum mt_status mtx_rows_open(const struct mtx_rows_params *p,
                             struct mtx_rows **out, struct mt_error *err)
{
    struct mt_llm_params lp;
    struct mtx_rows *r;
    enum mt_status st;

    *out = NULL;
    if (!p->role || p->jobs < 1 || p->jobs > 64)
        return mt_fail(err, MT_EINVAL, "rows: a role and 1..64 jobs");
    if (!(r = mt_calloc(1, sizeof *r)))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    r->p = *p;
    if (!p->llm)
        mt_llm_default_params(&lp);
    st = mt_llm_open_role(p->role, p->llm_spec, p->llm ? p->llm : &lp, &r->llm,
                          err);
    if (st != MT_OK) {
        mtx_rows_close(r);
        return st;
    }
    r->p.llm = NULL; /* not kept */
    *out = r;
    return MT_OK;
}

/* Row i's line into the journal, once it is done. */
static enum mt_status journal_row(struct rows_run *u, size_t i,
                                  struct mt_error *err)
{
    const struct mtx_rows_fns *f = u->fns;

    return mtx_journal_append(u->journal, f->id(f->user, i),
                              f->line(f->user, i), NULL, err);
}

static void row_main(size_t i, void *user)
{
    struct rows_run *u = user;
    struct mt_error err = {MT_OK, ""};
    enum mtx_row_outcome out = MTX_ROW_DONE;
    enum mt_status st;

    if (u->resumed && u->resumed[i])
        return; /* counted on the bar before the run */
    st = u->fns->run(u->fns->user, u->r->llm, i, &out, &err);
    if (st == MT_OK && out == MTX_ROW_DONE && u->journal)
        st = journal_row(u, i, &err);
    pthread_mutex_lock(&u->q.mu);
    u->failed += out == MTX_ROW_FAILED;
    if (st != MT_OK)
        mtx_work_fail_locked(&u->q, st, &err);
    pthread_mutex_unlock(&u->q.mu);
    mtx_progress_add(u->bar, 1);
}

/* A journaled row (the journal's replay): the first row not resumed
 * yet with that id gets its line. */
static void on_resumed(const char *id, const char *line, void *user)
{
    struct rows_run *u = user;
    const struct mtx_rows_fns *f = u->fns;
    size_t i;

    for (i = 0; i < u->q.n; i++) {
        if (u->resumed[i] || strcmp(f->id(f->user, i), id) != 0)
            continue;
        u->resumed[i] = f->resumed(f->user, i, line) != 0;
        u->nresumed += u->resumed[i];
        return;
    }
}

static enum mt_status journal_open(struct rows_run *u, struct mt_error *err)
{
    if (!u->r->p.journal)
        return MT_OK;
    if (!(u->resumed = mt_calloc(u->q.n ? u->q.n : 1, 1)))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    return mtx_journal_open(u->r->p.journal, u->r->p.resume, on_resumed, u,
                            &u->journal, err);
}

static enum mt_status bar_open(struct rows_run *u, size_t n,
                               struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();

    pp.label = u->r->p.label ? u->r->p.label : u->r->p.role;
    pp.total = n;
    pp.quiet = u->r->p.quiet;
    if (mtx_progress_new(&pp, &u->bar) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (u->nresumed)
        mtx_progress_add(u->bar, u->nresumed);
    return MT_OK;
}

enum mt_status mtx_rows_run(struct mtx_rows *r, size_t n,
                            const struct mtx_rows_fns *fns, size_t *failed,
                            struct mt_error *err)
{
    struct rows_run u;
    enum mt_status st;

    memset(&u, 0, sizeof u);
    u.r = r;
    u.fns = fns;
    mtx_work_init(&u.q, n);
    st = journal_open(&u, err);
    if (st == MT_OK)
        st = bar_open(&u, n, err);
    if (st == MT_OK)
        st = mtx_work_run(&u.q, r->p.jobs, row_main, &u, err);
    if (st == MT_OK)
        mtx_progress_finish(u.bar);
    mtx_progress_free(u.bar);
    mtx_journal_close(u.journal);
    mt_free(u.resumed);
    mtx_work_destroy(&u.q);
    *failed = u.failed;
    return st;
}

struct mt_llm *mtx_rows_llm(struct mtx_rows *r)
{
    return r->llm;
}

void mtx_rows_close(struct mtx_rows *r)
{
    if (!r)
        return;
    mt_llm_close(r->llm);
    mt_free(r);
}
