/* Where imported documents go: a store, in transactional batches with a
 * per-file "imported whole" mark for resuming, or a JSONL file written
 * under a temporary name and renamed into place only on success. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corpus/corpus_int.h"
#include "medtrust/accounts.h"
#include "medtrust/core.h"

/* An output file that appears only when complete. */
struct tmp_out {
    char *path; /* final name; NULL when unused */
    char *tmp;
    FILE *f;
};

struct mt_sink {
    struct mt_import_params p;
    struct mt_store *store;
    struct mt_state *marks; /* the store's own settings: files imported */
    struct tmp_out docs;
    struct tmp_out queries;
    int in_txn;
    uint32_t in_batch;
    int64_t source_id;
    char source[256];
    char mark_key[PATH_MAX + 16]; /* settings key of the current file */
    char mark_val[320];
    uint64_t total_bytes;
    uint64_t done_bytes; /* files finished */
    uint64_t file_bytes; /* read of the current file */
    uint64_t cur_size;
    struct mt_import_result res;
};

/* ==== Temporary outputs ==== */

static enum mt_status out_open(struct tmp_out *o, const char *path,
                               struct mt_error *err)
{
    size_t n = strlen(path) + 32;

    o->path = mt_strdup(path);
    o->tmp = mt_malloc(n);
    if (!o->path || !o->tmp)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    snprintf(o->tmp, n, "%s.part-%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "wb");
    if (!o->f)
        return mt_fail(err, MT_EIO, "%s: cannot create: %s", o->tmp,
                       strerror(errno));
    return MT_OK;
}

/* Flushes, syncs and renames into place (ok) or removes (!ok). */
static enum mt_status out_close(struct tmp_out *o, int ok, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (o->f) {
        if (ok && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0))
            st = mt_fail(err, MT_EIO, "%s: %s", o->tmp, strerror(errno));
        if (fclose(o->f) != 0 && ok && st == MT_OK)
            st = mt_fail(err, MT_EIO, "%s: %s", o->tmp, strerror(errno));
        if (ok && st == MT_OK && rename(o->tmp, o->path) != 0)
            st = mt_fail(err, MT_EIO, "%s: %s", o->path, strerror(errno));
        if (!ok || st != MT_OK)
            unlink(o->tmp);
    }
    mt_free(o->path);
    mt_free(o->tmp);
    memset(o, 0, sizeof *o);
    return st;
}

static enum mt_status out_line(struct tmp_out *o, json_t *obj,
                               struct mt_error *err)
{
    if (json_dumpf(obj, o->f, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 ||
        fputc('\n', o->f) == EOF)
        return mt_fail(err, MT_EIO, "%s: write failed: %s", o->tmp,
                       strerror(errno));
    return MT_OK;
}

/* ==== Opening and batches ==== */

enum mt_status mt_sink_open(const struct mt_import_params *p,
                            struct mt_sink **out, struct mt_error *err)
{
    struct mt_sink *k = mt_calloc(1, sizeof *k);
    enum mt_status st = MT_OK;

    if (!k)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    k->p = *p;
    k->store = p->store;
    if (!k->p.batch_size)
        k->p.batch_size = 1000;
    if (!k->store && !p->jsonl_out)
        st = mt_fail(err, MT_EINVAL, "import needs a store or a JSONL output");
    if (st == MT_OK && k->store)
        st = mt_state_from_store(k->store, &k->marks, err);
    if (st == MT_OK && p->jsonl_out)
        st = out_open(&k->docs, p->jsonl_out, err);
    if (st == MT_OK && p->queries_out)
        st = out_open(&k->queries, p->queries_out, err);
    if (st != MT_OK) {
        mt_sink_close(k, 0, NULL, NULL);
        return st;
    }
    *out = k;
    return MT_OK;
}

void mt_sink_set_total(struct mt_sink *k, uint64_t bytes)
{
    k->total_bytes = bytes;
}

void mt_sink_read(struct mt_sink *k, uint64_t bytes_in_file)
{
    k->file_bytes = bytes_in_file;
}

static void report(struct mt_sink *k)
{
    if (k->p.progress)
        k->p.progress(k->done_bytes + k->file_bytes, k->total_bytes,
                      k->p.progress_user);
}

static enum mt_status txn(struct mt_sink *k, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (k->store && !k->in_txn) {
        st = mt_store_begin(k->store, err);
        k->in_txn = st == MT_OK;
        k->in_batch = 0;
    }
    return st;
}

static enum mt_status commit(struct mt_sink *k, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (k->in_txn) {
        k->in_txn = 0;
        st = mt_store_commit(k->store, err);
        if (st != MT_OK)
            mt_store_rollback(k->store);
    }
    if (st == MT_OK)
        report(k);
    return st;
}

/* ==== Files and their resume marks ==== */

/* The mark says "this file, at this size and mtime, went in whole". */
static enum mt_status file_mark(struct mt_sink *k, const char *path,
                                struct mt_error *err)
{
    char real[PATH_MAX];
    struct stat sb;

    if (stat(path, &sb) != 0)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    if (!realpath(path, real))
        snprintf(real, sizeof real, "%s", path);
    k->cur_size = (uint64_t)sb.st_size;
    snprintf(k->mark_key, sizeof k->mark_key, "import:%s", real);
    snprintf(k->mark_val, sizeof k->mark_val, "%lld:%lld:%s",
             (long long)sb.st_size, (long long)sb.st_mtime, k->source);
    return MT_OK;
}

static enum mt_status use_source(struct mt_sink *k, const char *source,
                                 struct mt_error *err)
{
    if (!k->store || (k->source_id && strcmp(k->source, source) == 0))
        return MT_OK;
    snprintf(k->source, sizeof k->source, "%s", source);
    return mt_store_source(k->store, source, &k->source_id, err);
}

enum mt_status mt_sink_file_begin(struct mt_sink *k, const char *path,
                                  const char *source, int *skip,
                                  struct mt_error *err)
{
    char val[320];
    int found = 0;
    enum mt_status st = use_source(k, source, err);

    *skip = 0;
    snprintf(k->source, sizeof k->source, "%s", source);
    k->file_bytes = 0;
    if (st == MT_OK)
        st = file_mark(k, path, err);
    if (st != MT_OK || !k->store)
        return st;
    st = mt_setting_get(k->marks, k->mark_key, val, sizeof val, &found, err);
    if (st == MT_OK && found && strcmp(val, k->mark_val) == 0) {
        *skip = 1;
        k->res.resumed++;
        k->done_bytes += k->cur_size;
        report(k);
    }
    return st;
}

enum mt_status mt_sink_file_end(struct mt_sink *k, struct mt_error *err)
{
    enum mt_status st = txn(k, err);

    if (st == MT_OK && k->store)
        st = mt_setting_put(k->marks, k->mark_key, k->mark_val, err);
    k->done_bytes += k->cur_size;
    k->file_bytes = 0;
    if (st == MT_OK)
        st = commit(k, err);
    if (st == MT_OK)
        k->res.files++;
    return st;
}

/* ==== Documents ==== */

static enum mt_status put_jsonl(struct mt_sink *k, const struct mt_sink_doc *d,
                                struct mt_error *err)
{
    json_t *o = json_object();
    enum mt_status st = MT_ENOMEM;

    if (o && json_object_set_new(o, "id", json_string(d->id)) == 0 &&
        (!d->title ||
         json_object_set_new(o, "title", json_string(d->title)) == 0) &&
        json_object_set_new(o, "text", json_stringn(d->text, d->text_len)) ==
            0 &&
        (!d->meta || json_object_update(o, d->meta) == 0))
        st = out_line(&k->docs, o, err);
    else
        mt_fail(err, st, "record %s: out of memory", d->id);
    json_decref(o);
    k->res.documents += st == MT_OK;
    return st;
}

static enum mt_status put_store(struct mt_sink *k, const struct mt_sink_doc *d,
                                struct mt_error *err)
{
    char *meta = d->meta
                     ? json_dumps(d->meta, JSON_COMPACT | JSON_PRESERVE_ORDER)
                     : NULL;
    struct mt_doc doc = {d->id, d->title, d->text, d->text_len, meta};
    struct mt_put_result pr;
    enum mt_status st;

    if (d->meta && !meta)
        return mt_fail(err, MT_ENOMEM, "record %s: out of memory", d->id);
    st = txn(k, err);
    if (st == MT_OK)
        st = k->p.no_chunk
                 ? mt_store_put_chunk(k->store, k->source_id, &doc, &pr, err)
                 : mt_store_put(k->store, k->source_id, &doc, &pr, err);
    mt_free(meta); /* jansson allocates through mt_malloc (import.c) */
    if (st != MT_OK)
        return mt_error_prefix(err, "record %s", d->id);
    k->res.unchanged += pr.unchanged != 0;
    k->res.documents += pr.unchanged == 0;
    k->res.chunks += pr.chunks;
    if (++k->in_batch >= k->p.batch_size)
        st = commit(k, err);
    return st;
}

enum mt_status mt_sink_put(struct mt_sink *k, const struct mt_sink_doc *d,
                           struct mt_error *err)
{
    return k->store ? put_store(k, d, err) : put_jsonl(k, d, err);
}

enum mt_status mt_sink_delete(struct mt_sink *k, const char *id,
                              struct mt_error *err)
{
    int deleted = 0;
    enum mt_status st = txn(k, err);

    if (st == MT_OK && k->store)
        st = mt_store_delete(k->store, k->source_id, id, &deleted, err);
    if (st != MT_OK)
        return mt_error_prefix(err, "deleting %s", id);
    k->res.deleted += deleted != 0;
    k->res.delete_missing += deleted == 0;
    return MT_OK;
}

void mt_sink_record(struct mt_sink *k, int skipped)
{
    k->res.records++;
    k->res.skipped += skipped != 0;
}

enum mt_status mt_sink_query(struct mt_sink *k, const char *id,
                             const char *query, const char *doc_id,
                             json_t *extra, struct mt_error *err)
{
    json_t *o;
    enum mt_status st;

    if (!k->queries.f)
        return MT_OK;
    o = json_pack("{s:s,s:s,s:[s]}", "id", id, "query", query, "relevant",
                  doc_id);
    if (!o || (extra && json_object_update(o, extra) != 0)) {
        json_decref(o);
        return mt_fail(err, MT_ENOMEM, "query %s: out of memory", id);
    }
    st = out_line(&k->queries, o, err);
    json_decref(o);
    k->res.queries += st == MT_OK;
    return st;
}

enum mt_status mt_sink_close(struct mt_sink *k, int ok,
                             struct mt_import_result *res, struct mt_error *err)
{
    enum mt_status st = MT_OK;
    enum mt_status q;

    if (!k)
        return MT_OK;
    if (ok)
        st = commit(k, err);
    else if (k->in_txn)
        mt_store_rollback(k->store);
    q = out_close(&k->docs, ok && st == MT_OK, err);
    st = st == MT_OK ? q : st;
    q = out_close(&k->queries, ok && st == MT_OK, err);
    st = st == MT_OK ? q : st;
    if (res)
        *res = k->res;
    mt_state_close(k->marks);
    mt_free(k);
    return st;
}
