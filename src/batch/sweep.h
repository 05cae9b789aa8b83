/* A sweep (batch layer): a grid over mediqa's options, every cell run on
 * the same sampled notes and repeated with different seeds, each run
 * scored, summarised from its trace and drawn in one report; and the
 * threshold replay of a recorded sweep. The grid, the sample, the plan,
 * the runs and the summary are in sweep.c, the replay in sweep_replay.c
 * (their shared internals: sweep_int.h), the trace statistics in
 * sweep_trace.c, the report in sweep_report.c; `medtrust
 * sweep` (cli/cmd_sweep.c) reads the options and runs each mediqa and
 * score command in a child process. A sweep lives in one folder:
 *   OUT/sweep.json            what was asked (checked again on a rerun)
 *   OUT/sample.csv            the notes every cell checks
 *   OUT/cell-NNN/run-R/       submission.txt, trace.jsonl, score.json,
 *                             stats.json, done (written last)
 *   OUT/summary.json          every cell's scores and trace statistics
 *   OUT/report.html           the figures and tables */
#ifndef MTX_BATCH_SWEEP_H
#define MTX_BATCH_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "medtrust/status.h"

/* What a sweep runs, and how. Strings are borrowed for the call. */
struct mtx_sweep_params {
    const char *out;    /* the sweep's folder (made when missing) */
    const char *replay; /* a recorded sweep's folder: replay its runs over
                           a MedEval threshold grid; NULL: a new sweep */
    const char *data;   /* the MEDEC-format CSV to sample (not with replay) */
    const char *db;     /* the corpus the runs search, counted per source
                           in the summary; NULL: none */
    const char *const *grid; /* "KEY=V1,V2,..." each, ngrid of them */
    size_t ngrid;
    unsigned long sample; /* notes drawn once (0: all) */
    unsigned long runs;   /* runs of every cell, seeds seed.. */
    unsigned long long seed;
    /* mediqa's options every run shares, "--NAME" or "--NAME=VALUE" in
     * order; those the grid varies are dropped */
    const char *const *base;
    size_t nbase;
    /* extra arguments of every run's `score` (its BLEURT and BERTScore
     * files), NULL-terminated; NULL: none */
    const char *const *score_args;
    /* 1 when 'option' (mediqa's long option) takes a value a sweep may
     * vary */
    int (*option_ok)(void *user, const char *option);
    /* Runs the medtrust command argv (argv[0] is the verb, NULL-
     * terminated), its stdout into stdout_path: its exit status, 128 +
     * the signal that ended it, or -1 when it could not start. */
    int (*run)(void *user, const char *const *argv, const char *stdout_path);
    /* Called with the number of runs (cells x runs) before the first and
     * after each run (done of total); NULL: none. */
    void (*on_progress)(void *user, uint64_t done, uint64_t total);
    void *user;
};

/* Runs the sweep: the plan written (or, on a rerun, checked to be the
 * same), every run without its "done" file run, then the summary and the
 * report written. *failed becomes 1 when some notes failed in a run
 * (mediqa exit 1); *cells and *runs get the grid's size. */
enum mt_status mtx_sweep_run(const struct mtx_sweep_params *p, int *failed,
                             size_t *cells, unsigned long *runs,
                             struct mt_error *err);

/* The trace file as {"ID": its last line}: a resumed run appends the
 * notes it checked again, and the last line of each note wins. */
enum mt_status mtx_sweep_trace_load(const char *path, json_t **out,
                                    struct mt_error *err);

/* Statistics of one run's trace file (the last line of each note wins, as
 * a resumed run appends): {"notes","react_turns","reflex_turns","step_ms",
 * "search_ms","calls","calls_by_role","tokens_by_role","sources",
 * "failed_notes"}; turns are means per note, step_ms the mean time of a
 * MedReAct step (its model call plus its search). *out is new. */
enum mt_status mtx_sweep_trace_stats(const char *trace_path, json_t **out,
                                     struct mt_error *err);

/* The MedEval rounds of every note of a trace: {"ID":[[finals...],...]},
 * and the note's submission line is not needed here. *out is new. */
enum mt_status mtx_sweep_trace_rounds(const char *trace_path, json_t **out,
                                      struct mt_error *err);

/* 1 when MedEval's rule under (mean_min, min_min) decides every recorded
 * round of 'rounds' (an array of {"finals":[..],"accepted":b}) as it was
 * decided: the run would make the same calls and reach the same answer. */
int mtx_sweep_rounds_replayable(const json_t *rounds, double mean_min,
                                double min_min);

/* Writes the self-contained report for 'summary' (see sweep.c) to path,
 * atomically. */
enum mt_status mtx_sweep_report_write(const char *path, const json_t *summary,
                                      struct mt_error *err);

#endif
