/* What `mediqa` run on one machine and `mediqa --state` spread over
 * workers share: the agent option rows a queued run carries to its
 * workers (the notes and their checks: batch/note.h). */
#ifndef MT_CLI_MEDIQA_H
#define MT_CLI_MEDIQA_H

#include <stddef.h>

#include "cli/cli.h"
#include "batch/note.h"

/* The agent option rows (AGENT_OPTS) as a table of their own: a queued
 * run stores the ones given as an argument list, which each worker parses
 * with this table and agent_opts_read. */
extern const struct cli_opt mediqa_agent_opts[];

/* "N failed" and the fallback verdicts for the summary line, into buf:
 * of the failed notes those failed for a fallback verdict, and apart from
 * them the fallback verdicts that were allowed (--allow-fallbacks), which
 * are not failures. */
void mediqa_failed_words(char *buf, size_t n, size_t failed,
                         size_t fallback_failed, size_t fallback_allowed);

/* ==== The queue (mediqa --state, medtrust worker) ==== */

/* The state URL: --state, else MEDTRUST_STATE; NULL after printing why
 * when neither names a postgresql:// database. */
const char *mediqa_state_url(const struct cli_args *a, const char *what);

/* mediqa --enqueue and --collect RUN; returns the exit code. */
int mediqa_queue_main(const struct cli_args *a);

#endif
