/* The agent option rows of `mediqa` as a table of their own, which a
 * queued run (mediqa --enqueue) stores and each worker parses
 * (cli/mediqa.h). The notes, their checks and the submission are the
 * batch layer's (batch/note.h, medtrust/batch.h). */
#include "cli/agent_opts.h"
#include "cli/mediqa.h"

const struct cli_opt mediqa_agent_opts[] = {
    AGENT_OPTS,
    {NULL, 0, NULL, NULL, 0},
};
