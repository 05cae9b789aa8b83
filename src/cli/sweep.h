/* medtrust sweep: shared between the runner (cmd_sweep.c), the trace
 * summaries and threshold replay (sweep_trace.c) and the report
 * (sweep_report.c). A sweep lives in one folder:
 *   OUT/sweep.json            what was asked (checked again on a rerun)
 *   OUT/sample.csv            the notes every cell checks
 *   OUT/cell-NNN/run-R/       submission.txt, trace.jsonl, score.json,
 *                             stats.json, done (written last)
 *   OUT/summary.json          every cell's scores and trace statistics
 *   OUT/report.html           the figures and tables */
#ifndef MT_CLI_SWEEP_H
#define MT_CLI_SWEEP_H

#include <jansson.h>

#include "medtrust/status.h"

/* The trace file as {"ID": its last line}: a resumed run appends the
 * notes it checked again, and the last line of each note wins. */
enum mt_status sweep_trace_load(const char *path, json_t **out,
                                struct mt_error *err);

/* Statistics of one run's trace file (the last line of each note wins, as
 * a resumed run appends): {"notes","react_turns","reflex_turns","step_ms",
 * "search_ms","calls","calls_by_role","tokens_by_role","sources",
 * "failed_notes"}; turns are means per note, step_ms the mean time of a
 * MedReAct step (its model call plus its search). *out is new. */
enum mt_status sweep_trace_stats(const char *trace_path, json_t **out,
                                 struct mt_error *err);

/* The MedEval rounds of every note of a trace: {"ID":[[finals...],...]},
 * and the note's submission line is not needed here. *out is new. */
enum mt_status sweep_trace_rounds(const char *trace_path, json_t **out,
                                  struct mt_error *err);

/* 1 when MedEval's rule under (mean_min, min_min) decides every recorded
 * round of 'rounds' (an array of {"finals":[..],"accepted":b}) as it was
 * decided: the run would make the same calls and reach the same answer. */
int sweep_rounds_replayable(const json_t *rounds, double mean_min,
                            double min_min);

/* Writes the self-contained report for 'summary' (see cmd_sweep.c) to
 * path, atomically. */
enum mt_status sweep_report_write(const char *path, const json_t *summary,
                                  struct mt_error *err);

#endif
