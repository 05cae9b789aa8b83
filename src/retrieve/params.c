/* The index run's settings table (mt_index_run_param_table): the numeric
 * knobs and flags of struct mt_index_run_params that `index` takes, with
 * their CLI options and help; the defaults are
 * mt_index_run_default_params'. No HTTP request sets them. */
#include <stddef.h>

#include "medtrust/retrieve.h"

#define P(member) offsetof(struct mt_index_run_params, member)

static const struct mt_param run_params[] = {
    {"batch", NULL, P(ingest.batch_size), MT_PARAM_U32, 1, 1000000, 0, "N",
     "documents per transaction", NULL},
    {"skip-bad", NULL, P(ingest.skip_bad), MT_PARAM_I32, 0, 1, 0, NULL,
     "skip malformed lines and report how many", NULL},
    {"strict", NULL, P(strict), MT_PARAM_I32, 0, 1, 0, NULL,
     "an input without a single document is an error (exit 1), not a "
     "warning",
     NULL},
    {"rebuild", NULL, P(update.build.rebuild), MT_PARAM_I32, 0, 1, 0, NULL,
     "rebuild the search index from scratch", NULL},
    {"hnsw-min", NULL, P(update.build.hnsw_min), MT_PARAM_U32, 1, 4000000000.0,
     0, "N",
     "new segments of at least N chunks get an HNSW graph over their "
     "vectors, smaller ones are scanned exactly",
     NULL},
    {"threads", NULL, P(update.build.threads), MT_PARAM_U32, 0, 64, 0, "N",
     "threads of the search index build: 0 one per online core; N analyse "
     "chunks beside the thread that reads and inverts them, 1 does it all "
     "on one; the segments are the same bytes with any N. Also the default "
     "of --hnsw-threads",
     "0, one per online core"},
    {"hnsw-threads", NULL, P(update.build.hnsw_threads), MT_PARAM_U32, 0, 64, 0,
     "N",
     "threads building an HNSW graph: 0 one per online core, 1 the serial "
     "build, whose graph depends only on the vectors (the same on every "
     "run)",
     "as --threads"},
    {"max-segments", NULL, P(update.build.max_segments), MT_PARAM_U32, 1, 65536,
     0, "N",
     "when one more segment would make more than N, first merge the "
     "smallest neighbouring segments into one (never into one past the "
     "--segment-mb budget, so a large index keeps more)",
     NULL},
    {"dims", NULL, P(update.dims), MT_PARAM_U32, 1, 65536, 0, "N",
     "keep the first N dimensions of each chunk vector, renormalised "
     "(Matryoshka; the IryoNLP paper: 256); a change rebuilds the vectors",
     "the index's with its embedder, else the embedder's own"},
    {"embed-jobs", NULL, P(update.embed_jobs), MT_PARAM_U32, 1, 256, 0, "N",
     "embedding requests in flight at once, each of --embed-batch chunks, "
     "spread over an openai:URL[,URL...]#MODEL embedder's servers (a local "
     "embedder's threads); vectors are committed to the embedding cache "
     "(--cache, default DIR/embed-cache.db) as each call of N requests "
     "completes, so a killed build, run again, re-embeds only what was in "
     "flight",
     "one request a call"},
    {"embed-batch", NULL, P(update.build.embed_batch), MT_PARAM_U32, 1, 65536,
     0, "N", "chunks per embedding request", NULL},
};

static void defaults(void *p)
{
    mt_index_run_default_params(p);
}

const struct mt_param_table mt_index_run_param_table = {
    "mt_index_run_params", run_params, sizeof run_params / sizeof run_params[0],
    sizeof(struct mt_index_run_params), defaults};
