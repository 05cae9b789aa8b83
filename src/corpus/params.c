/* The importer's settings table (mt_import_param_table): the numeric
 * knobs and flags of struct mt_import_params that `import` takes, with
 * their CLI options and help; the defaults are mt_import_default_params'.
 * No HTTP request sets them. */
#include <stddef.h>

#include "medtrust/corpus.h"

#define P(member) offsetof(struct mt_import_params, member)

static const struct mt_param import_params[] = {
    {"batch", NULL, P(batch_size), MT_PARAM_U32, 1, 1000000, 0, "N",
     "documents per transaction", NULL},
    {"threads", NULL, P(threads), MT_PARAM_U32, 1, 8, 0, "N",
     "input files parsed at once, each on a thread of its own, while one "
     "thread writes",
     "the online CPUs, at most 8"},
    {"no-chunk", NULL, P(no_chunk), MT_PARAM_I32, 0, 1, 0, NULL,
     "store each text as one chunk, not re-chunked (always so for medrag)",
     NULL},
    {"strict", NULL, P(strict), MT_PARAM_I32, 0, 1, 0, NULL,
     "a file or record that cannot be read ends the import as an error "
     "(off: it is skipped with a warning naming FILE:LINE and why, "
     "counted, and the rest is imported; the exit status is then 1)",
     NULL},
    {"follow-symlinks", NULL, P(follow_symlinks), MT_PARAM_I32, 0, 1, 0, NULL,
     "in folders, follow symbolic links that lead out of the folder given, "
     "as find -L (off: such links are skipped and named; links within it "
     "are followed)",
     NULL},
};

static void defaults(void *p)
{
    mt_import_default_params(p);
}

const struct mt_param_table mt_import_param_table = {
    "mt_import_params", import_params,
    sizeof import_params / sizeof import_params[0],
    sizeof(struct mt_import_params), defaults};
