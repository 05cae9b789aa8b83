/* One LLM over rows (batch layer): a model opened for a role, then rows
 * 0..n-1 handed to a callback by --jobs threads with a progress bar,
 * failed rows counted, the run stopped by a fatal error (a journal that
 * cannot be written). `medtrust corpus vote` and `medtrust examples
 * --explain` run on it; each keeps its reading, its prompt and its
 * output. Names: mtx_ (internal). */
#ifndef MTX_BATCH_ROWS_H
#define MTX_BATCH_ROWS_H

#include <stddef.h>

#include "medtrust/model.h"

struct mtx_rows;

struct mtx_rows_params {
    const char *role;                /* the model's role (mt_llm_open_role) */
    const char *llm_spec;            /* --llm, or NULL: the role's default */
    const struct mt_llm_params *llm; /* NULL: mt_llm_default_params */
    const char *label;               /* the progress bar's label (the role) */
    unsigned jobs;                   /* rows at once, 1..64 (4) */
    int quiet;                       /* no progress bar */
};

void mtx_rows_default_params(struct mtx_rows_params *p);

/* Opens the model. On failure *out is NULL and err says why. */
enum mt_status mtx_rows_open(const struct mtx_rows_params *p,
                             struct mtx_rows **out, struct mt_error *err);

/* What a row came to. */
enum mtx_row_outcome {
    MTX_ROW_DONE,
    MTX_ROW_FAILED, /* counted; the callback has said why (mt_log) */
};

/* Runs row i with the model on one of the threads; a non-OK return
 * (with err) is fatal: no new row starts and mtx_rows_run returns it. */
typedef enum mt_status (*mtx_rows_fn)(void *user, struct mt_llm *llm, size_t i,
                                      enum mtx_row_outcome *out,
                                      struct mt_error *err);

/* 1 when row i is done already (resumed from a journal): not run, and
 * the progress bar starts past it. May be NULL. */
typedef int (*mtx_rows_done_fn)(void *user, size_t i);

/* Runs fn over rows 0..n-1 (the bar finished when all ran); *failed gets
 * how many came to MTX_ROW_FAILED. Returns the fatal error, if any. */
enum mt_status mtx_rows_run(struct mtx_rows *r, size_t n, mtx_rows_fn fn,
                            mtx_rows_done_fn done, void *user, size_t *failed,
                            struct mt_error *err);

/* The model (borrowed until mtx_rows_close). */
struct mt_llm *mtx_rows_llm(struct mtx_rows *r);

void mtx_rows_close(struct mtx_rows *r);

#endif
