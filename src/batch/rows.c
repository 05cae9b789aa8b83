/* One LLM over rows (batch/rows.h): the model, the work queue of the
 * batch layer (batch/journal.h), the progress bar. */
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
    mtx_rows_fn fn;
    mtx_rows_done_fn done;
    void *user;
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

static void row_main(size_t i, void *user)
{
    struct rows_run *u = user;
    struct mt_error err = {MT_OK, ""};
    enum mtx_row_outcome out = MTX_ROW_DONE;
    enum mt_status st;

    if (u->done && u->done(u->user, i))
        return; /* counted on the bar before the run */
    st = u->fn(u->user, u->r->llm, i, &out, &err);
    pthread_mutex_lock(&u->q.mu);
    u->failed += out == MTX_ROW_FAILED;
    if (st != MT_OK)
        mtx_work_fail_locked(&u->q, st, &err);
    pthread_mutex_unlock(&u->q.mu);
    mtx_progress_add(u->bar, 1);
}

static enum mt_status bar_open(struct rows_run *u, size_t n,
                               struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    size_t i;

    pp.label = u->r->p.label ? u->r->p.label : u->r->p.role;
    pp.total = n;
    pp.quiet = u->r->p.quiet;
    if (mtx_progress_new(&pp, &u->bar) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; u->done && i < n; i++)
        if (u->done(u->user, i))
            mtx_progress_add(u->bar, 1);
    return MT_OK;
}

enum mt_status mtx_rows_run(struct mtx_rows *r, size_t n, mtx_rows_fn fn,
                            mtx_rows_done_fn done, void *user, size_t *failed,
                            struct mt_error *err)
{
    struct rows_run u;
    enum mt_status st;

    memset(&u, 0, sizeof u);
    u.r = r;
    u.fn = fn;
    u.done = done;
    u.user = user;
    mtx_work_init(&u.q, n);
    st = bar_open(&u, n, err);
    if (st == MT_OK)
        st = mtx_work_run(&u.q, r->p.jobs, row_main, &u, err);
    if (st == MT_OK)
        mtx_progress_finish(u.bar);
    mtx_progress_free(u.bar);
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
