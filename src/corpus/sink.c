/* Where imported documents go (the writer's side of the pipeline in
 * pipe.c): a store, in transactional batches with a per-file "imported
 * whole" mark for resuming, or a JSONL file written under a temporary name
 * and renamed into place only on success. Only the writer thread calls
 * these; the parser threads hand it documents already serialized. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "corpus/corpus_int.h"
#include "medtrust/accounts.h"
#include "medtrust/core.h"

/* An output file that appears only when complete. */
struct tmp_out {
    char *path; /* final name; NULL when unused */
    char *tmp;
    FILE *f;
};

struct mtx_out {
    struct mt_import_params p;
    struct mt_store *store;
    struct mt_state *marks; /* the store's own settings: files imported */
    struct tmp_out docs;
    struct tmp_out queries;
    int in_txn;
    uint32_t in_batch;
    int64_t source_id;
    char source[256];
    char file_source[256]; /* the current file's, for mtx_out_source("") */
    char mark_key[PATH_MAX + 16]; /* settings key of the current file */
    char mark_val[320];
    uint64_t total_bytes;
    uint64_t done_bytes; /* files finished */
    uint64_t file_bytes; /* read of the current file */
    uint64_t cur_size;
    struct mt_import_result res;
    struct mt_error first; /* the first file skipped */
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
    o->f = mtx_file_fopen(o->tmp, "wb", 0666);
    if (!o->f)
        return mt_fail(err, mtx_file_errno_status(errno),
                       "%s: cannot create: %s", o->tmp, strerror(errno));
    return MT_OK;
}

/* Flushes, syncs and renames into place (ok) or removes (!ok). */
static enum mt_status out_close(struct tmp_out *o, int ok, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (o->f) {
        if (ok && mtx_file_flush_sync(o->f, 0) != 0)
            st = mt_fail(err, mtx_file_errno_status(errno), "%s: %s", o->tmp,
                         strerror(errno));
        if (fclose(o->f) != 0 && ok && st == MT_OK)
            st = mt_fail(err, mtx_file_errno_status(errno), "%s: %s", o->tmp,
                         strerror(errno));
        if (ok && st == MT_OK && mtx_file_rename(o->tmp, o->path) != 0)
            st = mt_fail(err, mtx_file_errno_status(errno), "%s: %s", o->path,
                         strerror(errno));
        if (ok && st == MT_OK)
            st = mtx_file_sync_dir(o->path, err);
        if (!ok || st != MT_OK)
            unlink(o->tmp);
    }
    mt_free(o->path);
    mt_free(o->tmp);
    memset(o, 0, sizeof *o);
    return st;
}

static enum mt_status out_line(struct tmp_out *o, const char *line, size_t n,
                               struct mt_error *err)
{
    if (fwrite(line, 1, n, o->f) != n || fputc('\n', o->f) == EOF)
        return mt_fail(err, mtx_file_errno_status(errno),
                       "%s: write failed: %s", o->tmp, strerror(errno));
    return MT_OK;
}

/* ==== Opening and batches ==== */

enum mt_status mtx_out_open(const struct mt_import_params *p,
                            struct mtx_out **out, struct mt_error *err)
{
    struct mtx_out *k = mt_calloc(1, sizeof *k);
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
    /* The writer thread is the pipeline's bottleneck when the parsers keep
     * up: it should not also copy pages into store.db and wait on fsync. */
    if (st == MT_OK && k->store)
        st = mt_store_background_checkpoints(k->store, 1, err);
    if (st == MT_OK && p->jsonl_out)
        st = out_open(&k->docs, p->jsonl_out, err);
    if (st == MT_OK && p->queries_out)
        st = out_open(&k->queries, p->queries_out, err);
    if (st != MT_OK) {
        mtx_out_close(k, 0, NULL, NULL);
        return st;
    }
    *out = k;
    return MT_OK;
}

void mtx_out_set_total(struct mtx_out *k, uint64_t bytes)
{
    k->total_bytes = bytes;
}

void mtx_out_read(struct mtx_out *k, uint64_t bytes_in_file)
{
    k->file_bytes = bytes_in_file;
}

static void report(struct mtx_out *k)
{
    if (k->p.progress)
        k->p.progress(k->done_bytes + k->file_bytes, k->total_bytes,
                      k->p.progress_user);
}

static enum mt_status txn(struct mtx_out *k, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    if (k->store && !k->in_txn) {
        st = mt_store_begin(k->store, err);
        k->in_txn = st == MT_OK;
        k->in_batch = 0;
    }
    return st;
}

static enum mt_status commit(struct mtx_out *k, struct mt_error *err)
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
static enum mt_status file_mark(struct mtx_out *k, const char *path,
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

static enum mt_status use_source(struct mtx_out *k, const char *source,
                                 struct mt_error *err)
{
    if (!k->store || (k->source_id && strcmp(k->source, source) == 0))
        return MT_OK;
    snprintf(k->source, sizeof k->source, "%s", source);
    return mt_store_source(k->store, source, &k->source_id, err);
}

/* Is 'path' already in the store whole? Sets the current mark. */
static enum mt_status marked(struct mtx_out *k, const char *path,
                             const char *source, int *done,
                             struct mt_error *err)
{
    char val[320];
    int found = 0;
    enum mt_status st;

    snprintf(k->source, sizeof k->source, "%s", source);
    *done = 0;
    st = file_mark(k, path, err);
    if (st != MT_OK || !k->store)
        return st;
    st = mt_setting_get(k->marks, k->mark_key, val, sizeof val, &found, err);
    *done = st == MT_OK && found && strcmp(val, k->mark_val) == 0;
    return st;
}

enum mt_status mtx_out_file_imported(struct mtx_out *k, const char *path,
                                     const char *source, int *done,
                                     struct mt_error *err)
{
    char keep[sizeof k->source];
    enum mt_status st;

    snprintf(keep, sizeof keep, "%s", k->source);
    st = marked(k, path, source, done, err);
    snprintf(k->source, sizeof k->source, "%s", keep);
    return st;
}

enum mt_status mtx_out_file_begin(struct mtx_out *k, const char *path,
                                  const char *source, int *skip,
                                  struct mt_error *err)
{
    enum mt_status st = use_source(k, source, err);

    snprintf(k->file_source, sizeof k->file_source, "%s", source);
    k->file_bytes = 0;
    if (st == MT_OK)
        st = marked(k, path, source, skip, err);
    if (st == MT_OK && *skip) {
        k->res.resumed++;
        k->done_bytes += k->cur_size;
        report(k);
    }
    return st;
}

enum mt_status mtx_out_source(struct mtx_out *k, const char *source,
                              struct mt_error *err)
{
    /* the file's mark (mark_val) keeps the file's own source */
    return use_source(k, *source ? source : k->file_source, err);
}

enum mt_status mtx_out_file_end(struct mtx_out *k, struct mt_error *err)
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

void mtx_out_skip(struct mtx_out *k, enum mt_status st, const char *what,
                  int file)
{
    if (file && k->first.status == MT_OK)
        mt_fail(&k->first, st, "%s", what);
    if (file)
        k->res.bad_files++;
    else
        k->res.bad_records++;
    if (k->p.on_skip)
        k->p.on_skip(what, k->p.skip_user);
}

enum mt_status mtx_out_file_partial(struct mtx_out *k, struct mt_error *err)
{
    k->done_bytes += k->cur_size;
    k->file_bytes = 0;
    return commit(k, err);
}

const struct mt_import_result *mtx_out_result(const struct mtx_out *k)
{
    return &k->res;
}

const struct mt_error *mtx_out_first(const struct mtx_out *k)
{
    return &k->first;
}

/* ==== Documents ==== */

enum mt_status mtx_out_put_line(struct mtx_out *k, const char *line, size_t n,
                                struct mt_error *err)
{
    enum mt_status st = out_line(&k->docs, line, n, err);

    k->res.documents += st == MT_OK;
    return st;
}

enum mt_status mtx_out_put_doc(struct mtx_out *k, const struct mt_doc *doc,
                               struct mt_error *err)
{
    struct mt_put_result pr;
    enum mt_status st = txn(k, err);

    if (st == MT_OK)
        st = k->p.no_chunk
                 ? mt_store_put_chunk(k->store, k->source_id, doc, &pr, err)
                 : mt_store_put(k->store, k->source_id, doc, &pr, err);
    if (st != MT_OK)
        return mt_error_prefix(err, "record %s", doc->ext_id);
    k->res.unchanged += pr.unchanged != 0;
    k->res.documents += pr.unchanged == 0;
    k->res.chunks += pr.chunks;
    if (++k->in_batch >= k->p.batch_size)
        st = commit(k, err);
    return st;
}

enum mt_status mtx_out_delete(struct mtx_out *k, const char *id,
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

void mtx_out_count(struct mtx_out *k, uint64_t records, uint64_t skipped)
{
    k->res.records += records;
    k->res.skipped += skipped;
}

enum mt_status mtx_out_query_line(struct mtx_out *k, const char *line, size_t n,
                                  struct mt_error *err)
{
    enum mt_status st;

    if (!k->queries.f)
        return MT_OK;
    st = out_line(&k->queries, line, n, err);
    k->res.queries += st == MT_OK;
    return st;
}

enum mt_status mtx_out_close(struct mtx_out *k, int ok,
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
    if (k->store)
        mt_store_background_checkpoints(k->store, 0, NULL);
    mt_state_close(k->marks);
    mt_free(k);
    return st;
}
