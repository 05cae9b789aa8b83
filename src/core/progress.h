/* Progress reporter for long CLI work. Printing to its stream is its whole
 * purpose, so it is the one core module that writes output: a redrawn bar
 * on a terminal, plain periodic lines otherwise. */
#ifndef MT_CORE_PROGRESS_H
#define MT_CORE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "medtrust/status.h"

struct mt_progress;

struct mt_progress_params {
    const char *label;       /* shown first; copied; NULL = "progress" */
    uint64_t total;          /* items expected; 0 = unknown (no bar, ETA) */
    FILE *stream;            /* borrowed, never closed; NULL = stderr */
    int force_tty;           /* -1 auto (isatty), 0 plain lines, 1 redraw */
    int quiet;               /* nonzero: print nothing at all */
    double min_interval_s;   /* terminal: least time between redraws (0.1) */
    double plain_interval_s; /* plain: a line at least this often (5.0) */
};

/* Returns the defaults: label NULL, total 0, stderr, auto tty, not quiet,
 * 0.1 s between redraws, a plain line every 5 s or 10 % step. */
struct mt_progress_params mtx_progress_default_params(void);

/* Creates a reporter; 'params' may be NULL for defaults and is copied. On
 * success *out owns it (free with mtx_progress_free); on failure *out is
 * unchanged. Returns MT_OK or MT_ENOMEM. Nothing is printed yet. */
enum mt_status mtx_progress_new(const struct mt_progress_params *params,
                                struct mt_progress **out);

/* Sets the number of items done so far and prints when due: on a terminal
 * at most once per min_interval_s; otherwise at each 10 % step of a known
 * total or every plain_interval_s. Thread-safe (serialised internally). */
void mtx_progress_update(struct mt_progress *p, uint64_t done);

/* Sets the number of items expected (0 = unknown), for a total learnt
 * only once the work starts. Thread-safe. */
void mtx_progress_set_total(struct mt_progress *p, uint64_t total);

/* Adds n to the items done; otherwise as mtx_progress_update. Thread-safe. */
void mtx_progress_add(struct mt_progress *p, uint64_t n);

/* Returns the items done so far. Thread-safe. */
uint64_t mtx_progress_done(struct mt_progress *p);

/* Prints the final state (count, elapsed time, rate) and ends the line.
 * Later calls, updates included, print nothing. Thread-safe. */
void mtx_progress_finish(struct mt_progress *p);

/* Frees the reporter without printing (call mtx_progress_finish first for a
 * final line). NULL is allowed. */
void mtx_progress_free(struct mt_progress *p);

#endif
