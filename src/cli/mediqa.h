/* What `mediqa` run on one machine and `mediqa --state` spread over
 * workers share: the MEDEC-format CSV reader, one note checked into its
 * submission line and trace line, and the agent option rows a queued run
 * carries to its workers. */
#ifndef MT_CLI_MEDIQA_H
#define MT_CLI_MEDIQA_H

#include <stddef.h>

#include "cli/cli.h"
#include "eval/notes.h" /* struct mtx_note */
#include "medtrust/check.h"

/* Reads the first 'limit' notes (0 = all) of a MEDEC-format CSV: Text ID,
 * Text and, when present, Sentences; errors name the file and line. */
enum mt_status mediqa_load(const char *path, size_t limit,
                           struct mtx_note **out, size_t *n,
                           struct mt_error *err);

/* Writes the submission atomically: each note's line in order, a failed
 * note's only when 'with_failed' (--fallback-on-failure). */
enum mt_status mediqa_write(const struct mtx_note *v, size_t n,
                            const char *path, int with_failed,
                            struct mt_error *err);

/* One checked note. 'line' is the submission line (the fallback one when
 * the check failed), 'trace' the --trace JSON line; either is NULL only
 * when out of memory. */
struct mediqa_outcome {
    char *line;
    char *trace; /* NULL unless asked for */
    int failed;  /* the check failed: err says why */
    int fallback;
    struct mt_check_usage usage; /* zero when the check gave no result */
    struct mt_error err;
};

/* Checks one note with 'agent' (thread-safe, as mt_agent_check is).
 * MT_EMODEL leaves the fallback verdict: a failed note all the same
 * (issue 16). Free the outcome with mediqa_outcome_free. */
void mediqa_check(struct mt_agent *agent, const char *id, const char *text,
                  const char *sents, int with_trace, struct mediqa_outcome *o);
void mediqa_outcome_free(struct mediqa_outcome *o);

void mediqa_usage_add(struct mt_check_usage *t, const struct mt_check_usage *u);

/* The agent option rows (AGENT_OPTS) as a table of their own: a queued
 * run stores the ones given as an argument list, which each worker parses
 * with this table and agent_opts_read. */
extern const struct cli_opt mediqa_agent_opts[];

/* ==== The queue (mediqa --state, medtrust worker) ==== */

/* The state URL: --state, else MEDTRUST_STATE; NULL after printing why
 * when neither names a postgresql:// database. */
const char *mediqa_state_url(const struct cli_args *a, const char *what);

/* mediqa --enqueue and --collect RUN; returns the exit code. */
int mediqa_queue_main(const struct cli_args *a);

#endif
