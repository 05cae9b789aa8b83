/* Index search: opens the manifest's segments (mmapped), analyses the
 * query with the corpus's analyzer, searches every segment, merges, and
 * fetches each hit's chunk and document from the store. */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/clock.h"
#include "core/pool.h"
#include "index/bm25.h"
#include "index/fusion.h"
#include "text/stopwords.h"
#include "index/index_int.h"
#include "index/segment.h"
#include "index/vec.h"
#include "medtrust/core.h"
#include "text/analyzer.h"

struct seg {
    struct mt_bm25 *bm;
    struct mt_seg *ids;
    const int64_t *cids;
    const uint32_t *srcs;
    uint32_t n;
    struct mt_vseg v; /* empty when the segment has no vectors */
};

struct mt_index {
    char dir[4096];
    struct mt_store *store;
    struct mt_analyzer *an;
    struct mt_manifest m;
    struct seg *segs;
    size_t nsegs;
    /* BM25 scratch of each thread a search runs on ([0]: the caller's,
     * made at open; the others on first need), and the workers of a
     * search on several threads (search_threads - 1, started on first
     * need and kept: see seg_lists) */
    struct mt_bm25_ctx *ctx[MT_SEARCH_MAX_THREADS];
    struct mt_pool *pool;
    struct mt_arena scratch;       /* per query */
    uint32_t bad_segs;             /* damaged segments left out */
    uint64_t ndocs;                /* BM25 N over the open segments */
    double avgdl;                  /* and their mean document length */
    struct mtx_meta_filter filter; /* the last metadata filter's docs */
    struct mtx_filter_seg *fsegs;  /* each segment's ids, for it */
};

/* A result and the arena that holds its strings, freed together. */
struct result {
    struct mt_search_result pub;
    struct mt_arena arena;
};

/* ==== Parameters ==== */

void mt_search_default_params(struct mt_search_params *p)
{
    memset(p, 0, sizeof *p);
    p->mode = MT_SEARCH_BM25;
    p->k = 10;
    p->k1 = MT_BM25_DEFAULT_K1;
    p->b = MT_BM25_DEFAULT_B;
    p->w_lex = 0.7f;
    p->w_sem = 0.3f;
    p->fusion = MT_FUSION_LINEAR;
    p->rrf_k = 60;
    p->retrieve_k = 50;
}

static const char *const mode_names[] = {"bm25", "dense", "hybrid"};

enum mt_status mt_search_mode_parse(const char *s, enum mt_search_mode *out)
{
    int i;

    for (i = 0; i < 3; i++)
        if (strcmp(s, mode_names[i]) == 0) {
            *out = (enum mt_search_mode)i;
            return MT_OK;
        }
    return MT_EINVAL;
}

const char *mt_search_mode_str(enum mt_search_mode m)
{
    return (unsigned)m < 3 ? mode_names[m] : "unknown";
}

/* ==== Open and close ==== */

/* The builder writes a segment's chunks in id order; the metadata filter
 * finds them by binary search. */
static int ids_sorted(const struct seg *sg)
{
    uint32_t i;

    for (i = 1; i < sg->n; i++)
        if (sg->cids[i - 1] >= sg->cids[i])
            return 0;
    return 1;
}

static enum mt_status open_seg(struct mt_index *idx, const char *idir,
                               const struct mt_manifest_seg *ms, struct seg *sg,
                               struct mt_error *err)
{
    char path[4096];
    const void *p = NULL;
    size_t n = 0, n2 = 0;
    enum mt_status st;

    mtx_index_seg_path(idir, ms->name, "bm25", path, sizeof path);
    st = mtx_bm25_open(path, &sg->bm, err);
    mtx_index_seg_path(idir, ms->name, "ids", path, sizeof path);
    if (st == MT_OK)
        st = mtx_seg_open(path, MT_IDS_MAGIC, 0, &sg->ids, err);
    if (st == MT_OK)
        st = mtx_seg_section(sg->ids, MT_SEG_ID('C', 'I', 'D', 'S'), &p, &n,
                             err);
    sg->cids = p;
    if (st == MT_OK)
        st = mtx_seg_section(sg->ids, MT_SEG_ID('S', 'R', 'C', 'S'), &p, &n2,
                             err);
    sg->srcs = p;
    sg->n = (uint32_t)(n / sizeof(int64_t));
    if (st == MT_OK && (n2 / sizeof(uint32_t) != sg->n || sg->n != ms->chunks))
        st = mt_fail(err, MT_EPARSE,
                     "%s: holds %u chunks, the manifest says %llu; rebuild "
                     "with 'medtrust index --rebuild'",
                     path, sg->n, (unsigned long long)ms->chunks);
    if (st == MT_OK && !ids_sorted(sg))
        st = mt_fail(err, MT_EPARSE,
                     "%s: chunk ids out of order; rebuild with 'medtrust "
                     "index --rebuild'",
                     path);
    if (st == MT_OK && ms->has_vectors)
        st = mtx_vseg_open(idir, ms->name, idx->m.dims, &sg->v, err);
    if (st == MT_OK && ms->has_vectors && mtx_vseg_count(&sg->v) != sg->n)
        st = mt_fail(err, MT_EPARSE,
                     "%s: vector count differs from its "
                     "chunk count",
                     ms->name);
    return st;
}

static void close_seg(struct seg *sg)
{
    mtx_bm25_close(sg->bm);
    mtx_seg_close(sg->ids);
    mtx_vseg_close(&sg->v);
    memset(sg, 0, sizeof *sg);
}

/* Opens every segment. A damaged one (bad checksum, truncated, missing)
 * is reported and left out, so the rest of the index stays usable;
 * only running out of memory fails the open. */
static enum mt_status open_segs(struct mt_index *idx, const char *idir,
                                struct mt_error *err)
{
    struct mt_error e;
    size_t i;
    enum mt_status st;

    idx->segs = mt_calloc(idx->m.nsegs ? idx->m.nsegs : 1, sizeof *idx->segs);
    if (!idx->segs)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", idir);
    for (i = 0; i < idx->m.nsegs; i++) {
        struct seg *sg = &idx->segs[idx->nsegs];
        mt_error_clear(&e);
        st = open_seg(idx, idir, &idx->m.segs[i], sg, &e);
        if (st == MT_ENOMEM) {
            close_seg(sg);
            return mt_fail(err, st, "%s", e.msg);
        }
        if (st == MT_OK) {
            idx->nsegs++;
            continue;
        }
        close_seg(sg);
        idx->bad_segs++;
        mt_log(MT_LOG_WARN,
               "skipping damaged segment: %s; run 'medtrust "
               "index --db %s --rebuild'",
               e.msg, idx->dir);
    }
    return MT_OK;
}

/* The collection's N and avgdl, summed over the open segments (each
 * segment's length sum is its avgdl x N; see bm25_coll). */
static void coll_totals(struct mt_index *idx)
{
    double sum = 0.0;
    size_t i;

    for (i = 0; i < idx->nsegs; i++) {
        struct mtx_bm25_stats bs;
        mtx_bm25_stats(idx->segs[i].bm, &bs);
        idx->ndocs += bs.docs;
        sum += bs.avgdl * (double)bs.docs;
    }
    idx->avgdl = idx->ndocs ? sum / (double)idx->ndocs : 0.0;
}

static enum mt_status filter_segs(struct mt_index *idx, struct mt_error *err)
{
    size_t i;

    idx->fsegs = mt_calloc(idx->nsegs + 1, sizeof *idx->fsegs);
    if (!idx->fsegs)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", idx->dir);
    for (i = 0; i < idx->nsegs; i++) {
        idx->fsegs[i].cids = idx->segs[i].cids;
        idx->fsegs[i].n = idx->segs[i].n;
    }
    return MT_OK;
}

static enum mt_status open_parts(struct mt_index *idx, const char *dir,
                                 struct mt_error *err)
{
    struct mt_store_params sp;
    char idir[4096];
    int found = 0;
    enum mt_status st;

    mt_store_default_params(&sp);
    sp.create = 0;
    sp.read_only = 1; /* a reader: an older schema is read as it is */
    st = mt_store_open(dir, &sp, &idx->store, err);
    mtx_index_dir(dir, idir, sizeof idir);
    if (st == MT_OK)
        st = mtx_manifest_load(idir, &idx->m, &found, err);
    if (st == MT_OK && !found)
        st = mt_fail(err, MT_ENOTFOUND,
                     "%s: the store has no search index yet; build it with "
                     "'medtrust index --db %s'",
                     dir, dir);
    if (st == MT_OK)
        st = mtx_analyzer_new(idx->m.analyzer, &idx->an, err);
    if (st == MT_OK)
        st = open_segs(idx, idir, err);
    if (st == MT_OK)
        coll_totals(idx);
    if (st == MT_OK && mtx_bm25_ctx_new(&idx->ctx[0]) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "%s: out of memory", dir);
    if (st == MT_OK)
        st = filter_segs(idx, err);
    return st;
}

enum mt_status mt_index_open(const char *dir, struct mt_index **out,
                             struct mt_error *err)
{
    struct mt_index *idx = mt_calloc(1, sizeof *idx);
    enum mt_status st;

    if (!idx)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", dir);
    snprintf(idx->dir, sizeof idx->dir, "%s", dir);
    idx->scratch = MT_ARENA_INIT(64 * 1024);
    st = open_parts(idx, dir, err);
    if (st != MT_OK) {
        mt_index_close(idx);
        return st;
    }
    *out = idx;
    return MT_OK;
}

void mt_index_close(struct mt_index *idx)
{
    size_t i;

    if (!idx)
        return;
    for (i = 0; i < idx->nsegs; i++)
        close_seg(&idx->segs[i]);
    mt_free(idx->segs);
    mtx_meta_filter_free(&idx->filter);
    mt_free(idx->fsegs);
    mtx_pool_free(idx->pool); /* first: no worker runs past here */
    for (i = 0; i < MT_SEARCH_MAX_THREADS; i++)
        mtx_bm25_ctx_free(idx->ctx[i]);
    mtx_analyzer_free(idx->an);
    mtx_manifest_free(&idx->m);
    mt_store_close(idx->store);
    mtx_arena_free(&idx->scratch);
    mt_free(idx);
}

void mt_index_stats(const struct mt_index *idx, struct mt_index_stats *st)
{
    size_t i;

    memset(st, 0, sizeof *st);
    st->segments = (uint32_t)idx->nsegs;
    st->damaged_segments = idx->bad_segs;
    st->analyzer = idx->m.analyzer;
    for (i = 0; i < idx->nsegs; i++) {
        struct mtx_bm25_stats bs;
        mtx_bm25_stats(idx->segs[i].bm, &bs);
        st->chunks += idx->segs[i].n;
        st->terms += bs.terms;
        st->postings += bs.postings;
        st->bytes += bs.bytes + mtx_seg_size(idx->segs[i].ids);
    }
}

/* ==== Checking every byte ==== */

struct check_walk {
    void (*progress)(uint64_t done, uint64_t total, void *user);
    void *user;
    uint64_t done;
    uint64_t total;
};

static void check_step(uint64_t bytes, void *user)
{
    struct check_walk *w = user;

    w->done += bytes;
    if (w->progress)
        w->progress(w->done, w->total, w->user);
}

/* The ids file was checked whole at open (it is read whole there). */
static enum mt_status check_seg(const struct seg *sg, struct check_walk *w,
                                struct mt_error *err)
{
    enum mt_status st = mtx_bm25_check(sg->bm, check_step, w, err);

    return st == MT_OK ? mtx_vseg_check(&sg->v, check_step, w, err) : st;
}

enum mt_status mt_index_check(const struct mt_index *idx,
                              void (*progress)(uint64_t done, uint64_t total,
                                               void *user),
                              void *user, struct mt_error *err)
{
    struct check_walk w = {progress, user, 0, 0};
    struct mt_error first = {MT_OK, ""};
    struct mt_error e;
    uint32_t bad = 0;
    size_t i;

    for (i = 0; i < idx->nsegs; i++)
        w.total += mtx_bm25_check_bytes(idx->segs[i].bm) +
                   mtx_vseg_check_bytes(&idx->segs[i].v);
    for (i = 0; i < idx->nsegs; i++) {
        mt_error_clear(&e);
        if (check_seg(&idx->segs[i], &w, &e) == MT_OK)
            continue;
        mt_log(MT_LOG_WARN, "damaged segment: %s", e.msg);
        if (!bad++)
            first = e;
    }
    if (bad)
        return mt_fail(err, MT_EPARSE,
                       "%u of %zu segments damaged (the first: %s); rebuild "
                       "with 'medtrust index --db %s --rebuild'",
                       bad, idx->nsegs, first.msg, idx->dir);
    if (idx->bad_segs)
        return mt_fail(err, MT_EPARSE,
                       "%u segments were left out at open as damaged; "
                       "rebuild with 'medtrust index --db %s --rebuild'",
                       idx->bad_segs, idx->dir);
    return MT_OK;
}

/* ==== Search ==== */

/* The sources a search is restricted to: source and sources[] of the
 * params, as store ids; n == 0 = every source. */
struct src_set {
    int64_t id[MT_SEARCH_MAX_SOURCES + 1];
    size_t n;
};

/* What a segment's search may return: its docs of the source set (when
 * it names any) and, under a metadata filter, those whose bit is set. */
struct src_filter {
    const uint32_t *srcs;
    const struct src_set *ss;
    const uint8_t *bits;
};

static int in_set(const struct src_set *ss, uint32_t src)
{
    size_t i;

    for (i = 0; i < ss->n; i++)
        if ((uint32_t)ss->id[i] == src)
            return 1;
    return 0;
}

static int accept_src(uint32_t doc, void *user)
{
    const struct src_filter *f = user;

    if (f->ss->n && !in_set(f->ss, f->srcs[doc]))
        return 0;
    return !f->bits || mtx_meta_filter_has(f->bits, doc);
}

/* Sets f for segment i: 0 when it has nothing the filter accepts. */
static int seg_filter(const struct mt_index *idx, size_t i, int meta,
                      struct src_filter *f)
{
    f->srcs = idx->segs[i].srcs;
    f->bits = meta ? idx->filter.bits[i] : NULL;
    return !meta || idx->filter.count[i] > 0;
}

static enum mt_status analyse(struct mt_index *idx, const char *q,
                              struct mt_str **terms, size_t *n,
                              struct mt_error *err)
{
    struct mt_token *toks = NULL;
    size_t i, cnt = 0;
    enum mt_status st = mtx_analyzer_collect(idx->an, q, strlen(q),
                                             &idx->scratch, &toks, &cnt, err);

    *n = 0;
    if (st != MT_OK || cnt == 0)
        return st;
    *terms = mtx_arena_alloc(&idx->scratch, cnt * sizeof **terms);
    if (!*terms)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    for (i = 0; i < cnt; i++) {
        (*terms)[i].p = toks[i].p;
        (*terms)[i].n = toks[i].n;
    }
    *n = cnt;
    return MT_OK;
}

/* The lexical query's terms: with nltk_stopwords, VerifAI's query
 * parser's NLTK stop words go first, then the index's analyzer. */
static enum mt_status lex_analyse(struct mt_index *idx, const char *q,
                                  const struct mt_search_params *p,
                                  struct mt_str **terms, size_t *n,
                                  struct mt_error *err)
{
    char *f;
    char *kept;
    enum mt_status st;

    if (!p->nltk_stopwords)
        return analyse(idx, q, terms, n, err);
    f = mtx_drop_nltk_stopwords(q);
    if (!f)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    /* the terms point into the text: it lives in the search's scratch */
    kept = mtx_arena_strndup(&idx->scratch, f, strlen(f));
    mt_free(f);
    if (!kept)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    st = analyse(idx, kept, terms, n, err);
    return st;
}

/* Collection statistics for a query over several segments, as Lucene's
 * IndexSearcher computes them (N and the length sum over all leaves, df
 * summed per term), so a document scores the same in whichever segment
 * it is and the merged top k is the one-segment ranking. Found at query
 * time from each segment's dictionary (nq x segments lookups), so the
 * on-disk format is unchanged. With one segment, NULL: its own statistics
 * are the collection's, bit for bit. */
static enum mt_status bm25_coll(struct mt_index *idx,
                                const struct mt_str *terms, size_t nq,
                                struct mt_bm25_coll *c,
                                const struct mt_bm25_coll **out,
                                struct mt_error *err)
{
    uint64_t *df;
    size_t i, j;

    *out = NULL;
    if (idx->nsegs < 2)
        return MT_OK;
    df = mtx_arena_alloc(&idx->scratch, nq * sizeof *df);
    if (!df)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    for (j = 0; j < nq; j++) {
        df[j] = 0;
        for (i = 0; i < idx->nsegs; i++)
            df[j] += mtx_bm25_term_df(idx->segs[i].bm, terms[j]);
    }
    c->ndocs = idx->ndocs;
    c->avgdl = idx->avgdl;
    c->df = df;
    *out = c;
    return MT_OK;
}

/* A score floor for the next segment's search: once the segments searched
 * so far hold 'want' hits, one scoring below the want-th of them (as the
 * merge compares: the float score, then the chunk id) cannot enter the
 * merged top 'want'. A hit whose score rounds to that float might still,
 * by its chunk id, so the floor is the float just below it: a double
 * under that rounds below the want-th. Sorts all[0..n) and drops what is
 * past the want-th (it can never be merged in); returns the floor, 0
 * while fewer than 'want' hits are held. */
static double seg_floor(struct mt_scored *all, size_t *n, size_t want)
{
    float f;

    if (*n < want)
        return 0.0;
    mtx_scored_sort(all, *n);
    *n = want;
    f = (float)all[want - 1].score;
    return f > 0.0f ? (double)nextafterf(f, 0.0f) : 0.0;
}

/* ==== Segments on several threads ==== */

/* One search's segment lists (seg_lists): work items 0..nlex-1 are the
 * BM25 searches of segments 0..nlex-1, items nlex..nlex+nsem-1 the
 * vector searches of segments 0..nsem-1. Each thread a search runs on
 * (a runner) takes the next item from 'next' until none is left. */
struct seg_job {
    struct mt_index *idx;
    const struct mt_str *terms;
    size_t nq;
    struct mt_bm25_search_params sp; /* ctx and accept_user per runner */
    const struct mt_search_params *p;
    const struct src_set *ss;
    int meta;
    size_t want;
    size_t nlex, nsem;
    atomic_size_t next;
    /* The highest floor any runner has found so far, as the bits of a
     * double (>= 0, so they order as the doubles do): shared, as
     * Lucene's MaxScoreAccumulator shares the minimum competitive score
     * among its slices. */
    _Atomic uint64_t floor_bits;
    struct runner *run;
    struct mt_vec_hit *vhits; /* segment i's hits at vhits[i * want] */
    uint32_t *vn;             /* and their number */
    enum mt_status *vst;      /* and its search's status */
};

/* A runner's BM25 part: its own top 'want' of the segments it took,
 * each searched from a floor (seg_floor of its own list, or a higher one
 * another runner shared). A hit it leaves out is behind 'want' hits of
 * its own segments or under a floor, so it is outside the merged top
 * 'want' too; every hit of the merged top 'want' is at or above every
 * floor and so returned in place, with its score. The merge of every
 * runner's list is the one-thread merge, exactly, whichever runner took
 * which segment and whenever a floor was shared. */
struct runner {
    struct seg_job *job;
    struct mt_bm25_ctx *ctx;
    struct mt_bm25_hit *hits; /* want */
    struct mt_scored *all;    /* 2 * want: held + one segment's */
    size_t n;
    size_t fail_seg; /* the segment whose search failed */
    enum mt_status st;
    struct mt_error err;
};

/* Raises the shared floor to f (when higher); returns the shared floor
 * after. Any runner's floor is valid for every segment: it is a float
 * step below the want-th of 'want' hits that runner holds, so a hit
 * under it is outside the merged top 'want' (seg_floor). */
static double share_floor(struct seg_job *j, double f)
{
    uint64_t nf, cur = atomic_load(&j->floor_bits);
    double c;

    memcpy(&nf, &f, sizeof nf);
    while (nf > cur && !atomic_compare_exchange_weak(&j->floor_bits, &cur, nf))
        ;
    memcpy(&c, &cur, sizeof c);
    return nf > cur ? f : c;
}

static void lex_item(struct runner *r, size_t i)
{
    struct seg_job *j = r->job;
    struct mt_bm25_search_params sp = j->sp;
    struct src_filter f = {NULL, j->ss, NULL};
    size_t k, nh = 0;

    if (!seg_filter(j->idx, i, j->meta, &f))
        return;
    sp.ctx = r->ctx;
    sp.accept_user = &f;
    sp.floor = share_floor(j, seg_floor(r->all, &r->n, j->want));
    r->st = mtx_bm25_search(j->idx->segs[i].bm, j->terms, j->nq, &sp, r->hits,
                            j->want, &nh, &r->err);
    if (r->st != MT_OK) {
        r->fail_seg = i;
        return;
    }
    for (k = 0; k < nh; k++) {
        r->all[r->n].key = j->idx->segs[i].cids[r->hits[k].doc];
        r->all[r->n++].score = r->hits[k].score;
    }
}

static void sem_item(struct seg_job *j, size_t i)
{
    struct src_filter f = {NULL, j->ss, NULL};
    struct mt_vec_filter vf = {accept_src, &f};

    j->vn[i] = 0;
    j->vst[i] = MT_OK;
    if (!seg_filter(j->idx, i, j->meta, &f))
        return;
    j->vst[i] =
        mtx_vseg_search(&j->idx->segs[i].v, j->p->query_vec, (uint32_t)j->want,
                        j->p->ef, j->ss->n || j->meta ? &vf : NULL,
                        j->meta ? j->idx->filter.count[i] : UINT32_MAX,
                        j->vhits + i * j->want, &j->vn[i]);
}

/* Takes items until none is left; a runner whose BM25 search failed
 * takes no more (the others finish theirs). */
static void runner_main(void *arg)
{
    struct runner *r = arg;
    struct seg_job *j = r->job;
    size_t i;

    while (r->st == MT_OK &&
           (i = atomic_fetch_add(&j->next, 1)) < j->nlex + j->nsem) {
        if (i < j->nlex)
            lex_item(r, i);
        else
            sem_item(j, i - j->nlex);
    }
}

/* Threads for this search: search_threads (0: 1; the retriever resolves
 * its auto), no more than there are items. */
static size_t runners_for(const struct seg_job *j)
{
    size_t t = j->p->search_threads ? j->p->search_threads : 1;
    size_t items = j->nlex + j->nsem;

    if (t > MT_SEARCH_MAX_THREADS)
        t = MT_SEARCH_MAX_THREADS;
    return t < items ? t : (items ? items : 1);
}

/* The workers and scratch for t runners, kept on the handle for its next
 * searches; returns how many runners it has them for (fewer when
 * threads or memory run out: the search then runs on fewer, with the
 * same hits). */
static size_t ensure_runners(struct mt_index *idx, size_t t)
{
    size_t i;

    if (t > 1 && (!idx->pool || mtx_pool_size(idx->pool) < t - 1)) {
        struct mt_pool *np = NULL;
        if (mtx_pool_new(t - 1, &np) == MT_OK) {
            mtx_pool_free(idx->pool);
            idx->pool = np;
        }
    }
    if (!idx->pool)
        return 1;
    if (t > mtx_pool_size(idx->pool) + 1)
        t = mtx_pool_size(idx->pool) + 1;
    for (i = 1; i < t; i++)
        if (!idx->ctx[i] && mtx_bm25_ctx_new(&idx->ctx[i]) != MT_OK)
            return i;
    return t;
}

/* Allocates t runners and, for the dense items, the per-segment hits,
 * from the search's scratch (the calling thread's; runners only write
 * into what they are given). */
static enum mt_status job_alloc(struct seg_job *j, size_t t,
                                struct mt_error *err)
{
    struct mt_arena *a = &j->idx->scratch;
    size_t ns = j->idx->nsegs + 1, i;

    j->run = mtx_arena_alloc(a, t * sizeof *j->run);
    j->vhits = mtx_arena_alloc(a, (j->nsem * j->want + 1) * sizeof *j->vhits);
    j->vn = mtx_arena_alloc(a, ns * sizeof *j->vn);
    j->vst = mtx_arena_alloc(a, ns * sizeof *j->vst);
    if (!j->run || !j->vhits || !j->vn || !j->vst)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    for (i = 0; i < t; i++) {
        struct runner *r = &j->run[i];
        memset(r, 0, sizeof *r);
        r->job = j;
        r->ctx = j->idx->ctx[i];
        r->hits = mtx_arena_alloc(a, (j->want + 1) * sizeof *r->hits);
        r->all = mtx_arena_alloc(a, (2 * j->want + 1) * sizeof *r->all);
        if (j->nlex && (!r->hits || !r->all))
            return mt_fail(err, MT_ENOMEM, "search: out of memory");
    }
    return MT_OK;
}

/* Runs runners 1..t-1 on the handle's workers and runner 0 here. A
 * runner that cannot be queued leaves its items to the others. */
static void run_job(struct seg_job *j, size_t t)
{
    size_t i;

    atomic_init(&j->next, 0);
    atomic_init(&j->floor_bits, 0);
    for (i = 1; i < t; i++)
        (void)mtx_pool_submit(j->idx->pool, runner_main, &j->run[i]);
    runner_main(&j->run[0]);
    if (t > 1)
        mtx_pool_wait(j->idx->pool);
}

/* The BM25 list: every runner's list merged, sorted, cut to 'want'. A
 * failure reports the lowest segment that failed. */
static enum mt_status lex_merge(struct seg_job *j, size_t t,
                                struct mt_scored **out, size_t *nout,
                                struct mt_error *err)
{
    struct runner *bad = NULL;
    struct mt_scored *all;
    size_t i, n = 0;

    for (i = 0; i < t; i++)
        if (j->run[i].st != MT_OK &&
            (!bad || j->run[i].fail_seg < bad->fail_seg))
            bad = &j->run[i];
    if (bad) {
        if (err)
            *err = bad->err;
        return bad->st;
    }
    all =
        mtx_arena_alloc(&j->idx->scratch, (2 * t * j->want + 1) * sizeof *all);
    if (!all)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    for (i = 0; i < t; i++) {
        memcpy(all + n, j->run[i].all, j->run[i].n * sizeof *all);
        n += j->run[i].n;
    }
    mtx_scored_sort(all, n);
    *out = all;
    *nout = n < j->want ? n : j->want;
    return MT_OK;
}

/* The dense list: every segment's hits in segment order, sorted, cut to
 * 'want'. */
static enum mt_status sem_merge(struct seg_job *j, struct mt_scored **out,
                                size_t *nout, struct mt_error *err)
{
    struct mt_scored *all = mtx_arena_alloc(
        &j->idx->scratch, (j->want * j->nsem + 1) * sizeof *all);
    size_t i, k, n = 0;

    if (!all)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    for (i = 0; i < j->nsem; i++) {
        const struct mt_vec_hit *h = j->vhits + i * j->want;
        if (j->vst[i] != MT_OK)
            return mt_fail(err, j->vst[i], "vector search: %s",
                           mt_status_str(j->vst[i]));
        for (k = 0; k < j->vn[i]; k++) {
            all[n].key = j->idx->segs[i].cids[h[k].id];
            all[n++].score = h[k].score;
        }
    }
    mtx_scored_sort(all, n);
    *out = all;
    *nout = n < j->want ? n : j->want;
    return MT_OK;
}

/* The BM25 list (when there are terms) and the dense list (dense and
 * hybrid) of every segment, each segment's top 'want' merged into the
 * top 'want'. On p->search_threads threads (runners_for), the segments
 * of both lists shared among them; the lists are the one-thread lists,
 * hit for hit, score for score, in the same order. */
static enum mt_status
seg_lists(struct mt_index *idx, const struct mt_str *terms, size_t nq,
          const struct mt_search_params *p, const struct src_set *ss, int meta,
          size_t want, struct mt_scored **lex, size_t *nlex,
          struct mt_scored **sem, size_t *nsem, struct mt_error *err)
{
    struct seg_job j;
    struct mt_bm25_coll coll;
    size_t t;
    enum mt_status st = MT_OK;

    memset(&j, 0, sizeof j);
    j.idx = idx;
    j.terms = terms;
    j.nq = nq;
    j.p = p;
    j.ss = ss;
    j.meta = meta;
    j.want = want;
    j.nlex = p->mode != MT_SEARCH_DENSE && nq > 0 ? idx->nsegs : 0;
    j.nsem = p->mode != MT_SEARCH_BM25 ? idx->nsegs : 0;
    j.sp = mtx_bm25_default_search_params();
    j.sp.k1 = p->k1;
    j.sp.b = p->b;
    j.sp.accept = ss->n || meta ? accept_src : NULL;
    if (j.nlex)
        st = bm25_coll(idx, terms, nq, &coll, &j.sp.coll, err);
    t = runners_for(&j);
    if (t > 1)
        t = ensure_runners(idx, t);
    if (st == MT_OK)
        st = job_alloc(&j, t, err);
    if (st != MT_OK)
        return st;
    run_job(&j, t);
    if (j.nlex)
        st = lex_merge(&j, t, lex, nlex, err);
    if (st == MT_OK && j.nsem)
        st = sem_merge(&j, sem, nsem, err);
    return st;
}

static char *keep(struct result *r, const char *s)
{
    return s ? mtx_arena_strndup(&r->arena, s, strlen(s)) : NULL;
}

/* Adds the chunk behind candidate c to the result; deleted chunks (the
 * index is older than the store) are skipped. With doc_sum, a chunk of a
 * document already listed adds its score to that hit instead. */
static enum mt_status add_hit(struct mt_index *idx, struct result *r,
                              const struct mt_scored *c,
                              const struct mt_search_params *p,
                              struct mt_error *err)
{
    struct mt_chunk_info ci;
    struct mt_search_hit *h;
    size_t i;
    enum mt_status st = mt_store_chunk_get(idx->store, c->key, &ci, err);

    if (st == MT_ENOTFOUND)
        return MT_OK;
    if (st != MT_OK)
        return st;
    for (i = 0; p->doc_sum && i < r->pub.n; i++)
        if (strcmp(r->pub.hits[i].doc_id, ci.doc_id) == 0) {
            r->pub.hits[i].score += c->score;
            return MT_OK;
        }
    h = &r->pub.hits[r->pub.n];
    h->chunk_id = c->key;
    h->score = c->score;
    h->doc_id = keep(r, ci.doc_id);
    h->title = keep(r, ci.title);
    h->text = keep(r, ci.text);
    h->source = keep(r, ci.source);
    if (!h->doc_id || !h->text || !h->source || (ci.title && !h->title))
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    r->pub.n++;
    return MT_OK;
}

static int search_hit_cmp(const void *a, const void *b)
{
    const struct mt_search_hit *x = a;
    const struct mt_search_hit *y = b;

    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->chunk_id > y->chunk_id) - (x->chunk_id < y->chunk_id);
}

/* Hits the first stage keeps: k, or the rerank stage's depth. */
static uint32_t first_stage_k(const struct mt_search_params *p)
{
    return p->rerank_depth > p->k ? p->rerank_depth : p->k;
}

/* Rescores the hits with the caller's cross-encoder. */
static enum mt_status rerank(struct result *r, const char *query,
                             const struct mt_search_params *p,
                             struct mt_error *err)
{
    size_t n = r->pub.n, i;
    const char **texts = mtx_arena_alloc(&r->arena, (n + 1) * sizeof *texts);
    size_t *lens = mtx_arena_alloc(&r->arena, (n + 1) * sizeof *lens);
    float *scores = mtx_arena_alloc(&r->arena, (n + 1) * sizeof *scores);
    enum mt_status st;

    if (!texts || !lens || !scores)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    for (i = 0; i < n; i++) {
        texts[i] = r->pub.hits[i].text;
        lens[i] = strlen(texts[i]);
    }
    st = p->rerank(p->rerank_user, query, texts, lens, n, scores, err);
    for (i = 0; st == MT_OK && i < n; i++)
        r->pub.hits[i].score = scores[i];
    if (st == MT_OK && n > 1)
        qsort(r->pub.hits, n, sizeof *r->pub.hits, search_hit_cmp);
    return st;
}

/* Reads the candidates' chunks from the store, in order, until 'keep'
 * live hits (all of them with doc sums, then sorted by their sums);
 * *used: how many candidates that took. */
static enum mt_status collect_hits(struct mt_index *idx, struct result *r,
                                   const struct mt_scored *c, size_t n,
                                   const struct mt_search_params *p,
                                   size_t *used, struct mt_error *err)
{
    uint32_t keep = first_stage_k(p);
    size_t i;
    enum mt_status st = MT_OK;

    mtx_arena_reset(&r->arena); /* a second pass drops the first's hits */
    r->pub.n = 0;
    r->pub.hits = mtx_arena_alloc(&r->arena, (n + 1) * sizeof *r->pub.hits);
    if (!r->pub.hits)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    /* One snapshot for all the hits' reads, not one per statement. */
    st = mt_store_begin_read(idx->store, err);
    for (i = 0; st == MT_OK && i < n && (p->doc_sum || r->pub.n < keep); i++)
        st = add_hit(idx, r, &c[i], p, err);
    *used = i;
    if (st == MT_OK)
        st = mt_store_commit(idx->store, err);
    else
        mt_store_rollback(idx->store);
    if (p->doc_sum && r->pub.n > 1)
        qsort(r->pub.hits, r->pub.n, sizeof *r->pub.hits, search_hit_cmp);
    if (r->pub.n > keep)
        r->pub.n = keep;
    return st;
}

/* The rerank stage, then the top k ranked. */
static enum mt_status finish_hits(struct result *r, const char *query,
                                  const struct mt_search_params *p,
                                  struct mt_error *err)
{
    size_t i;
    enum mt_status st = MT_OK;

    if (p->rerank_depth && p->rerank && r->pub.n)
        st = rerank(r, query, p, err);
    if (r->pub.n > p->k)
        r->pub.n = p->k;
    for (i = 0; i < r->pub.n; i++)
        r->pub.hits[i].rank = (uint32_t)(i + 1);
    return st;
}

static enum mt_status check_params(const struct mt_search_params *p,
                                   struct mt_error *err)
{
    if (p->k == 0 || p->k > 10000)
        return mt_fail(err, MT_EINVAL, "k must be in 1..10000, not %u", p->k);
    if ((unsigned)p->mode > MT_SEARCH_HYBRID)
        return mt_fail(err, MT_EINVAL, "unknown search mode");
    if (p->retrieve_k > 100000 || p->rerank_depth > 10000 ||
        p->fusion_depth > 100000)
        return mt_fail(err, MT_EINVAL,
                       "retrieve depth %u, rerank depth %u or fusion "
                       "depth %u is too large (100000, 10000, 100000)",
                       p->retrieve_k, p->rerank_depth, p->fusion_depth);
    return MT_OK;
}

/* The store ids of p's source and sources[]; a name the store does not
 * know fails (MT_ENOTFOUND). */
static enum mt_status source_ids(struct mt_index *idx,
                                 const struct mt_search_params *p,
                                 struct src_set *ss, struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t i;

    ss->n = 0;
    if (p->nsources > MT_SEARCH_MAX_SOURCES)
        return mt_fail(err, MT_EINVAL, "at most %d sources, not %zu",
                       MT_SEARCH_MAX_SOURCES, p->nsources);
    if (p->source)
        st = mt_store_source_find(idx->store, p->source, &ss->id[ss->n++], err);
    for (i = 0; st == MT_OK && i < p->nsources; i++)
        st = mt_store_source_find(idx->store, p->sources[i], &ss->id[ss->n++],
                                  err);
    return st;
}

/* Candidate depth: enough for k live hits after deleted chunks are
 * skipped, or the first-stage depth for fusion and doc sums. */
static size_t depth(const struct mt_search_params *p)
{
    size_t want = (size_t)first_stage_k(p) + 16;

    if ((p->doc_sum || p->mode != MT_SEARCH_BM25) && p->retrieve_k > want)
        want = p->retrieve_k;
    return want;
}

/* A plain BM25 top k (no doc sums) asks the segments for k + 1 first:
 * block-max pruning runs with the k-th score as its threshold, and the
 * 16 spare candidates of depth() lower it for every query although they
 * are needed only when the store lost a hit's chunk (BENCHMARKS.md, «1M
 * BM25 public-API overhead»). 0: no such first pass. */
static size_t quick_depth(const struct mt_search_params *p)
{
    if (p->mode != MT_SEARCH_BM25 || p->doc_sum)
        return 0;
    return (size_t)first_stage_k(p) + 1;
}

/* Whether the k + 1 pass's hits are the ones depth() would give. With
 * fewer than k + 1 candidates there was nothing deeper. Otherwise the
 * candidates scoring above the last one are the deep list's first ones
 * in the same order (a segment's list is in double order, the merged one
 * by float score then chunk id: one past the list can tie the last at
 * float precision and sort before it), so the hits are the same when the
 * k-th live one came from them: not when the k-th and (k+1)-th tie, nor
 * when a chunk gone from the store left fewer than k live above it. */
static int quick_pass_ok(const struct result *r, const struct mt_scored *c,
                         size_t nc, size_t want, size_t used)
{
    if (nc < want)
        return 1;
    return r->pub.n == want - 1 && used > 0 &&
           c[used - 1].score > c[want - 1].score;
}

static enum mt_status check_vectors(struct mt_index *idx,
                                    const struct mt_search_params *p,
                                    struct mt_error *err)
{
    if (p->mode == MT_SEARCH_BM25)
        return MT_OK;
    if (!idx->m.embedder[0])
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: the index has no vectors for %s search; build "
                       "them with 'medtrust index --db %s --embedder "
                       "use-lite'",
                       idx->dir, mt_search_mode_str(p->mode), idx->dir);
    if (!p->query_vec || p->query_dims != idx->m.dims)
        return mt_fail(err, MT_EINVAL,
                       "%s search needs the query embedded by %s (%u "
                       "dimensions)",
                       mt_search_mode_str(p->mode), idx->m.embedder,
                       idx->m.dims);
    return MT_OK;
}

/* Fuses the BM25 and dense lists as the params say. */
static enum mt_status
fuse(struct mt_index *idx, const struct mt_search_params *p,
     const struct mt_scored *lex, size_t nlex, const struct mt_scored *sem,
     size_t nsem, struct mt_scored **out, size_t *n, struct mt_error *err)
{
    *out = mtx_arena_alloc(&idx->scratch, (nlex + nsem + 1) * sizeof **out);
    if (!*out)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    if (p->fusion == MT_FUSION_RRF)
        *n = mtx_fuse_rrf(lex, nlex, sem, nsem, p->w_lex, p->w_sem, p->rrf_k,
                          *out);
    else
        *n = mtx_fuse_linear(lex, nlex, sem, nsem, p->w_lex, p->w_sem, *out);
    return MT_OK;
}

static enum mt_status candidates(struct mt_index *idx, const char *query,
                                 const struct mt_search_params *p,
                                 const struct src_set *ss, int meta,
                                 size_t want, struct result *r,
                                 struct mt_scored **c, size_t *nc,
                                 struct mt_error *err)
{
    struct mt_str *terms = NULL;
    struct mt_scored *lex = NULL, *sem = NULL;
    size_t nq = 0, nlex = 0, nsem = 0;
    enum mt_status st = MT_OK;

    if (p->mode != MT_SEARCH_DENSE)
        st = lex_analyse(idx, query, p, &terms, &nq, err);
    r->pub.query_terms = (uint32_t)nq;
    if (st == MT_OK && (nq > 0 || p->mode != MT_SEARCH_BM25))
        st = seg_lists(idx, terms, nq, p, ss, meta, want, &lex, &nlex, &sem,
                       &nsem, err);
    if (st != MT_OK || p->mode != MT_SEARCH_HYBRID) {
        *c = p->mode == MT_SEARCH_DENSE ? sem : lex;
        *nc = p->mode == MT_SEARCH_DENSE ? nsem : nlex;
        return st;
    }
    if (p->fusion_depth && nlex > p->fusion_depth) /* lists are sorted */
        nlex = p->fusion_depth;
    if (p->fusion_depth && nsem > p->fusion_depth)
        nsem = p->fusion_depth;
    return fuse(idx, p, lex, nlex, sem, nsem, c, nc, err);
}

/* Candidates at depth 'want' and their chunks from the store. */
static enum mt_status hits_at(struct mt_index *idx, const char *query,
                              const struct mt_search_params *p,
                              const struct src_set *ss, int meta, size_t want,
                              struct result *r, int *quick_ok,
                              struct mt_error *err)
{
    struct mt_scored *cands = NULL;
    size_t nc = 0, used = 0;
    enum mt_status st =
        candidates(idx, query, p, ss, meta, want, r, &cands, &nc, err);

    if (st == MT_OK && nc > 0)
        st = collect_hits(idx, r, cands, nc, p, &used, err);
    *quick_ok = st == MT_OK && quick_pass_ok(r, cands, nc, want, used);
    return st;
}

static enum mt_status run_search(struct mt_index *idx, const char *query,
                                 const struct mt_search_params *p,
                                 struct result *r, struct mt_error *err)
{
    size_t quick = quick_depth(p);
    struct src_set ss;
    int meta = 0, ok = 0;
    enum mt_status st = check_params(p, err);

    if (st == MT_OK)
        st = check_vectors(idx, p, err);
    if (st == MT_OK)
        st = source_ids(idx, p, &ss, err);
    if (st == MT_OK)
        st = mtx_meta_filter_get(&idx->filter, idx->store, p, idx->fsegs,
                                 idx->nsegs, &meta, err);
    if (st == MT_OK && meta && idx->filter.total == 0)
        return MT_OK; /* nothing matches: no hits */
    if (st == MT_OK && quick)
        st = hits_at(idx, query, p, &ss, meta, quick, r, &ok, err);
    if (st == MT_OK && !ok)
        st = hits_at(idx, query, p, &ss, meta, depth(p), r, &ok, err);
    if (st == MT_OK)
        st = finish_hits(r, query, p, err);
    return st;
}

enum mt_status mt_index_search(struct mt_index *idx, const char *query,
                               const struct mt_search_params *params,
                               struct mt_search_result **out,
                               struct mt_error *err)
{
    struct mt_search_params defaults;
    struct result *r = mt_calloc(1, sizeof *r);
    double t0 = mtx_clock_now();
    enum mt_status st;

    if (!r)
        return mt_fail(err, MT_ENOMEM, "search: out of memory");
    if (!params) {
        mt_search_default_params(&defaults);
        params = &defaults;
    }
    r->arena = MT_ARENA_INIT(16 * 1024);
    st = run_search(idx, query ? query : "", params, r, err);
    mtx_arena_reset(&idx->scratch);
    if (st != MT_OK) {
        mt_search_result_free(&r->pub);
        return st;
    }
    r->pub.elapsed_ms = (mtx_clock_now() - t0) * 1e3;
    *out = &r->pub;
    return MT_OK;
}

void mt_search_result_free(struct mt_search_result *res)
{
    struct result *r;

    if (!res)
        return;
    r = (struct result *)(void *)((char *)res - offsetof(struct result, pub));
    mtx_arena_free(&r->arena);
    mt_free(r);
}

const char *mt_index_embedder(const struct mt_index *idx, uint32_t *dims)
{
    if (dims)
        *dims = idx->m.dims;
    return idx->m.embedder;
}

/* A recorded spec into the caller's buffer, whole or refused: a cut spec
 * names another model (and makes every build rebuild the vectors). */
static enum mt_status copy_spec(const char *idir, const char *field,
                                const char *spec, char *buf, size_t n,
                                struct mt_error *err)
{
    if (n == 0 || strlen(spec) >= n)
        return mt_fail(err, MT_ELIMIT,
                       "%s/MANIFEST: the %s spec is %zu bytes, over the "
                       "%zu this caller reads; pass a larger buffer",
                       idir, field, strlen(spec), n ? n - 1 : 0);
    memcpy(buf, spec, strlen(spec) + 1);
    return MT_OK;
}

/* The manifest's "query_embedder" (query set) or "embedder" spec into
 * buf, and its dims into *dims when not NULL. */
static enum mt_status peek(const char *dir, int query, char *buf, size_t n,
                           uint32_t *dims, struct mt_error *err)
{
    struct mt_manifest m;
    char idir[4096];
    int found = 0;
    enum mt_status st;

    mtx_index_dir(dir, idir, sizeof idir);
    st = mtx_manifest_load(idir, &m, &found, err);
    if (st != MT_OK)
        return st;
    st = query
             ? copy_spec(idir, "query_embedder", m.query_embedder, buf, n, err)
             : copy_spec(idir, "embedder", m.embedder, buf, n, err);
    if (dims)
        *dims = m.dims;
    mtx_manifest_free(&m);
    return st;
}

enum mt_status mt_index_peek_query_embedder(const char *dir, char *buf,
                                            size_t n, struct mt_error *err)
{
    return peek(dir, 1, buf, n, NULL, err);
}

enum mt_status mt_index_peek_embedder(const char *dir, char *buf, size_t n,
                                      uint32_t *dims, struct mt_error *err)
{
    return peek(dir, 0, buf, n, dims, err);
}
