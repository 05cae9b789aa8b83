/* medtrust index: ingest JSONL corpora into a store, with progress. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/file.h"
#include "core/progress.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/store.h"
#include "medtrust/model.h"
#include "medtrust/publish.h"
#include "medtrust/retrieve.h"

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
    {"batch", 'b', "N",
     "documents per transaction, 1..1000000 (default "
     "1000)",
     0},
    {"skip-bad", 0, NULL, "skip malformed lines and report how many", 0},
    {"strict", 0, NULL,
     "an input without a single document is an error "
     "(exit 1), not a warning",
     0},
    {"no-search-index", 0, NULL,
     "ingest only; do not update the search "
     "index",
     0},
    {"rebuild", 0, NULL, "rebuild the search index from scratch", 0},
    {"hnsw-min", 0, "N",
     "new segments of at least N chunks get an HNSW graph over their "
     "vectors, smaller ones are scanned exactly, 1..4000000000 (default "
     "100000)",
     0},
    {"threads", 0, "N",
     "threads of the search index build, 0..64: 0 one per online core "
     "(default); N analyse chunks beside the thread that reads and "
     "inverts them, 1 does it all on one; the segments are the same "
     "bytes with any N. Also the default of --hnsw-threads",
     0},
    {"hnsw-threads", 0, "N",
     "threads building an HNSW graph, 0..64: 0 one per online core "
     "(default: as --threads), 1 the serial build, whose graph depends "
     "only on the vectors (the same on every run)",
     0},
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
    {"max-segments", 0, "N",
     "when one more segment would make more than N, first merge the "
     "smallest neighbouring segments into one (never into one past the "
     "--segment-mb budget, so a large index keeps more); 1..65536 "
     "(default 8)",
     0},
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
    {"dims", 0, "N",
     "keep the first N dimensions of each chunk vector, renormalised "
     "(Matryoshka; the IryoNLP paper: 256); a change rebuilds the vectors "
     "(default: what the index already uses with its embedder, else the "
     "embedder's own)",
     0},
    {"embed-jobs", 0, "N",
     "embedding requests in flight at once, 1..256, each of --embed-batch "
     "chunks, spread over an openai:URL[,URL...]#MODEL embedder's servers "
     "(a local embedder's threads); vectors are committed to the embedding "
     "cache (--cache, default DIR/embed-cache.db) as each call of N "
     "requests completes, so a killed build, run again, re-embeds only "
     "what was in flight (default: one request a call)",
     0},
    {"embed-batch", 0, "N",
     "chunks per embedding request, 1..65536 (default 64)", 0},
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

/* Counts non-blank lines so the progress bar can show a total; 0 when the
 * input is not a regular file. */
static uint64_t count_lines(const char *path)
{
    char buf[1 << 16];
    uint64_t n = 0;
    int last = '\n';
    size_t got;
    size_t i;
    FILE *f = strcmp(path, "-") == 0 ? NULL : fopen(path, "rb");

    if (!f)
        return 0;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        for (i = 0; i < got; i++) {
            if (buf[i] == '\n' && last != '\n')
                n++;
            last = buf[i];
        }
    }
    if (last != '\n')
        n++;
    fclose(f);
    return n;
}

static void on_progress(uint64_t records, void *user)
{
    mtx_progress_update(user, records);
}

struct index_opts {
    const char *db;
    struct mt_store_params sp;
    struct mt_ingest_params ip;
    uint32_t hnsw_min;     /* 0: the index's default */
    uint32_t threads;      /* 0: one per online core */
    uint32_t hnsw_threads; /* 0: one per online core */
    enum mt_vec_store vec_store;
    unsigned long segment_mb; /* ULONG_MAX: the index's default */
    uint32_t max_segments;    /* 0: the index's default */
    int json;
    int quiet;
};

static int read_opts(struct cli_args *a, struct index_opts *o)
{
    unsigned long v;

    mt_ingest_default_params(&o->ip);
    o->db = cli_get(a, "db");
    if (cli_store_params_read(a, &o->sp) < 0)
        return -1;
    v = o->ip.batch_size;
    if (cli_get_uint(a, "batch", 1, 1000000, &v) < 0)
        return -1;
    o->ip.batch_size = (uint32_t)v;
    v = 0;
    if (cli_get_uint(a, "hnsw-min", 1, 4000000000UL, &v) < 0)
        return -1;
    o->hnsw_min = (uint32_t)v;
    v = 0;
    if (cli_get_uint(a, "threads", 0, 64, &v) < 0)
        return -1;
    o->threads = (uint32_t)v;
    if (cli_get_uint(a, "hnsw-threads", 0, 64, &v) < 0)
        return -1;
    o->hnsw_threads = (uint32_t)v;
    o->vec_store = MT_VEC_STORE_RESIDUAL;
    if (cli_get(a, "vectors") &&
        mt_vec_store_parse(cli_get(a, "vectors"), &o->vec_store) != MT_OK) {
        fprintf(stderr,
                "medtrust index: --vectors '%s': expected int8r, int8, "
                "int8r2 or float32\n",
                cli_get(a, "vectors"));
        return -1;
    }
    o->segment_mb = ULONG_MAX;
    if (cli_get_uint(a, "segment-mb", 0, 1048576, &o->segment_mb) < 0)
        return -1;
    v = 0;
    if (cli_get_uint(a, "max-segments", 1, 65536, &v) < 0)
        return -1;
    o->max_segments = (uint32_t)v;
    o->ip.source = cli_get(a, "source");
    o->ip.skip_bad = cli_get(a, "skip-bad") != NULL;
    o->json = cli_get(a, "json") != NULL;
    o->quiet = cli_get(a, "no-progress") != NULL;
    return 0;
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

static enum mt_status ingest_one(struct mt_store *s, const char *path,
                                 struct index_opts *o,
                                 struct mt_ingest_result *r,
                                 struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_progress *bar = NULL;
    enum mt_status st;

    pp.label = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    pp.total = count_lines(path);
    pp.quiet = o->quiet;
    st = mtx_progress_new(&pp, &bar);
    if (st != MT_OK)
        return st;
    o->ip.progress = on_progress;
    o->ip.progress_user = bar;
    st = mt_store_ingest_jsonl(s, path, &o->ip, r, err);
    if (st == MT_OK)
        mtx_progress_finish(bar);
    mtx_progress_free(bar);
    return st;
}

/* The embedder name recorded in the manifest (the CLI is single-threaded;
 * STYLE.md allows globals in cli/). */
static char o_name[4096];
static const char *o_cache; /* --cache */
static const char *o_query; /* --query-embedder, NULL = keep */
static uint32_t o_dims;     /* --dims, 0 = none given */
static const char *o_vfrom; /* --vectors-from */
static uint32_t o_jobs;     /* --embed-jobs, 0 = none */
static uint32_t o_ebatch;   /* --embed-batch, 0 = default */
static char o_cache_buf[4200];
static const char *o_vids; /* --vector-ids */

/* A build's progress: the line on stderr, and DIR/MT_INDEX_BUILD_STATUS
 * for a server on the same store (make demo serves BM25 while the vectors
 * are built; the UI shows their progress). */
struct build_progress {
    struct mt_progress *bar;
    pthread_mutex_t mu;
    char path[4200];
    time_t started;
    double t0;   /* monotonic seconds at the start */
    double last; /* ... at the last status write */
};

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Rewrites the status file; a failure only costs the server its view. */
static void write_status(struct build_progress *b, uint64_t done,
                         uint64_t total, double t)
{
    double secs = t - b->t0;
    double rate = secs > 0 ? (double)done / secs : 0.0;
    double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    json_t *o = json_pack(
        "{s:I,s:s,s:I,s:I,s:f,s:f,s:I,s:I}", "pid", (json_int_t)getpid(),
        "embedder", o_name[0] ? o_name : "none", "done", (json_int_t)done,
        "total", (json_int_t)total, "rate", rate, "eta_s", eta, "started",
        (json_int_t)b->started, "updated", (json_int_t)time(NULL));
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;

    if (js)
        mtx_file_write_atomic(b->path, js, strlen(js), NULL);
    mt_free(js);
    json_decref(o);
}

/* The builder reports its total (chunks to index and embed) at its first
 * chunk, so the line shows done/total, rate and ETA from the first update;
 * the status file is rewritten at most once a second. */
static void on_build(uint64_t done, uint64_t total, void *user)
{
    struct build_progress *b = user;
    double t;

    mtx_progress_set_total(b->bar, total);
    mtx_progress_update(b->bar, done);
    if (pthread_mutex_trylock(&b->mu) != 0)
        return; /* another thread is writing it */
    t = now_s();
    if (b->last == 0 || t - b->last >= 1.0) {
        b->last = t;
        write_status(b, done, total, t);
    }
    pthread_mutex_unlock(&b->mu);
}

static void build_params(const struct index_opts *o, int rebuild,
                         struct mt_index_build_params *bp)
{
    bp->rebuild = rebuild;
    if (o->hnsw_min)
        bp->hnsw_min = o->hnsw_min;
    bp->threads = o->threads;
    bp->hnsw_threads = o->hnsw_threads;
    bp->vec_store = o->vec_store;
    if (o->segment_mb != ULONG_MAX)
        bp->segment_bytes = (uint64_t)o->segment_mb << 20;
    if (o->max_segments)
        bp->max_segments = o->max_segments;
    bp->vectors_from = o_vfrom;
    bp->vector_ids = o_vids;
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

/* The build with its embedder chosen by the library (mt_index_update:
 * --embedder, else the index's own, else $MEDTRUST_EMBEDDER or USE-lite
 * for a new index), a progress line and the status file. */
static enum mt_status build_index(struct mt_store *s, struct index_opts *o,
                                  int rebuild, const char *embedder,
                                  struct mt_index_build_result *res,
                                  struct mt_error *err)
{
    struct mt_index_update_params up;
    struct mt_index_build_result br;
    struct mt_progress_params pp = mtx_progress_default_params();
    struct build_progress b;
    enum mt_status st;

    mt_index_update_default_params(&up);
    build_params(o, rebuild, &up.build);
    up.embedder_spec = embedder;
    up.dims = o_dims;
    up.embed_cache = o_cache;
    up.query_embedder_spec = o_query;
    up.embed_jobs = o_jobs;
    if (o_ebatch)
        up.build.embed_batch = o_ebatch;
    if (o_jobs && !o_cache) {
        snprintf(o_cache_buf, sizeof o_cache_buf, "%s/embed-cache.db",
                 mt_store_dir(s));
        up.embed_cache = o_cache_buf;
    }
    st = mt_index_pick_embedder(mt_store_dir(s), embedder, o_dims, o_name,
                                sizeof o_name, NULL, err);
    if (st != MT_OK)
        return st;
    if (strcmp(o_name, "none") == 0)
        o_name[0] = '\0';
    pp.label = "search index";
    pp.quiet = o->quiet;
    memset(&b, 0, sizeof b);
    st = mtx_progress_new(&pp, &b.bar);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    pthread_mutex_init(&b.mu, NULL);
    snprintf(b.path, sizeof b.path, "%s/%s", mt_store_dir(s),
             MT_INDEX_BUILD_STATUS);
    b.started = time(NULL);
    b.t0 = now_s();
    up.build.progress = on_build;
    up.build.progress_user = &b;
    st = mt_index_update(s, &up, &br, err);
    unlink(b.path);
    pthread_mutex_destroy(&b.mu);
    if (st == MT_OK && br.chunks_added)
        mtx_progress_finish(b.bar);
    mtx_progress_free(b.bar);
    if (st == MT_OK && !o->json)
        print_build(&br);
    if (st == MT_OK && res)
        *res = br;
    return st;
}

enum mt_status cli_index_update(struct mt_store *s, const char *embedder,
                                int quiet, int json,
                                struct mt_index_build_result *res,
                                struct mt_error *err)
{
    struct index_opts o;

    memset(&o, 0, sizeof o);
    o.vec_store = MT_VEC_STORE_RESIDUAL;
    o.segment_mb = ULONG_MAX;
    o.json = json;
    o.quiet = quiet;
    return build_index(s, &o, 0, embedder, res, err);
}

/* Refuses inputs that are not files before the store is touched. */
static enum mt_status check_inputs(const char **in, size_t n,
                                   struct mt_error *err)
{
    struct stat sb;
    size_t i;

    for (i = 0; i < n; i++) {
        if (strcmp(in[i], "-") == 0 || stat(in[i], &sb) != 0)
            continue; /* stdin; a missing file is named when opened */
        if (S_ISDIR(sb.st_mode))
            return mt_fail(err, MT_EINVAL,
                           "--input %s: is a directory: give a JSONL file "
                           "(or - for stdin)",
                           in[i]);
    }
    return MT_OK;
}

/* An input that held no document: a warning, an error under --strict. */
static enum mt_status check_empty(const char *path,
                                  const struct mt_ingest_result *r, int strict,
                                  struct mt_error *err)
{
    if (r->documents + r->unchanged + r->skipped > 0)
        return MT_OK;
    if (strict)
        return mt_fail(err, MT_EPARSE,
                       "%s: 0 documents: the input is empty (--strict)", path);
    fprintf(stderr, "medtrust: warning: %s: 0 documents: the input is empty\n",
            path);
    return MT_OK;
}

static int index_run(struct cli_args *a)
{
    struct index_opts o;
    struct mt_error err = {MT_OK, ""};
    struct mt_store *s = NULL;
    struct mt_ingest_result r;
    size_t n = 0;
    size_t i;
    const char **inputs = cli_get_all(a, "input", &n);
    unsigned long v;
    enum mt_status st;

    if (read_opts(a, &o) < 0)
        return 1;
    if (!o.db) {
        fprintf(stderr, "medtrust index: --db is required\n"
                        "Try 'medtrust index --help'.\n");
        return 1;
    }
    /* Without --input, only an existing store's search index is updated. */
    o.sp.create = n > 0;
    o_cache = cli_get(a, "cache");
    o_query = cli_get(a, "query-embedder");
    o_vfrom = cli_get(a, "vectors-from");
    o_vids = cli_get(a, "vector-ids");
    if (o_vids && !o_vfrom) {
        fprintf(stderr, "medtrust index: --vector-ids needs --vectors-from\n");
        return 1;
    }
    v = 0;
    if (cli_get_uint(a, "dims", 1, 65536, &v) < 0)
        return 1;
    o_dims = (uint32_t)v;
    v = 0;
    if (cli_get_uint(a, "embed-jobs", 1, 256, &v) < 0)
        return 1;
    o_jobs = (uint32_t)v;
    v = 0;
    if (cli_get_uint(a, "embed-batch", 1, 65536, &v) < 0)
        return 1;
    o_ebatch = (uint32_t)v;
    st = check_inputs(inputs, n, &err);
    if (st == MT_OK)
        st = mt_publish_refuse_writes(o.db, &err);
    if (st == MT_OK)
        st = mt_store_open(o.db, &o.sp, &s, &err);
    for (i = 0; st == MT_OK && i < n; i++) {
        st = ingest_one(s, inputs[i], &o, &r, &err);
        if (st == MT_OK)
            print_result(inputs[i], o.ip.source, &r, o.json);
        if (st == MT_OK)
            st = check_empty(inputs[i], &r, cli_get(a, "strict") != NULL, &err);
    }
    if (st == MT_OK && !cli_get(a, "no-search-index"))
        st = build_index(s, &o, cli_get(a, "rebuild") != NULL,
                         cli_get(a, "embedder"), NULL, &err);
    mt_store_close(s);
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
