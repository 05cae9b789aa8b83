/* medtrust stats: documents and chunks per source in a store. */
#include <stdio.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/progress.h"
#include "core/redact.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/publish.h"
#include "medtrust/store.h"

static const struct cli_opt stats_opts[] = {
    {"db", 'd', "DIR",
     "store directory, or a publish folder (its CURRENT snapshot) (required)",
     0},
    {"json", 'j', NULL, "print one JSON object per source and the total", 0},
    {"check", 0, NULL,
     "also check the store (SQLite's integrity check) and every byte of the "
     "search index (every checksum and graph link, the postings', vectors' "
     "and links' too, which opening the index leaves; a progress bar in MiB "
     "on stderr for an index of 64 MiB or more); exits 1 naming the first "
     "damaged file and section",
     0},
    {NULL, 0, NULL, NULL, 0},
};

static enum mt_status print_counts(const struct mt_store_counts *c, void *user)
{
    const int *json = user;

    if (*json) {
        json_t *o =
            json_pack("{s:s?,s:I,s:I,s:I}", "source", c->source, "documents",
                      (json_int_t)c->documents, "chunks", (json_int_t)c->chunks,
                      "bytes", (json_int_t)c->text_bytes);
        if (!o)
            return MT_ENOMEM;
        json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(o);
        return MT_OK;
    }
    printf("%-24s %10llu documents %10llu chunks %12llu bytes\n",
           c->source ? c->source : "total", (unsigned long long)c->documents,
           (unsigned long long)c->chunks, (unsigned long long)c->text_bytes);
    return MT_OK;
}

static void print_settings(struct mt_store *s, int json)
{
    const struct mt_store_params *p = mt_store_settings(s);

    if (json)
        return;
    printf("store schema v%d, analyzer %s, chunks of %u characters with %u "
           "overlap\n",
           mt_store_schema_version(s), p->analyzer, p->chunk_size,
           p->chunk_overlap);
}

/* A bar in MiB, drawn for an index of 64 MiB or more (smaller ones are
 * checked in a moment). */
#define CHECK_BAR_MIN ((uint64_t)64 << 20)
struct check_bar {
    struct mt_progress *bar;
    int failed;
};

static void check_progress(uint64_t done, uint64_t total, void *user)
{
    struct check_bar *c = user;
    struct mt_progress_params pp = mtx_progress_default_params();

    if (!c->bar && !c->failed && total >= CHECK_BAR_MIN) {
        pp.label = "checking index (MiB)";
        pp.total = total >> 20;
        c->failed = mtx_progress_new(&pp, &c->bar) != MT_OK;
    }
    if (c->bar)
        mtx_progress_update(c->bar, done >> 20);
}

/* Every checksum of the index (mt_index_check). */
static enum mt_status check_index(const struct mt_index *idx,
                                  struct mt_error *err)
{
    struct check_bar c = {NULL, 0};
    enum mt_status st = mt_index_check(idx, check_progress, &c, err);

    if (c.bar)
        mtx_progress_finish(c.bar);
    mtx_progress_free(c.bar);
    return st;
}

/* The search index's shape, when the store has one; with 'check', every
 * byte of it checked (an index that cannot be opened is then an error,
 * not "none"). */
static enum mt_status print_index(const char *db, int json, int check,
                                  struct mt_error *err)
{
    struct mt_index *idx = NULL;
    struct mt_index_stats st;
    uint32_t dims = 0;
    char emb[1024];
    struct mt_error e = {MT_OK, ""};
    enum mt_status rc = mt_index_open(db, &idx, &e);

    if (rc != MT_OK) {
        if (check && rc != MT_ENOTFOUND)
            return mt_fail(err, rc, "%s", e.msg);
        if (!json)
            printf("search index: none (build it with 'medtrust index "
                   "--db %s')\n",
                   db);
        return MT_OK;
    }
    mt_index_stats(idx, &st);
    /* the embedder spec the index records, its secrets cut out */
    mtx_redact(mt_index_embedder(idx, &dims), emb, sizeof emb);
    if (json) {
        json_t *o = json_pack(
            "{s:{s:i,s:i,s:I,s:I,s:I,s:s,s:i}}", "index", "segments",
            (int)st.segments, "damaged", (int)st.damaged_segments, "chunks",
            (json_int_t)st.chunks, "terms", (json_int_t)st.terms, "bytes",
            (json_int_t)st.bytes, "embedder", emb, "dims", (int)dims);
        json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(o);
    } else {
        printf("search index: %u segment%s (%u damaged), %llu chunks, %llu "
               "terms, %.1f MB, vectors: %s\n",
               st.segments, st.segments == 1 ? "" : "s", st.damaged_segments,
               (unsigned long long)st.chunks, (unsigned long long)st.terms,
               (double)st.bytes / 1e6, emb[0] ? emb : "none");
    }
    rc = check ? check_index(idx, err) : MT_OK;
    if (rc == MT_OK && check && !json)
        printf("search index: every checksum sound\n");
    mt_index_close(idx);
    return rc;
}

static int stats_run(struct cli_args *a)
{
    struct mt_store_params sp;
    struct mt_error err = {MT_OK, ""};
    struct mt_store *s = NULL;
    char dir[4096];
    int json = cli_get(a, "json") != NULL;
    enum mt_status st;

    if (!cli_get(a, "db")) {
        fprintf(stderr, "medtrust stats: --db is required\n");
        return 1;
    }
    mt_store_default_params(&sp);
    sp.create = 0;
    sp.read_only = 1; /* a reader: an older schema is read as it is */
    /* a publish folder reads as the snapshot its CURRENT names, as search
     * does (include/medtrust/publish.h) */
    st = mt_publish_resolve(cli_get(a, "db"), dir, sizeof dir, &err);
    if (st == MT_OK)
        st = mt_store_open(dir, &sp, &s, &err);
    if (st == MT_OK && cli_get(a, "check"))
        st = mt_store_check(s, &err);
    if (st == MT_OK) {
        print_settings(s, json);
        st = mt_store_stats(s, print_counts, &json, &err);
    }
    if (st == MT_OK)
        st = print_index(dir, json, cli_get(a, "check") != NULL, &err);
    mt_store_close(s);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_stats = {
    "stats",
    "print document and chunk counts per source",
    "--db DIR [--json] [--check]",
    NULL,
    stats_opts,
    stats_run,
};
