/* One LLM over rows (batch layer): a model opened for a role, then rows
 * 0..n-1 handed to a callback by --jobs threads with a progress bar,
 * failed rows counted, the run stopped by a fatal error. With a journal,
 * each finished row's line is journaled as it finishes (batch/journal.h)
 * and a resumed run gives back the rows it holds instead of running them,
 * as the item batch (batch/items.h) does. `medtrust corpus vote`
 * (batch/vote.h) and `medtrust examples --explain` (batch/explain.h) run
 * on it. Names: mtx_ (internal). */
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
    const char *journal; /* each finished row's line journaled here, or
                            NULL for none (mtx_rows_fns.id, .line) */
    int resume;          /* with a journal: the rows it holds are given
                            back (mtx_rows_fns.resumed), not run */
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

/* What a run calls. With a journal, id, line and resumed are required:
 * row i's id; the line of row i once it came to MTX_ROW_DONE, journaled
 * (a failed row is not, so a resumed run asks again); and, when resuming,
 * row i's line as the journal holds it (0: out of memory). */
struct mtx_rows_fns {
    mtx_rows_fn run;
    const char *(*id)(void *user, size_t i);
    const char *(*line)(void *user, size_t i);
    int (*resumed)(void *user, size_t i, const char *line);
    void *user;
};

/* Opens the journal (when the params name one), then runs fns->run over
 * the rows not resumed (the bar finished when all ran); *failed gets how
 * many came to MTX_ROW_FAILED. Returns the fatal error, if any: the
 * journal that cannot be opened or written, or a callback's. */
enum mt_status mtx_rows_run(struct mtx_rows *r, size_t n,
                            const struct mtx_rows_fns *fns, size_t *failed,
                            struct mt_error *err);

/* The model (borrowed until mtx_rows_close). */
struct mt_llm *mtx_rows_llm(struct mtx_rows *r);

void mtx_rows_close(struct mtx_rows *r);

#endif
