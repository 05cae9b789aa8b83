/* medtrust index: ingest JSONL corpora into a store, with progress. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/progress.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/retrieve.h"
#include "medtrust/store.h"

static const struct cli_opt index_opts[] = {
    {"db", 'd', "DIR", "store directory, created if missing (required)", 0},
    {"input", 'i', "FILE",
     "JSONL corpus: {\"id\",\"text\",\"title\"?,...} "
     "a line; - for stdin (required)",
     1},
    {"source", 's', "NAME", "source name (default: the file's base name)", 0},
    {"analyzer", 'a', "NAME",
     "analyzer for a new store: english, arabic, "
     "cjk, simple (default english)",
     0},
    CLI_PARAM("chunk-size", &mt_store_param_table),
    CLI_PARAM("chunk-overlap", &mt_store_param_table),
    CLI_PARAM_KEY("batch", 'b', &mt_index_run_param_table),
    CLI_PARAM("skip-bad", &mt_index_run_param_table),
    CLI_PARAM("strict", &mt_index_run_param_table),
    {"no-search-index", 0, NULL,
     "ingest only; do not update the search "
     "index",
     0},
    CLI_PARAM("rebuild", &mt_index_run_param_table),
    CLI_PARAM("hnsw-min", &mt_index_run_param_table),
    CLI_PARAM("threads", &mt_index_run_param_table),
    CLI_PARAM("hnsw-threads", &mt_index_run_param_table),
    {"vectors", 0, "KIND",
     "how new segments keep chunk vectors: int8r (default) int8 codes + "
     "a 4-bit residual, 1.5 bytes a dimension, recall@10 near 0.999; int8 "
     "the codes alone, 1 byte, near 0.98; int8r2 the codes + a 2-bit "
     "residual, 1.25 bytes, near 0.996; float32 the codes + float "
     "copies, 5 bytes, exact re-scoring (0.9998 on 20K clustered vectors)",
     0},
    {"segment-mb", 0, "N",
     "write a search index segment, and begin the next, whenever the "
     "builder holds N MiB, so memory stays bounded at any store size; "
     "0..1048576, 0 one segment however large (default 2048)",
     0},
    CLI_PARAM("max-segments", &mt_index_run_param_table),
    {"cache", 0, "FILE",
     "SQLite cache of chunk embeddings: a rebuild re-embeds nothing it "
     "has seen (default off)",
     0},
    {"embedder", 'e', "SPEC",
     "embed chunks for dense and hybrid search: "
     "use-lite, gguf:PATH, onnx:DIR, openai:URL#MODEL, or none (default: "
     "what the index already uses; for a new index $MEDTRUST_EMBEDDER, "
     "else use-lite)",
     0},
    {"query-embedder", 0, "SPEC",
     "the embedder queries take, for an asymmetric retriever (MedCPT's "
     "query encoder beside --embedder's article encoder); recorded in the "
     "index so every search uses it; \"\" = none (default: what the index "
     "records while its embedder stays)",
     0},
    CLI_PARAM("dims", &mt_index_run_param_table),
    CLI_PARAM("embed-jobs", &mt_index_run_param_table),
    CLI_PARAM("embed-batch", &mt_index_run_param_table),
    {"vectors-from", 0, "FILE",
     "take chunk vectors made elsewhere instead of embedding: FILE.npy "
     "(NumPy float32 or float16, shape n x d, row i the vector of the "
     "chunk id on line i of --vector-ids) or JSONL {\"id\":CHUNK_ID,"
     "\"vector\":[...]}; matched by the store's chunk id (search --json "
     "prints it); every chunk indexed needs one, d must be the embedder's "
     "dimension; --embedder names the model that made them (queries take "
     "it). FILE (and the ids file) may be a named pipe, or - for JSONL on "
     "stdin: read once in order, its ids ascending (open the .npy pipe "
     "first, then the ids pipe)",
     0},
    {"vector-ids", 0, "FILE",
     "the chunk ids of --vectors-from's .npy rows, one a line (default: "
     "the .npy path with .ids in place of .npy)",
     0},
    {"json", 'j', NULL, "print the result as one JSON object", 0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {NULL, 0, NULL, NULL, 0},
};

/* The store, ingest and build settings (p holds the defaults): the
 * settings table's, then the rows it cannot hold. */
static int read_opts(struct cli_args *a, struct mt_index_run_params *p)
{
    struct mt_index_build_params *bp = &p->update.build;
    unsigned long mb = ULONG_MAX;

    if (cli_store_params_read(a, &p->store) < 0 ||
        cli_params_read(a, &mt_index_run_param_table, p) < 0)
        return -1;
    if (!cli_get(a, "hnsw-threads"))
        bp->hnsw_threads = bp->threads;
    if (cli_get(a, "vectors") &&
        mt_vec_store_parse(cli_get(a, "vectors"), &bp->vec_store) != MT_OK) {
        fprintf(stderr,
                "medtrust index: --vectors '%s': expected int8r, int8, "
                "int8r2 or float32\n",
                cli_get(a, "vectors"));
        return -1;
    }
    if (cli_get_uint(a, "segment-mb", 0, 1048576, &mb) < 0)
        return -1;
    if (mb != ULONG_MAX)
        bp->segment_bytes = (uint64_t)mb << 20;
    p->ingest.source = cli_get(a, "source");
    p->search_index = cli_get(a, "no-search-index") == NULL;
    return 0;
}

/* The embedder's settings, read after --db is known to be given. */
static int read_embed_opts(struct cli_args *a, struct mt_index_update_params *u)
{
    u->embedder_spec = cli_get(a, "embedder");
    u->embed_cache = cli_get(a, "cache");
    u->query_embedder_spec = cli_get(a, "query-embedder");
    u->build.vectors_from = cli_get(a, "vectors-from");
    u->build.vector_ids = cli_get(a, "vector-ids");
    if (u->build.vector_ids && !u->build.vectors_from) {
        fprintf(stderr, "medtrust index: --vector-ids needs --vectors-from\n");
        return -1;
    }
    return 0;
}

/* The CLI's side of an index run: progress bars on stderr, results on
 * stdout. */
struct index_ui {
    struct mt_progress *bar; /* the bar of the input or build running */
    const char *source;      /* --source */
    int json;
    int quiet;
};

/* A new bar in place of the last one (none when out of memory: the run
 * goes on without one). */
static void bar_start(struct index_ui *ui, const char *label, uint64_t total)
{
    struct mt_progress_params pp = mtx_progress_default_params();

    mtx_progress_free(ui->bar);
    ui->bar = NULL;
    pp.label = label;
    pp.total = total;
    pp.quiet = ui->quiet;
    if (mtx_progress_new(&pp, &ui->bar) != MT_OK)
        ui->bar = NULL;
}

static void bar_end(struct index_ui *ui, int finish)
{
    if (ui->bar && finish)
        mtx_progress_finish(ui->bar);
    mtx_progress_free(ui->bar);
    ui->bar = NULL;
}

static void on_input(void *user, const char *path, uint64_t lines)
{
    bar_start(user, strrchr(path, '/') ? strrchr(path, '/') + 1 : path, lines);
}

static void on_records(void *user, uint64_t records)
{
    struct index_ui *ui = user;

    if (ui->bar)
        mtx_progress_update(ui->bar, records);
}

static void print_result(const char *path, const char *source,
                         const struct mt_ingest_result *r, int json)
{
    if (json) {
        json_t *o = json_pack(
            "{s:s,s:I,s:I,s:I,s:I}", "input", path, "documents",
            (json_int_t)r->documents, "unchanged", (json_int_t)r->unchanged,
            "chunks", (json_int_t)r->chunks, "skipped", (json_int_t)r->skipped);
        if (o) {
            json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
            putchar('\n');
            json_decref(o);
        }
        return;
    }
    printf("%s: indexed %llu documents, %llu chunks", path,
           (unsigned long long)r->documents, (unsigned long long)r->chunks);
    if (source)
        printf(" (source %s)", source);
    if (r->unchanged)
        printf("; %llu unchanged", (unsigned long long)r->unchanged);
    if (r->skipped)
        printf("; skipped %llu malformed lines",
               (unsigned long long)r->skipped);
    printf("\n");
}

static void on_input_done(void *user, const char *path,
                          const struct mt_ingest_result *r)
{
    struct index_ui *ui = user;

    bar_end(ui, 1);
    print_result(path, ui->source, r, ui->json);
}

static void on_warning(void *user, const char *message)
{
    (void)user;
    fprintf(stderr, "medtrust: warning: %s\n", message);
}

static void on_build(void *user, const char *embedder)
{
    (void)embedder;
    bar_start(user, "search index", 0);
}

/* The builder reports its total (chunks to index and embed) at its first
 * chunk, so the line shows done/total, rate and ETA from the first
 * update. Called from the build's threads (the bar is thread-safe). */
static void on_build_progress(uint64_t done, uint64_t total, void *user)
{
    struct index_ui *ui = user;

    if (!ui->bar)
        return;
    mtx_progress_set_total(ui->bar, total);
    mtx_progress_update(ui->bar, done);
}

static void ui_params(struct index_ui *ui, struct mt_index_run_params *p)
{
    p->on_input = on_input;
    p->on_records = on_records;
    p->on_input_done = on_input_done;
    p->on_warning = on_warning;
    p->on_build = on_build;
    p->update.build.progress = on_build_progress;
    p->update.build.progress_user = ui;
    p->user = ui;
}

static void print_build(const struct mt_index_build_result *br)
{
    if (br->segments_merged)
        printf("search index: merged the %u smallest segments\n",
               br->segments_merged);
    printf("search index: %llu chunks added%s, %u segment%s\n",
           (unsigned long long)br->chunks_added, br->merged ? " (rebuilt)" : "",
           br->segments, br->segments == 1 ? "" : "s");
}

/* After a run: the build's bar ended (its final line when it added
 * chunks), its result printed. */
static void run_done(struct index_ui *ui, enum mt_status st,
                     const struct mt_index_run_result *r)
{
    int built = st == MT_OK && r->built;

    bar_end(ui, built && r->build.chunks_added);
    if (built && !ui->json)
        print_build(&r->build);
}

enum mt_status cli_index_update(struct mt_store *s, const char *embedder,
                                int quiet, int json,
                                struct mt_index_build_result *res,
                                struct mt_error *err)
{
    struct index_ui ui = {NULL, NULL, json, quiet};
    struct mt_index_run_params p;
    struct mt_index_run_result r;
    enum mt_status st;

    mt_index_run_default_params(&p);
    ui_params(&ui, &p);
    p.update.embedder_spec = embedder;
    st = mt_index_run_store(s, NULL, 0, &p, &r, err);
    run_done(&ui, st, &r);
    if (st == MT_OK && res)
        *res = r.build;
    return st;
}

static int index_run(struct cli_args *a)
{
    struct mt_index_run_params p;
    struct mt_index_run_result r;
    struct mt_error err = {MT_OK, ""};
    struct index_ui ui;
    size_t n = 0;
    const char **inputs = cli_get_all(a, "input", &n);
    enum mt_status st;

    mt_index_run_default_params(&p);
    memset(&ui, 0, sizeof ui);
    if (read_opts(a, &p) < 0)
        return 1;
    if (!cli_get(a, "db")) {
        fprintf(stderr, "medtrust index: --db is required\n"
                        "Try 'medtrust index --help'.\n");
        return 1;
    }
    if (read_embed_opts(a, &p.update) < 0)
        return 1;
    ui.source = p.ingest.source;
    ui.json = cli_get(a, "json") != NULL;
    ui.quiet = cli_get(a, "no-progress") != NULL;
    ui_params(&ui, &p);
    st = mt_index_run(cli_get(a, "db"), inputs, n, &p, &r, &err);
    run_done(&ui, st, &r);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_index = {
    "index",
    "ingest JSONL documents into a corpus store",
    "--db DIR [--input FILE.jsonl ...] [OPTIONS]",
    "Each line of the input is a JSON object with \"id\" and \"text\" and an\n"
    "optional \"title\"; other fields are kept as metadata. Documents are\n"
    "split into chunks (the store's chunk size and overlap, in characters).\n"
    "Re-running with the same ids replaces those documents. Ingestion\n"
    "commits in batches: an interrupted run keeps every committed batch\n"
    "and can simply be run again. Then the search index is brought up to\n"
    "date (new chunks in a new segment; a full rebuild after deletions).\n"
    "Without --input, only the search index of an existing store is\n"
    "updated.",
    index_opts,
    index_run,
};
