/* Index build: analyses the store's chunks into new BM25 segments plus
 * chunk-id files, then swaps the manifest. New chunks go into a new
 * segment, and into one more each time the builder's memory reaches
 * segment_bytes, so a build of any size stays within it; when one more
 * segment would pass max_segments, the smallest neighbouring segments are
 * merged first (tiered); deletions trigger one full rebuild. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/bm25.h"
#include "index/index_int.h"
#include "index/segment.h"
#include "medtrust/core.h"

void mt_index_default_build_params(struct mt_index_build_params *p)
{
    memset(p, 0, sizeof *p);
    p->title_weight = MT_BM25_DEFAULT_TITLE_WEIGHT;
    p->text_weight = MT_BM25_DEFAULT_TEXT_WEIGHT;
    p->max_segments = 8;
    p->embed_batch = 64;
    p->hnsw_min = 100000;
    p->bm25_float_norms = 1;
    p->segment_bytes = (uint64_t)2 << 30;
}

void mtx_index_dir(const char *store_dir, char *buf, size_t n)
{
    if (snprintf(buf, n, "%s/index", store_dir) >= (int)n)
        buf[0] = '\0'; /* an over-long path then fails to open */
}

void mtx_index_seg_path(const char *index_dir, const char *name,
                        const char *ext, char *buf, size_t n)
{
    if (snprintf(buf, n, "%s/%s.%s", index_dir, name, ext) >= (int)n)
        buf[0] = '\0';
}

struct build {
    const struct mt_index_build_params *p;
    struct mt_store *s;
    const char *dir;
    struct mt_manifest *m;
    int save_each; /* save the manifest after each segment (resumable) */
    struct mt_bm25_builder *bm;
    int64_t *cids; /* of the segment being built */
    uint32_t *srcs;
    size_t n, cap;
    uint64_t done, total; /* chunks analysed in this build, of total */
    int64_t max_id;       /* the largest chunk id in the segment */
    struct mt_vbuild vb;
    struct mtx_vimport *vi; /* --vectors-from */
    struct mt_error *err;
};

static enum mt_status flush_segment(struct build *b);
static enum mt_status save_manifest(struct build *b);

static enum mt_status push_ids(struct build *b, int64_t cid, int64_t src)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        int64_t *c = mt_realloc(b->cids, cap * sizeof *c);
        uint32_t *s;
        if (!c)
            return MT_ENOMEM;
        b->cids = c;
        s = mt_realloc(b->srcs, cap * sizeof *s);
        if (!s)
            return MT_ENOMEM;
        b->srcs = s;
        b->cap = cap;
    }
    b->cids[b->n] = cid;
    b->srcs[b->n] = (uint32_t)src;
    b->n++;
    return MT_OK;
}

static enum mt_status add_field(struct build *b, uint32_t doc,
                                const struct mtx_achunk *c, uint32_t field)
{
    if (c->nterms[field] == 0)
        return MT_OK;
    return mtx_bm25_builder_add(b->bm, doc, field, c->terms[field],
                                c->nterms[field], b->err);
}

/* The segment's memory as the build sees it: the BM25 builder's arrays,
 * the chunk and source ids, and the float vectors when embedding. */
static int over_budget(const struct build *b)
{
    uint64_t per = sizeof *b->cids + sizeof *b->srcs +
                   (b->p->embed ? (uint64_t)b->p->dims * sizeof(float) : 0);
    uint64_t bytes = mtx_bm25_builder_bytes(b->bm) + (uint64_t)b->n * per;

    return b->p->segment_bytes && bytes >= b->p->segment_bytes;
}

/* Inverts one analysed chunk (in chunk id order, on the build's thread,
 * whatever the analysis threads), so segments are the same bytes. */
static enum mt_status on_chunk(const struct mtx_achunk *c, void *user)
{
    struct build *b = user;
    uint32_t doc = (uint32_t)b->n;
    enum mt_status st = add_field(b, doc, c, MT_BM25_FIELD_TITLE);

    if (st == MT_OK)
        st = add_field(b, doc, c, MT_BM25_FIELD_TEXT);
    if (st == MT_OK)
        st = mtx_vbuild_add(&b->vb, c->chunk_id, c->title, c->text, c->text_len,
                            b->err);
    if (st == MT_OK && push_ids(b, c->chunk_id, c->source_id) != MT_OK)
        st = mt_fail(b->err, MT_ENOMEM, "index build: out of memory");
    if (c->chunk_id > b->max_id)
        b->max_id = c->chunk_id;
    b->done++;
    if (st == MT_OK && b->p->progress && (b->done == 1 || b->done % 1024 == 0))
        b->p->progress(b->done, b->total, b->p->progress_user);
    if (st == MT_OK && b->p->cancelled && b->done % 64 == 0 &&
        b->p->cancelled(b->p->cancelled_user))
        st = mt_fail(b->err, MT_ECANCELED,
                     "index build: canceled after %llu of %llu chunks; run "
                     "it again to resume",
                     (unsigned long long)b->done, (unsigned long long)b->total);
    if (st == MT_OK && over_budget(b))
        st = flush_segment(b);
    return st;
}

/* ==== Writing a segment ==== */

static enum mt_status write_ids(const char *path, const struct build *b,
                                struct mt_error *err)
{
    struct mt_seg_writer *w = NULL;
    enum mt_status st =
        mtx_seg_writer_open(path, MT_IDS_MAGIC, MT_IDS_VERSION, &w, err);

    if (st == MT_OK)
        st = mtx_seg_writer_begin(w, MT_SEG_ID('C', 'I', 'D', 'S'), err);
    if (st == MT_OK)
        st = mtx_seg_writer_write(w, b->cids, b->n * sizeof *b->cids, err);
    if (st == MT_OK)
        st = mtx_seg_writer_begin(w, MT_SEG_ID('S', 'R', 'C', 'S'), err);
    if (st == MT_OK)
        st = mtx_seg_writer_write(w, b->srcs, b->n * sizeof *b->srcs, err);
    if (st == MT_OK)
        return mtx_seg_writer_commit(w, err);
    mtx_seg_writer_abort(w);
    return st;
}

/* Writes NAME.bm25 and NAME.ids; the ids file last, as a segment is only
 * used once the manifest names it. */
static enum mt_status write_segment(const char *dir, const char *name,
                                    struct build *b, struct mt_error *err)
{
    char path[4096];
    enum mt_status st = mtx_bm25_builder_set_ndocs(b->bm, (uint32_t)b->n, err);

    mtx_index_seg_path(dir, name, "bm25", path, sizeof path);
    if (st == MT_OK)
        st = mtx_bm25_builder_write(b->bm, path, err);
    if (st == MT_OK)
        st = mtx_vbuild_flush(&b->vb, err);
    if (st == MT_OK)
        st = mtx_vbuild_write(&b->vb, dir, name, b->p, err);
    mtx_index_seg_path(dir, name, "ids", path, sizeof path);
    if (st == MT_OK)
        st = write_ids(path, b, err);
    return st;
}

/* Removes segment files the manifest no longer names, and stale temps. */
static void collect_garbage(const char *dir, const struct mt_manifest *m)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t i;
        int keep = strncmp(e->d_name, "seg-", 4) != 0;
        for (i = 0; !keep && i < m->nsegs; i++) {
            size_t l = strlen(m->segs[i].name);
            keep = strncmp(e->d_name, m->segs[i].name, l) == 0 &&
                   e->d_name[l] == '.' && !strstr(e->d_name, ".tmp");
        }
        if (keep)
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) <
            (int)sizeof path)
            unlink(path);
    }
    closedir(d);
}

/* ==== Planning ==== */

static uint64_t indexed_chunks(const struct mt_manifest *m)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < m->nsegs; i++)
        n += m->segs[i].chunks;
    return n;
}

/* The name recorded for the build's vectors; "" without vectors. */
static const char *embedder_name(const struct mt_index_build_params *p)
{
    if (!p->embed)
        return "";
    return p->embedder && *p->embedder ? p->embedder : "custom";
}

/* The query embedder recorded: only beside vectors. */
static const char *query_name(const struct mt_index_build_params *p)
{
    return p->embed && p->query_embedder ? p->query_embedder : "";
}

/* ==== Tiered merge ==== */

/* Segments m->segs[a, b) to merge into one before appending; a == b for
 * none. */
struct window {
    size_t a, b;
};

/* What building segment 'sg' again would take of the segment budget. The
 * builder holds about twice what it writes (its arrays grow by doubling;
 * measured: 1 MiB segments of MedQuAD write 0.49-0.63 MB of BM25 and ids),
 * plus the float vectors it embeds. An estimate only picks the window: the
 * merge itself flushes at segment_bytes like any build, so its memory
 * stays bounded even when the estimate is low. */
static uint64_t seg_cost(const char *dir, const struct mt_manifest_seg *sg,
                         const struct mt_index_build_params *p)
{
    static const char *const ext[] = {"bm25", "ids"};
    uint64_t bytes = 0;
    char path[4096];
    struct stat sb;
    size_t i;

    for (i = 0; i < 2; i++) {
        mtx_index_seg_path(dir, sg->name, ext[i], path, sizeof path);
        if (stat(path, &sb) == 0)
            bytes += (uint64_t)sb.st_size;
    }
    if (sg->has_vectors)
        bytes += sg->chunks * (uint64_t)p->dims * sizeof(float);
    return 2 * bytes;
}

/* The cheapest run of len neighbouring segments (they hold neighbouring
 * chunk id ranges, so their merge is one range of the store); its cost in
 * *cost. */
static struct window cheapest(const uint64_t *cost, size_t n, size_t len,
                              uint64_t *best)
{
    struct window w = {0, 0};
    size_t i, j;

    *best = UINT64_MAX;
    for (i = 0; i + len <= n; i++) {
        uint64_t c = 0;
        for (j = i; j < i + len; j++)
            c += cost[j];
        if (c < *best) {
            *best = c;
            w.a = i;
            w.b = i + len;
        }
    }
    return w;
}

/* Picks the segments to merge when one more would pass max_segments, as
 * Lucene's TieredMergePolicy does in spirit: the smallest ones, merged
 * max_segments / 2 at a time (at least as many as make room) so merges
 * are rare, and never a run whose merge would pass the segment budget
 * (a segment built to the budget is never rewritten: Lucene's
 * maxMergedSegmentMB). Departs from Lucene in merging only neighbours,
 * since a segment is one chunk id range. When no run fits, none is
 * merged and the index keeps more than max_segments segments: a full
 * rebuild could not make fewer either. */
static enum mt_status pick_window(const char *dir, const struct mt_manifest *m,
                                  const struct mt_index_build_params *p,
                                  struct window *w)
{
    size_t n = m->nsegs, need, len, i;
    uint64_t *cost, c;

    w->a = w->b = 0;
    if (n + 1 <= p->max_segments || n < 2)
        return MT_OK;
    cost = mt_malloc(n * sizeof *cost);
    if (!cost)
        return MT_ENOMEM;
    for (i = 0; i < n; i++)
        cost[i] = seg_cost(dir, &m->segs[i], p);
    need = n + 2 - (p->max_segments ? p->max_segments : 1);
    len = p->max_segments / 2 > need ? p->max_segments / 2 : need;
    for (len = len < n ? len : n; len >= 2; len--) {
        struct window t = cheapest(cost, n, len, &c);
        if (!p->segment_bytes || c <= p->segment_bytes) {
            *w = t;
            break;
        }
    }
    mt_free(cost);
    return MT_OK;
}

/* Analyses and inverts the store's chunks after..upto, in id order. */
static enum mt_status scan(struct build *b, int64_t after, int64_t upto)
{
    struct mtx_analyse_params ap;

    ap.analyzer = mt_store_settings(b->s)->analyzer;
    ap.threads = b->p->threads;
    ap.after = after;
    ap.upto = upto;
    return mtx_index_analyse(b->s, &ap, on_chunk, b, b->err);
}

static void reverse(struct mt_manifest_seg *v, size_t n)
{
    size_t i;

    for (i = 0; i < n / 2; i++) {
        struct mt_manifest_seg t = v[i];
        v[i] = v[n - 1 - i];
        v[n - 1 - i] = t;
    }
}

/* The merge appended its segments after the old n; they take the
 * window's place, so the segments stay in chunk id order. */
static void splice(struct mt_manifest *m, struct window w, size_t n)
{
    size_t tail = n - w.b, k = m->nsegs - n;
    struct mt_manifest_seg *v = m->segs + w.a;

    memmove(v, m->segs + w.b, (tail + k) * sizeof *v);
    m->nsegs -= w.b - w.a;
    reverse(v, tail);
    reverse(v + tail, k);
    reverse(v, tail + k);
}

/* Builds the window's chunks again from the store into new segments
 * (under segment_bytes, as any build) and swaps them for the window in
 * one manifest save. Until then the manifest names the old segments
 * only, so a build killed here leaves the index as it was (the new files
 * are collected later) and the next build merges again. */
static enum mt_status merge_window(struct build *b, struct window w)
{
    struct mt_manifest *m = b->m;
    size_t n = m->nsegs;
    int64_t lo = w.a ? m->segs[w.a - 1].max_chunk_id : 0;
    int save_each = b->save_each;
    enum mt_status st;

    b->save_each = 0;
    st = scan(b, lo, m->segs[w.b - 1].max_chunk_id);
    if (st == MT_OK)
        st = flush_segment(b);
    b->save_each = save_each;
    if (st == MT_OK && m->nsegs == n) /* plan() makes sure it cannot be */
        st = mt_fail(b->err, MT_EINTERNAL,
                     "index build: the store has no chunks of %s..%s to "
                     "merge; rebuild with 'medtrust index --rebuild'",
                     m->segs[w.a].name, m->segs[w.b - 1].name);
    if (st != MT_OK)
        return st;
    splice(m, w, n);
    st = save_manifest(b);
    if (st == MT_OK)
        collect_garbage(b->dir, m);
    return st;
}

/* Decides between appending a segment and a full rebuild. */
static enum mt_status plan(struct mt_store *s, struct mt_manifest *m,
                           const struct mt_index_build_params *p, int *full,
                           uint64_t *todo, struct mt_error *err)
{
    int64_t max_id = 0;
    uint64_t upto = 0, all = 0;
    enum mt_status st =
        mt_store_chunk_span(s, m->max_chunk_id, &max_id, &upto, err);

    if (st == MT_OK)
        st = mt_store_chunk_span(s, INT64_MAX, &max_id, &all, err);
    if (st != MT_OK)
        return st;
    /* Fewer chunks at or below the indexed maximum than the segments hold
     * means some were deleted or replaced since. */
    *full = p->rebuild || upto != indexed_chunks(m) ||
            strcmp(m->analyzer, mt_store_settings(s)->analyzer) != 0 ||
            strcmp(m->embedder, embedder_name(p)) != 0 ||
            strcmp(m->query_embedder, query_name(p)) != 0 ||
            (p->embed && m->dims != p->dims);
    *todo = *full ? all : all - upto;
    return MT_OK;
}

/* ==== Build ==== */

/* A new, empty segment: BM25 builder and vector batch. */
static enum mt_status segment_open(struct build *b)
{
    const struct mt_index_build_params *p = b->p;
    struct mt_bm25_params bp = mtx_bm25_default_params();
    enum mt_status st;

    bp.field_weight[MT_BM25_FIELD_TITLE] = p->title_weight;
    bp.field_weight[MT_BM25_FIELD_TEXT] = p->text_weight;
    bp.float_norms = p->bm25_float_norms;
    st = mtx_bm25_builder_new(&bp, &b->bm, b->err);
    if (st == MT_OK)
        st = mtx_vbuild_init(&b->vb, p, b->err);
    b->vb.vi = b->vi;
    b->n = 0;
    b->max_id = 0;
    return st;
}

static void segment_close(struct build *b)
{
    mtx_bm25_builder_free(b->bm);
    b->bm = NULL;
    mtx_vbuild_free(&b->vb);
}

static enum mt_status build_open(struct build *b, struct mt_store *s,
                                 const struct mt_index_build_params *p,
                                 struct mt_error *err)
{
    enum mt_status st;

    memset(b, 0, sizeof *b);
    b->p = p;
    b->s = s;
    b->err = err;
    if (p->embed && p->vectors_from && *p->vectors_from) {
        st = mtx_vimport_open(p->vectors_from, p->vector_ids, p->dims, &b->vi,
                              err);
        if (st != MT_OK)
            return st;
    }
    return segment_open(b);
}

static void build_close(struct build *b)
{
    segment_close(b);
    mtx_vimport_close(b->vi);
    mt_free(b->cids);
    mt_free(b->srcs);
}

static enum mt_status save_manifest(struct build *b)
{
    struct mt_manifest *m = b->m;

    m->generation++;
    snprintf(m->analyzer, sizeof m->analyzer, "%s",
             mt_store_settings(b->s)->analyzer);
    if (mtx_manifest_set_embedders(m, embedder_name(b->p), query_name(b->p)) !=
        MT_OK)
        return mt_fail(b->err, MT_ENOMEM, "%s/MANIFEST: out of memory", b->dir);
    m->dims = b->p->embed ? b->p->dims : 0;
    return mtx_manifest_save(b->dir, m, b->err);
}

/* Writes the segment built so far (if any), names it in the manifest (and
 * saves that, when the build may), and starts the next one. */
static enum mt_status flush_segment(struct build *b)
{
    struct mt_manifest_seg seg;
    struct mt_manifest *m = b->m;
    enum mt_status st = MT_OK;

    if (b->n == 0)
        return MT_OK;
    memset(&seg, 0, sizeof seg);
    snprintf(seg.name, sizeof seg.name, "seg-%06u", m->next_seg++);
    seg.chunks = b->n;
    seg.max_chunk_id = b->max_id;
    seg.has_vectors = b->p->embed != NULL;
    st = write_segment(b->dir, seg.name, b, b->err);
    if (st == MT_OK && mtx_manifest_add(m, &seg) != MT_OK)
        st = mt_fail(b->err, MT_ENOMEM, "index build: out of memory");
    if (st != MT_OK)
        return st;
    if (b->max_id > m->max_chunk_id)
        m->max_chunk_id = b->max_id;
    if (b->save_each)
        st = save_manifest(b);
    segment_close(b);
    if (st == MT_OK)
        st = segment_open(b);
    return st;
}

/* Writes the last segment (if any) and the manifest that names them. */
static enum mt_status commit(struct build *b)
{
    enum mt_status st = flush_segment(b);

    return st == MT_OK ? save_manifest(b) : st;
}

static enum mt_status ensure_dir(const char *dir, struct mt_error *err)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) /* as the store's */
        return mt_fail(err, MT_EIO, "%s: cannot create directory: %s", dir,
                       strerror(errno));
    return MT_OK;
}

static enum mt_status run_build(struct mt_store *s, const char *dir,
                                struct mt_manifest *m,
                                const struct mt_index_build_params *p,
                                struct mt_index_build_result *res,
                                struct mt_error *err)
{
    struct build b;
    int full = 0;
    uint64_t todo = 0;
    int64_t after;
    struct window w = {0, 0};
    enum mt_status st = plan(s, m, p, &full, &todo, err);

    if (st != MT_OK || (!full && todo == 0))
        return st;
    st = build_open(&b, s, p, err);
    /* A merge reads its chunks' vectors again, which a stream cannot
     * give: with one, the index keeps more segments instead. */
    if (st == MT_OK && !full && !mtx_vimport_is_stream(b.vi) &&
        pick_window(dir, m, p, &w) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "index build: out of memory");
    for (size_t i = w.a; i < w.b; i++)
        todo += m->segs[i].chunks;
    b.total = todo;
    b.dir = dir;
    b.m = m;
    /* Appending, or building where there was nothing, each finished
     * segment is saved at once: a killed build resumes after it. A
     * rebuild replaces the old segments only when it is whole. */
    b.save_each = !full || m->nsegs == 0;
    after = full ? 0 : m->max_chunk_id;
    if (full) {
        m->nsegs = 0;
        m->max_chunk_id = 0;
    }
    if (st == MT_OK && w.b > w.a)
        st = merge_window(&b, w);
    if (st == MT_OK)
        st = scan(&b, after, INT64_MAX);
    if (st == MT_OK)
        st = commit(&b);
    if (st == MT_OK) {
        collect_garbage(dir, m);
        res->chunks_added = b.done;
        res->merged = full;
        res->segments_merged = (uint32_t)(w.b - w.a);
        if (p->progress)
            p->progress(b.done, b.total, p->progress_user);
    }
    build_close(&b);
    return st;
}

enum mt_status mt_index_build(struct mt_store *s,
                              const struct mt_index_build_params *params,
                              struct mt_index_build_result *res,
                              struct mt_error *err)
{
    struct mt_index_build_params defaults;
    struct mt_index_build_result r = {0, 0, 0, 0};
    struct mt_manifest m;
    char dir[4096];
    int found = 0;
    enum mt_status st;

    if (!params) {
        mt_index_default_build_params(&defaults);
        params = &defaults;
    }
    mtx_index_dir(mt_store_dir(s), dir, sizeof dir);
    st = ensure_dir(dir, err);
    if (st == MT_OK)
        st = mtx_manifest_load(dir, &m, &found, err);
    if (st != MT_OK)
        return st;
    st = run_build(s, dir, &m, params, &r, err);
    r.segments = (uint32_t)m.nsegs;
    mtx_manifest_free(&m);
    if (res)
        *res = r;
    return st;
}
