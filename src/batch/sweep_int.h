/* A sweep's internals shared by sweep.c (the grid, the sample, the plan,
 * the runs and the summary) and sweep_replay.c (the threshold replay of a
 * recorded sweep). Not for other files: batch/sweep.h is the sweep's
 * interface. */
#ifndef MTX_BATCH_SWEEP_INT_H
#define MTX_BATCH_SWEEP_INT_H

#include <stddef.h>

#include <jansson.h>

#include "batch/sweep.h"
#include "core/buf.h"
#include "medtrust/status.h"

#define MAX_AXES 8
/* Largest sample, submission or merged trace a sweep writes. */
#define SWEEP_BUF_MAX MT_BUF_DEFAULT_MAX

struct axis {
    char *key;    /* as the user wrote it */
    char *option; /* mediqa's long option */
    char **vals;
    size_t nvals;
};

struct sweep {
    const struct mtx_sweep_params *p;
    const char *out;
    const char *replay;
    struct axis ax[MAX_AXES];
    size_t nax, ncell;
    unsigned long runs, sample;
    unsigned long long seed;
    char sample_csv[4096];
    int failed;
};

/* The notes of a MEDEC CSV, each record's raw lines and its id. */
struct rows {
    char **line; /* line[0] is the header */
    char **id;
    size_t n;
};

/* One run of one cell. */
struct job {
    struct sweep *s;
    const json_t *plan;
    const json_t *cell;
    size_t c;
    unsigned long r;
    char *dir;
    char path[4][4200]; /* submission, trace, score, stats */
};

enum { P_SUB, P_TRACE, P_SCORE, P_STATS };

/* sweep.c */

/* 1 when dir/name exists. */
int mtx_sweep_exists(const char *dir, const char *name);
/* Writes o to path atomically, indented. */
enum mt_status mtx_sweep_json_write(const char *path, const json_t *o,
                                    struct mt_error *err);
/* The JSON file at path (new), or NULL with err naming its line. */
json_t *mtx_sweep_json_read(const char *path, struct mt_error *err);
void mtx_sweep_rows_free(struct rows *r);
/* The records of the CSV at path. */
enum mt_status mtx_sweep_rows_read(const char *path, struct rows *r,
                                   struct mt_error *err);
/* The header and the records pick[0..n) of r to path, atomically. */
enum mt_status mtx_sweep_rows_write(const struct rows *r, const size_t *pick,
                                    size_t n, const char *path,
                                    struct mt_error *err);
/* The plan's "axes" of this sweep's grid (new). */
json_t *mtx_sweep_axes_json(const struct sweep *s);
/* Cell c's {"params","args"} (new). */
json_t *mtx_sweep_cell_json(const struct sweep *s, size_t c);
/* mediqa over 'data' with the cell's options and the run's seed: its
 * exit status. */
int mtx_sweep_mediqa_run(const struct job *j, const char *data, const char *sub,
                         const char *trace);
/* What a child's exit status means for the sweep. */
enum mt_status mtx_sweep_child_status(const char *what, const struct job *j,
                                      int rc, struct mt_error *err);

/* sweep_replay.c */

/* The plan of a threshold replay of the recorded sweep s->replay: each of
 * its cells crossed with the threshold grid (*out new). */
enum mt_status mtx_sweep_plan_replay(const struct sweep *s, json_t **out,
                                     struct mt_error *err);
/* One replay run: notes the new thresholds decide as before replayed from
 * the recorded run, the others rerun by mediqa (*rc its exit status). */
enum mt_status mtx_sweep_replay_run(struct job *j, int *rc,
                                    struct mt_error *err);
/* The replay's sample is the recorded sweep's own. */
enum mt_status mtx_sweep_replay_sample(const struct sweep *s,
                                       struct mt_error *err);

#endif
