/* A sweep's threshold replay (batch/sweep.h, `medtrust sweep --replay`):
 * a recorded sweep's runs crossed with a grid of MedEval thresholds. A
 * note whose every recorded MedEval round the new thresholds decide as
 * before is replayed from the recorded run (the same calls, the same
 * answer); the others are rerun by mediqa. The grid, the runs and the
 * summary are sweep.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/sweep_int.h"
#include "core/buf.h"
#include "core/file.h"
#include "medtrust/check.h"
#include "medtrust/core.h"

/* ==== Threshold replay: the plan ==== */

static void array_extend_take(json_t *a, json_t *b)
{
    json_array_extend(a, b);
    json_decref(b);
}

static int is_threshold(const char *option)
{
    return strcmp(option, "accept-mean") == 0 ||
           strcmp(option, "accept-min") == 0;
}

/* args less any threshold given in them (the replay sets its own). */
static json_t *without_thresholds(const json_t *args)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < json_array_size(args); i++) {
        const char *v = json_string_value(json_array_get(args, i));

        if (v && strncmp(v, "--accept-mean", 13) != 0 &&
            strncmp(v, "--accept-min", 12) != 0)
            json_array_append_new(a, json_string(v));
    }
    return a;
}

/* Cell 'dc' of the recorded sweep crossed with threshold cell 'tc'. */
static json_t *replay_cell(const struct sweep *s, const json_t *dcell,
                           size_t dc, size_t tc)
{
    json_t *t = mtx_sweep_cell_json(s, tc), *params, *args;

    if (!t)
        return NULL;
    params = json_deep_copy(json_object_get(dcell, "params"));
    args = without_thresholds(json_object_get(dcell, "args"));
    json_object_update(params, json_object_get(t, "params"));
    json_array_extend(args, json_object_get(t, "args"));
    json_decref(t);
    return json_pack("{s:o,s:o,s:I}", "params", params, "args", args,
                     "replay_of", (json_int_t)dc);
}

enum mt_status mtx_sweep_plan_replay(const struct sweep *s, json_t **out,
                                     struct mt_error *err)
{
    char path[4200];
    json_t *old, *cells = json_array(), *axes;
    size_t dc, tc, k;

    for (k = 0; k < s->nax; k++)
        if (!is_threshold(s->ax[k].option))
            return mt_fail(err, MT_EINVAL,
                           "--replay sweeps the MedEval thresholds only "
                           "(eval_avg, eval_min), not %s",
                           s->ax[k].key);
    snprintf(path, sizeof path, "%s/sweep.json", s->replay);
    if (!(old = mtx_sweep_json_read(path, err)))
        return MT_EPARSE;
    for (dc = 0; dc < json_array_size(json_object_get(old, "cells")); dc++)
        for (tc = 0; tc < s->ncell; tc++)
            json_array_append_new(
                cells, replay_cell(
                           s, json_array_get(json_object_get(old, "cells"), dc),
                           dc, tc));
    axes = json_deep_copy(json_object_get(old, "axes"));
    array_extend_take(axes, mtx_sweep_axes_json(s));
    *out = json_pack("{s:i,s:s,s:O,s:O,s:O,s:o,s:o,s:o,s:s}", "version", 1,
                     "data", json_string_value(json_object_get(old, "data")),
                     "sample", json_object_get(old, "sample"), "seed",
                     json_object_get(old, "seed"), "runs",
                     json_object_get(old, "runs"), "axes", axes, "base",
                     without_thresholds(json_object_get(old, "base")), "cells",
                     cells, "replay", s->replay);
    json_decref(old);
    return *out ? MT_OK : mt_fail(err, MT_EPARSE, "%s: not a sweep plan", path);
}

/* ==== Threshold replay: one run ==== */

/* The thresholds a replay cell sets (defaults for one it does not). */
static void cell_thresholds(const json_t *cell, double *mean, double *min)
{
    const json_t *args = json_object_get(cell, "args");
    struct mt_agent_params d;
    size_t i;

    mt_agent_default_params(&d);
    *mean = d.accept_mean;
    *min = d.accept_min;
    for (i = 0; i < json_array_size(args); i++) {
        const char *v = json_string_value(json_array_get(args, i));

        if (strncmp(v, "--accept-mean=", 14) == 0)
            *mean = strtod(v + 14, NULL);
        else if (strncmp(v, "--accept-min=", 13) == 0)
            *min = strtod(v + 13, NULL);
    }
}

/* {"ID": submission line} of a submission file. */
static json_t *sub_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    json_t *o = json_object();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;

    while (f && o && (n = getline(&line, &cap, f)) > 0) {
        char id[512];

        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (sscanf(line, "%511s", id) == 1)
            json_object_set_new(o, id, json_string(line));
    }
    free(line);
    if (f)
        fclose(f);
    return o;
}

struct replay {
    json_t *src_sub, *src_trace, *rounds; /* of the recorded run */
    json_t *new_sub, *new_trace;          /* of the notes rerun */
    struct rows rows;                     /* the sample */
    size_t *rerun, nrerun, nreplayed;
};

static void replay_free(struct replay *p)
{
    json_decref(p->src_sub);
    json_decref(p->src_trace);
    json_decref(p->rounds);
    json_decref(p->new_sub);
    json_decref(p->new_trace);
    mtx_sweep_rows_free(&p->rows);
    mt_free(p->rerun);
}

static enum mt_status replay_load(struct job *j, struct replay *p,
                                  struct mt_error *err)
{
    char *src = mtx_str_printf(
        "%s/cell-%03lld/run-%lu",
        json_string_value(json_object_get(j->plan, "replay")),
        json_integer_value(json_object_get(j->cell, "replay_of")) + 1,
        j->r + 1);
    char path[4300];
    enum mt_status st = src ? MT_OK : MT_ENOMEM;

    if (st == MT_OK && !mtx_sweep_exists(src, "done"))
        st = mt_fail(err, MT_EINVAL,
                     "%s is not finished: finish that sweep before replaying "
                     "it",
                     src);
    snprintf(path, sizeof path, "%s/trace.jsonl", src ? src : "");
    if (st == MT_OK)
        st = mtx_sweep_trace_load(path, &p->src_trace, err);
    if (st == MT_OK)
        st = mtx_sweep_trace_rounds(path, &p->rounds, err);
    snprintf(path, sizeof path, "%s/submission.txt", src ? src : "");
    if (st == MT_OK && !(p->src_sub = sub_lines(path)))
        st = MT_ENOMEM;
    if (st == MT_OK)
        st = mtx_sweep_rows_read(j->s->sample_csv, &p->rows, err);
    if (st == MT_OK && !(p->rerun = mt_malloc(p->rows.n * sizeof *p->rerun)))
        st = MT_ENOMEM;
    mt_free(src);
    return st;
}

/* Splits the notes: replayed when the recorded run has its line, its check
 * did not fail (a fallback line written by --fallback-on-failure is no
 * answer to replay) and every MedEval round is decided as before, else
 * rerun. */
static void replay_split(const struct job *j, struct replay *p)
{
    double mean, min;
    size_t i;

    cell_thresholds(j->cell, &mean, &min);
    for (i = 1; i < p->rows.n; i++) {
        const char *id = p->rows.id[i];

        if (json_object_get(p->src_sub, id) &&
            !json_object_get(json_object_get(p->src_trace, id), "error") &&
            mtx_sweep_rounds_replayable(json_object_get(p->rounds, id), mean,
                                        min))
            p->nreplayed++;
        else
            p->rerun[p->nrerun++] = i;
    }
}

/* The run's submission and trace: each note from the recorded run or from
 * the rerun, in the sample's order. */
static enum mt_status replay_merge(const struct job *j, struct replay *p,
                                   struct mt_error *err)
{
    struct mt_buf sub = MT_BUF_INIT(SWEEP_BUF_MAX),
                  tr = MT_BUF_INIT(SWEEP_BUF_MAX);
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 1; st == MT_OK && i < p->rows.n; i++) {
        const char *id = p->rows.id[i];
        int again = 0;
        size_t k;
        const json_t *line, *t;
        char *ts;

        for (k = 0; k < p->nrerun; k++)
            again |= p->rerun[k] == i;
        line = json_object_get(again ? p->new_sub : p->src_sub, id);
        t = json_object_get(again ? p->new_trace : p->src_trace, id);
        if (line)
            st = mtx_buf_printf(&sub, "%s\n", json_string_value(line));
        ts = t ? json_dumps(t, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (st == MT_OK && ts)
            st = mtx_buf_printf(&tr, "%s\n", ts);
        free(ts);
    }
    if (st == MT_OK)
        st = mtx_file_write_atomic(j->path[P_SUB], sub.data ? sub.data : "",
                                   sub.len, err);
    if (st == MT_OK)
        st = mtx_file_write_atomic(j->path[P_TRACE], tr.data ? tr.data : "",
                                   tr.len, err);
    mtx_buf_free(&sub);
    mtx_buf_free(&tr);
    return st;
}

static enum mt_status replay_rerun(struct job *j, struct replay *p, int *rc,
                                   struct mt_error *err)
{
    char csv[4300], sub[4300], tr[4300];
    enum mt_status st;

    snprintf(csv, sizeof csv, "%s/rerun.csv", j->dir);
    snprintf(sub, sizeof sub, "%s/rerun.txt", j->dir);
    snprintf(tr, sizeof tr, "%s/rerun-trace.jsonl", j->dir);
    st = mtx_sweep_rows_write(&p->rows, p->rerun, p->nrerun, csv, err);
    if (st == MT_OK) {
        *rc = mtx_sweep_mediqa_run(j, csv, sub, tr);
        st = mtx_sweep_child_status("mediqa", j, *rc, err);
    }
    if (st == MT_OK && !(p->new_sub = sub_lines(sub)))
        st = MT_ENOMEM;
    if (st == MT_OK)
        st = mtx_sweep_trace_load(tr, &p->new_trace, err);
    return st;
}

enum mt_status mtx_sweep_replay_run(struct job *j, int *rc,
                                    struct mt_error *err)
{
    struct replay p;
    char path[4300];
    json_t *o;
    enum mt_status st;

    memset(&p, 0, sizeof p);
    *rc = 0;
    st = replay_load(j, &p, err);
    if (st == MT_OK)
        replay_split(j, &p);
    if (st == MT_OK && p.nrerun)
        st = replay_rerun(j, &p, rc, err);
    if (st == MT_OK)
        st = replay_merge(j, &p, err);
    snprintf(path, sizeof path, "%s/replay.json", j->dir);
    o = json_pack("{s:I,s:I}", "replayed", (json_int_t)p.nreplayed, "rerun",
                  (json_int_t)p.nrerun);
    if (st == MT_OK)
        st = mtx_sweep_json_write(path, o, err);
    json_decref(o);
    replay_free(&p);
    return st;
}

/* The replay's sample is the recorded sweep's own. */
enum mt_status mtx_sweep_replay_sample(const struct sweep *s,
                                       struct mt_error *err)
{
    char src[4200];
    struct rows r = {0};
    size_t *pick, i;
    enum mt_status st;

    if (mtx_sweep_exists(s->out, "sample.csv"))
        return MT_OK;
    snprintf(src, sizeof src, "%s/sample.csv", s->replay);
    st = mtx_sweep_rows_read(src, &r, err);
    pick = st == MT_OK ? mt_malloc(r.n * sizeof *pick) : NULL;
    for (i = 1; pick && i < r.n; i++)
        pick[i - 1] = i;
    if (st == MT_OK)
        st = pick ? mtx_sweep_rows_write(&r, pick, r.n - 1, s->sample_csv, err)
                  : MT_ENOMEM;
    mt_free(pick);
    mtx_sweep_rows_free(&r);
    return st;
}
