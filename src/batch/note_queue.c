/* A note batch on the shared queue (batch/note_queue.h): the job payload
 * and result formats, submitting, waiting and collecting. */
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "batch/note_queue.h"
#include "check/usage.h"
#include "core/progress.h"
#include "medtrust/core.h"

/* ==== Submitting ==== */

static char *note_payload(const struct mtx_note *x)
{
    json_t *o = json_pack("{s:s,s:s}", "id", x->id, "text", x->text);
    char *s;

    if (o && x->sents)
        json_object_set_new(o, "sentences", json_string(x->sents));
    s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

enum mt_status mtx_note_queue_submit(struct mtx_pg *pg, const char *path,
                                     const char *options,
                                     const struct mtx_note *v, size_t n,
                                     int64_t *run, struct mt_error *err)
{
    char **pl = mt_calloc(n ? n : 1, sizeof *pl);
    size_t i;
    enum mt_status st = pl ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");

    for (i = 0; st == MT_OK && i < n; i++)
        if (!(pl[i] = note_payload(&v[i]))) /* or out of memory */
            st = mt_fail(err, MT_EPARSE,
                         "%s: note %s (record %zu): a field is not valid "
                         "UTF-8",
                         path, v[i].id, i + 1);
    if (st == MT_OK)
        st = mtx_queue_submit(pg, MTX_NOTE_QUEUE_KIND, options,
                              (const char *const *)pl, n, run, err);
    for (i = 0; pl && i < n; i++)
        mt_free(pl[i]);
    mt_free(pl);
    return st;
}

/* ==== A worker's job ==== */

int mtx_note_job_read(const char *payload, struct mtx_note_job *j)
{
    json_t *p = json_loads(payload, 0, NULL);

    j->json = p;
    j->id = json_string_value(json_object_get(p, "id"));
    j->text = json_string_value(json_object_get(p, "text"));
    j->sents = json_string_value(json_object_get(p, "sentences"));
    return j->id && j->text ? 0 : -1;
}

void mtx_note_job_free(struct mtx_note_job *j)
{
    json_decref(j->json);
    memset(j, 0, sizeof *j);
}

char *mtx_note_job_result(const char *id, const struct mtx_batch_outcome *o)
{
    json_t *r = o->line ? json_pack("{s:s,s:s,s:b,s:o}", "id", id, "line",
                                    o->line, "fallback", o->fallback, "usage",
                                    mtx_check_usage_json(&o->usage))
                        : NULL;
    char *s;

    if (r && o->failed)
        json_object_set_new(r, "failed", json_string(o->err.msg));
    if (r && o->trace)
        json_object_set_new(r, "trace", json_string(o->trace));
    s = r ? json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(r);
    return s;
}

/* ==== Collecting ==== */

/* Waits (showing done/total) until every job of the run is done. */
static enum mt_status wait_done(struct mtx_pg *pg, int64_t run, int wait,
                                int quiet, struct mtx_queue_counts *c,
                                struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_progress *bar = NULL;
    enum mt_status st = mtx_queue_counts(pg, run, NULL, c, err);

    pp.label = "collect";
    pp.total = st == MT_OK ? (uint64_t)c->total : 0;
    pp.quiet = quiet || !wait || (st == MT_OK && c->done == c->total);
    if (st == MT_OK && mtx_progress_new(&pp, &bar) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    while (st == MT_OK && c->done < c->total && wait) {
        mtx_progress_update(bar, (uint64_t)c->done);
        usleep(250 * 1000);
        st = mtx_queue_counts(pg, run, NULL, c, err);
    }
    if (st == MT_OK)
        mtx_progress_update(bar, (uint64_t)c->done);
    mtx_progress_finish(bar);
    mtx_progress_free(bar);
    if (st == MT_OK && c->done < c->total)
        st = mt_fail(err, MT_ENOTFOUND,
                     "run %lld is not finished: %lld of %lld notes done "
                     "(%lld queued, %lld running)",
                     (long long)run, (long long)c->done, (long long)c->total,
                     (long long)c->queued, (long long)c->running);
    return st;
}

enum mt_status mtx_note_queue_wait(struct mtx_pg *pg, int64_t run, int wait,
                                   int quiet, struct mtx_queue_counts *c,
                                   struct mt_error *err)
{
    char *kind = NULL, *opts = NULL;
    enum mt_status st = mtx_queue_run(pg, run, &kind, &opts, err);

    if (st == MT_OK && strcmp(kind, MTX_NOTE_QUEUE_KIND) != 0)
        st = mt_fail(err, MT_EINVAL, "run %lld is a '%s' run, not mediqa",
                     (long long)run, kind);
    mt_free(kind);
    mt_free(opts);
    if (st == MT_OK)
        st = wait_done(pg, run, wait, quiet, c, err);
    return st;
}

struct results {
    struct mtx_note_collect *c;
    FILE *trace;
};

static enum mt_status on_result(int64_t seq, const char *result, int failed,
                                void *user)
{
    struct results *r = user;
    struct mtx_note_collect *c = r->c;
    json_t *o = json_loads(result, 0, NULL);
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *line = json_string_value(json_object_get(o, "line"));
    const char *tr = json_string_value(json_object_get(o, "trace"));
    struct mtx_note *x;
    struct mt_check_usage u;

    if (!id || !line || seq < 0 || (size_t)seq >= c->n) {
        json_decref(o);
        return MT_EPARSE;
    }
    x = &c->notes[seq];
    x->id = mt_strdup(id);
    x->line = mt_strdup(line);
    x->failed = failed;
    mtx_check_usage_read(json_object_get(o, "usage"), &u);
    mtx_batch_usage_add(&c->total, &u);
    x->fallback = json_is_true(json_object_get(o, "fallback"));
    c->fallback += (size_t)x->fallback;
    c->failed += (size_t)failed;
    c->got++;
    if (r->trace && tr)
        fprintf(r->trace, "%s\n", tr);
    json_decref(o);
    return x->id && x->line ? MT_OK : MT_ENOMEM;
}

enum mt_status mtx_note_queue_results(struct mtx_pg *pg, int64_t run, size_t n,
                                      FILE *trace, struct mtx_note_collect *c,
                                      struct mt_error *err)
{
    struct results r = {c, trace};
    enum mt_status st;

    c->n = n;
    if (!(c->notes = mt_calloc(n + 1, sizeof *c->notes))) {
        c->n = 0;
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    st = mtx_queue_results(pg, run, on_result, &r, err);
    if (st == MT_OK && c->got != c->n)
        st = mt_fail(err, MT_EDB, "run %lld: %zu of %zu results readable",
                     (long long)run, c->got, c->n);
    else if (st == MT_EPARSE || st == MT_ENOMEM)
        mt_fail(err, st, "run %lld: a job's result is unreadable",
                (long long)run);
    return st;
}

void mtx_note_collect_free(struct mtx_note_collect *c)
{
    mtx_notes_free(c->notes, c->n);
    c->notes = NULL;
    c->n = 0;
}

/* ==== A worker's job ==== */

static void finish(struct mtx_qjob *j, const char *result, int failed)
{
    struct mt_error err = {MT_OK, ""};

    if (!result) {
        mt_fail(&err, MT_ENOMEM, "out of memory");
        mtx_qworker_fail(j->w, err.status, &err);
    } else if (mtx_qjob_finish(j, result, failed, &err) == MT_ECANCELED) {
        mt_log(MT_LOG_WARN, "%s", err.msg);
    }
}

void mtx_note_queue_job(struct mtx_checkers *checkers, struct mtx_qjob *j)
{
    struct mtx_note_job n;
    struct mt_error err = {MT_OK, ""};
    struct mtx_batch_outcome o;
    struct mt_agent *agent = NULL;
    char key[32];
    char *res;
    enum mt_status st;

    if (mtx_note_job_read(j->row.payload, &n) != 0) {
        mtx_note_job_free(&n); /* --collect reports the unreadable result */
        finish(j, "{}", 1);
        return;
    }
    snprintf(key, sizeof key, "%lld", (long long)j->row.run);
    st = mtx_checkers_get(checkers, key, &j->row.run, &agent, &err);
    if (st != MT_OK) {
        mtx_qjob_release(j, NULL);
        mtx_qworker_fail(j->w, st, &err);
        mtx_note_job_free(&n);
        return;
    }
    mtx_batch_check_note(agent, NULL, n.id, n.text, n.sents, 1, &o);
    mtx_checkers_put(checkers, agent);
    res = mtx_note_job_result(n.id, &o);
    finish(j, res, o.failed);
    mt_free(res);
    mtx_batch_outcome_free(&o);
    mtx_note_job_free(&n);
}
