/* mt_index_run: `medtrust index` as one library call: JSONL inputs
 * ingested into a store one after another, then its search index brought
 * up to date, with the build's status file for a server on the same store
 * (moved here from src/cli/cmd_index.c; the CLI keeps its options, the
 * progress bars and what it prints). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "core/clock.h"
#include "core/file.h"
#include "medtrust/core.h"
#include "medtrust/publish.h"
#include "medtrust/retrieve.h"

void mt_index_run_default_params(struct mt_index_run_params *p)
{
    memset(p, 0, sizeof *p);
    mt_store_default_params(&p->store);
    mt_ingest_default_params(&p->ingest);
    mt_index_update_default_params(&p->update);
    p->search_index = 1;
    p->build_status = 1;
}

/* ==== Ingest ==== */

/* Counts non-blank lines so a progress bar can show a total; 0 when the
 * input is not a file that can be read twice (stdin). */
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

/* Refuses inputs that are directories, before the store is touched. */
static enum mt_status check_inputs(const char *const *in, size_t n,
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

/* The run's settings, as the ingest's progress_user (which is not const). */
struct ingest_ctx {
    const struct mt_index_run_params *p;
};

static void on_records(uint64_t records, void *user)
{
    const struct ingest_ctx *c = user;

    c->p->on_records(c->p->user, records);
}

/* An input that held no document: a warning, an error when strict. */
static enum mt_status check_empty(const char *path,
                                  const struct mt_ingest_result *r,
                                  const struct mt_index_run_params *p,
                                  struct mt_error *err)
{
    char msg[4200];

    if (r->documents + r->unchanged + r->skipped > 0)
        return MT_OK;
    if (p->strict)
        return mt_fail(err, MT_EPARSE,
                       "%s: 0 documents: the input is empty (--strict)", path);
    snprintf(msg, sizeof msg, "%s: 0 documents: the input is empty", path);
    if (p->on_warning)
        p->on_warning(p->user, msg);
    return MT_OK;
}

static void add_result(struct mt_ingest_result *sum,
                       const struct mt_ingest_result *r)
{
    sum->documents += r->documents;
    sum->unchanged += r->unchanged;
    sum->chunks += r->chunks;
    sum->skipped += r->skipped;
}

static enum mt_status ingest_one(struct mt_store *s, const char *path,
                                 const struct mt_index_run_params *p,
                                 struct mt_index_run_result *res,
                                 struct mt_error *err)
{
    struct mt_ingest_params ip = p->ingest;
    struct ingest_ctx ctx = {p};
    struct mt_ingest_result r;
    enum mt_status st;

    if (p->on_input)
        p->on_input(p->user, path, count_lines(path));
    ip.progress = p->on_records ? on_records : NULL;
    ip.progress_user = &ctx;
    if (!ip.cancelled) {
        ip.cancelled = p->cancelled;
        ip.cancelled_user = p->user;
    }
    memset(&r, 0, sizeof r);
    st = mt_store_ingest_jsonl(s, path, &ip, &r, err);
    if (st != MT_OK)
        return st;
    res->inputs++;
    add_result(&res->ingest, &r);
    if (p->on_input_done)
        p->on_input_done(p->user, path, &r);
    return check_empty(path, &r, p, err);
}

/* ==== The build and its status file ==== */

/* DIR/MT_INDEX_BUILD_STATUS while the build runs, and the caller's
 * progress callback it wraps. */
struct build_status {
    pthread_mutex_t mu;
    char path[4200];
    const char *embedder;
    time_t started;
    double t0;   /* monotonic seconds at the start */
    double last; /* ... at the last status write; 0 before the first */
    void (*progress)(uint64_t done, uint64_t total, void *user);
    void *progress_user;
};

/* Rewrites the status file; a failure only costs the server its view. */
static void write_status(const struct build_status *b, uint64_t done,
                         uint64_t total, double t)
{
    double secs = t - b->t0;
    double rate = secs > 0 ? (double)done / secs : 0.0;
    double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    json_t *o = json_pack("{s:I,s:s,s:I,s:I,s:f,s:f,s:I,s:I}", "pid",
                          (json_int_t)getpid(), "embedder", b->embedder, "done",
                          (json_int_t)done, "total", (json_int_t)total, "rate",
                          rate, "eta_s", eta, "started", (json_int_t)b->started,
                          "updated", (json_int_t)time(NULL));
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;

    if (js)
        mtx_file_write_atomic(b->path, js, strlen(js), NULL);
    mt_free(js);
    json_decref(o);
}

/* The builder reports its total at its first chunk; the status file is
 * rewritten at most once a second, by one thread at a time, and before
 * the caller hears of the progress (so the caller sees the file). */
static void on_build_progress(uint64_t done, uint64_t total, void *user)
{
    struct build_status *b = user;
    double t;

    if (b->path[0] && pthread_mutex_trylock(&b->mu) == 0) {
        t = mtx_clock_now();
        if (b->last == 0 || t - b->last >= 1.0) {
            b->last = t;
            write_status(b, done, total, t);
        }
        pthread_mutex_unlock(&b->mu);
    }
    if (b->progress)
        b->progress(done, total, b->progress_user);
}

/* The update's settings: the run's cancel flag, the embedding cache that
 * embed_jobs resumes from, the status wrapper around the progress. */
static enum mt_status update_params(struct mt_store *s,
                                    const struct mt_index_run_params *p,
                                    struct build_status *b, char *cache,
                                    size_t n, struct mt_index_update_params *up,
                                    struct mt_error *err)
{
    *up = p->update;
    if (!up->build.cancelled) {
        up->build.cancelled = p->cancelled;
        up->build.cancelled_user = p->user;
    }
    if (up->embed_jobs && !up->embed_cache) {
        if ((size_t)snprintf(cache, n, "%s/embed-cache.db", mt_store_dir(s)) >=
            n)
            return mt_fail(err, MT_ELIMIT, "store path too long: %s",
                           mt_store_dir(s));
        up->embed_cache = cache;
    }
    b->progress = p->update.build.progress;
    b->progress_user = p->update.build.progress_user;
    up->build.progress = on_build_progress;
    up->build.progress_user = b;
    return MT_OK;
}

/* The build with its embedder chosen as mt_index_update chooses it. */
static enum mt_status build(struct mt_store *s,
                            const struct mt_index_run_params *p,
                            struct mt_index_run_result *res,
                            struct mt_error *err)
{
    struct mt_index_update_params up;
    struct build_status b;
    char name[4096], cache[4200];
    enum mt_status st =
        mt_index_pick_embedder(mt_store_dir(s), p->update.embedder_spec,
                               p->update.dims, name, sizeof name, NULL, err);

    if (st != MT_OK)
        return st;
    memset(&b, 0, sizeof b);
    st = update_params(s, p, &b, cache, sizeof cache, &up, err);
    if (st != MT_OK)
        return st;
    if (p->on_build)
        p->on_build(p->user, name);
    b.embedder = name;
    b.started = time(NULL);
    b.t0 = mtx_clock_now();
    if (p->build_status)
        snprintf(b.path, sizeof b.path, "%s/%s", mt_store_dir(s),
                 MT_INDEX_BUILD_STATUS);
    pthread_mutex_init(&b.mu, NULL);
    st = mt_index_update(s, &up, &res->build, err);
    if (b.path[0])
        unlink(b.path);
    pthread_mutex_destroy(&b.mu);
    res->built = st == MT_OK;
    return st;
}

/* ==== The run ==== */

enum mt_status mt_index_run_store(struct mt_store *s, const char *const *inputs,
                                  size_t n, const struct mt_index_run_params *p,
                                  struct mt_index_run_result *res,
                                  struct mt_error *err)
{
    struct mt_index_run_params defaults;
    struct mt_index_run_result mine;
    enum mt_status st;
    size_t i;

    if (!p) {
        mt_index_run_default_params(&defaults);
        p = &defaults;
    }
    if (!res)
        res = &mine;
    memset(res, 0, sizeof *res);
    st = mt_param_check(&mt_index_run_param_table, p, 0, err);
    if (st == MT_OK)
        st = check_inputs(inputs, n, err);
    for (i = 0; st == MT_OK && i < n; i++) {
        if (p->cancelled && p->cancelled(p->user))
            return mt_fail(err, MT_ECANCELED,
                           "cancelled before %s: the inputs before it are "
                           "ingested; run it again to go on",
                           inputs[i]);
        st = ingest_one(s, inputs[i], p, res, err);
    }
    if (st == MT_OK && p->search_index)
        st = build(s, p, res, err);
    return st;
}

enum mt_status mt_index_run(const char *dir, const char *const *inputs,
                            size_t n, const struct mt_index_run_params *p,
                            struct mt_index_run_result *res,
                            struct mt_error *err)
{
    struct mt_index_run_params defaults;
    struct mt_store_params sp;
    struct mt_store *s = NULL;
    enum mt_status st;

    if (!p) {
        mt_index_run_default_params(&defaults);
        p = &defaults;
    }
    if (res)
        memset(res, 0, sizeof *res);
    sp = p->store;
    sp.create = n > 0; /* without inputs, only an existing store */
    /* the CLI's bounds for every caller, before the store is touched */
    st = mt_param_check(&mt_index_run_param_table, p, 0, err);
    if (st == MT_OK)
        st = check_inputs(inputs, n, err);
    if (st == MT_OK)
        st = mt_publish_refuse_writes(dir, err);
    if (st == MT_OK)
        st = mt_store_open(dir, &sp, &s, err);
    if (st == MT_OK)
        st = mt_index_run_store(s, inputs, n, p, res, err);
    mt_store_close(s);
    return st;
}
