/* Unit tests for the search index over a store: fusion, incremental
 * builds and merges, search edge cases, corruption and OOM paths. */
#include "check.h"

#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/fusion.h"
#include "index/segment.h"
#include "text/stopwords.h"
#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/store.h"

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("mt-index");
}

/* lex (1:10, 2:5) and sem (2:0.8, 3:0.4), each divided by its top score:
 * lex 1:1.0 2:0.5, sem 2:1.0 3:0.5; fused 0.7/0.3 -> 1:0.70, 2:0.65,
 * 3:0.15. */
static void test_fusion_linear_matches_hand_computation(void **state)
{
    struct mt_scored lex[] = {{2, 5.0}, {1, 10.0}};
    struct mt_scored sem[] = {{3, 0.4}, {2, 0.8}};
    struct mt_scored out[4];
    size_t n = mtx_fuse_linear(lex, 2, sem, 2, 0.7, 0.3, out);
    (void)state;
    CHECK(n == 3);
    CHECK(out[0].key == 1 && fabs(out[0].score - 0.70) < 1e-12);
    CHECK(out[1].key == 2 && fabs(out[1].score - 0.65) < 1e-12);
    CHECK(out[2].key == 3 && fabs(out[2].score - 0.15) < 1e-12);
}

/* RRF with k 60: lex ranks 1:1 2:2, sem ranks 2:1 3:2. Key 2 gets
 * 1/62 + 1/61; key 1 gets 1/61; key 3 gets 1/62. */
static void test_fusion_rrf_matches_hand_computation(void **state)
{
    struct mt_scored lex[] = {{1, 3.0}, {2, 2.0}};
    struct mt_scored sem[] = {{2, 0.9}, {3, 0.1}};
    struct mt_scored out[4];
    size_t n = mtx_fuse_rrf(lex, 2, sem, 2, 1.0, 1.0, 60, out);
    (void)state;
    CHECK(n == 3);
    CHECK(out[0].key == 2 &&
          fabs(out[0].score - (1.0 / 62 + 1.0 / 61)) < 1e-12);
    CHECK(out[1].key == 1 && fabs(out[1].score - 1.0 / 61) < 1e-12);
    CHECK(out[2].key == 3 && fabs(out[2].score - 1.0 / 62) < 1e-12);
}

static void test_fusion_ignores_list_without_positive_top(void **state)
{
    struct mt_scored lex[] = {{1, 2.0}};
    struct mt_scored sem[] = {{2, -0.5}, {3, 0.0}};
    struct mt_scored out[3];
    size_t n = mtx_fuse_linear(lex, 1, sem, 2, 0.7, 0.3, out);
    (void)state;
    CHECK(n == 1 && out[0].key == 1);
}

static void store_path(char *buf, size_t n, const char *leaf)
{
    snprintf(buf, n, "%s/%s", tmpl, leaf);
}

static void put(struct mt_store *s, const char *src, const char *id,
                const char *title, const char *text)
{
    struct mt_doc d = {id, title, text, strlen(text), NULL};
    int64_t sid = 0;
    CHECK_OK(mt_store_source(s, src, &sid, NULL));
    CHECK_OK(mt_store_put(s, sid, &d, NULL, NULL));
}

static struct mt_index_build_result build(struct mt_store *s)
{
    struct mt_index_build_result r;
    CHECK_OK(mt_index_build(s, NULL, &r, NULL));
    return r;
}

static struct mt_search_result *search(const char *dir, const char *q,
                                       const char *source)
{
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    mt_search_default_params(&p);
    p.source = source;
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    CHECK_OK(mt_index_search(idx, q, &p, &r, NULL));
    mt_index_close(idx);
    return r;
}

static void seed(struct mt_store *s)
{
    put(s, "a", "d1", "Diabetes", "Insulin lowers blood glucose levels.");
    put(s, "a", "d2", "Asthma", "Inhaled steroids reduce airway swelling.");
    put(s, "b", "d3", "Gout", "Uric acid crystals cause joint pain.");
}

static void test_index_incremental_then_merge_on_replace(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index_build_result r;
    struct mt_search_result *res;
    (void)state;
    store_path(dir, sizeof dir, "incr");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    r = build(s);
    CHECK(r.chunks_added == 3 && r.segments == 1);
    r = build(s); /* nothing new */
    CHECK(r.chunks_added == 0 && r.segments == 1);
    put(s, "b", "d4", "Migraine", "Triptans relieve migraine headaches.");
    r = build(s);
    CHECK(r.chunks_added == 1 && r.segments == 2 && !r.merged);
    res = search(dir, "migraine triptans", NULL);
    CHECK(res->n == 1 && strcmp(res->hits[0].doc_id, "d4") == 0);
    mt_search_result_free(res);
    put(s, "a", "d1", "Diabetes", "Metformin is first-line therapy.");
    r = build(s);
    CHECK(r.merged && r.segments == 1 && r.chunks_added == 4);
    res = search(dir, "insulin", NULL);
    CHECK(res->n == 0); /* the replaced text is gone */
    mt_search_result_free(res);
    res = search(dir, "metformin", NULL);
    CHECK(res->n == 1 && strcmp(res->hits[0].doc_id, "d1") == 0);
    mt_search_result_free(res);
    mt_store_close(s);
}

/* 3,000 documents, each with a word of its own ("uniqNNNN") among common
 * ones, so every one can be found again by that word. */
static void seed_many(struct mt_store *s, int n)
{
    char id[16], text[256];
    int i;

    CHECK_OK(mt_store_begin(s, NULL));
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof id, "m%d", i);
        snprintf(text, sizeof text,
                 "uniq%04d patients with fever %d and cough %d were treated "
                 "with drug%d for %d days",
                 i, i % 97, i % 89, i % 211, i % 13);
        put(s, "m", id, NULL, text);
    }
    CHECK_OK(mt_store_commit(s, NULL));
}

static void check_findable(const char *dir, int n)
{
    char q[32];
    int i;

    for (i = 0; i < n; i += 97) {
        struct mt_search_result *res;
        char id[16];
        snprintf(q, sizeof q, "uniq%04d", i);
        snprintf(id, sizeof id, "m%d", i);
        res = search(dir, q, NULL);
        CHECK(res->n == 1 && strcmp(res->hits[0].doc_id, id) == 0);
        mt_search_result_free(res);
    }
}

static struct mt_index_stats index_stats(const char *dir)
{
    struct mt_index *idx = NULL;
    struct mt_index_stats st;
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_index_stats(idx, &st);
    mt_index_close(idx);
    return st;
}

/* A test embedder that fails once it has been asked for 'fail_after'
 * vectors (a build killed part-way). */
struct flaky {
    size_t seen, fail_after;
};

static enum mt_status flaky_embed(void *user, const char *const *texts,
                                  const size_t *lens, size_t n, float *out,
                                  struct mt_error *err)
{
    struct flaky *f = user;
    size_t i;
    (void)texts;
    for (i = 0; i < n; i++) {
        out[i * 4] = 1.0f;
        out[i * 4 + 1] = (float)lens[i];
        out[i * 4 + 2] = 0.5f;
        out[i * 4 + 3] = (float)i;
    }
    f->seen += n;
    if (f->fail_after && f->seen > f->fail_after)
        return mt_fail(err, MT_EIO, "test embedder: gone");
    return MT_OK;
}

/* With a 64 KiB segment limit the builder writes several segments, each
 * chunk in exactly one, and every document is found as with one segment. */
static void test_index_build_splits_segments_at_memory_limit(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index_build_params bp;
    struct mt_index_build_result r;
    struct mt_index_stats st;
    (void)state;
    store_path(dir, sizeof dir, "segs");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed_many(s, 3000);
    mt_index_default_build_params(&bp);
    CHECK(bp.segment_bytes == (uint64_t)2 << 30);
    bp.segment_bytes = 64 << 10;
    CHECK_OK(mt_index_build(s, &bp, &r, NULL));
    CHECK(r.chunks_added == 3000 && r.segments >= 2);
    st = index_stats(dir);
    CHECK(st.segments == r.segments && st.chunks == 3000);
    check_findable(dir, 3000);
    /* One segment without the limit, the same documents found. */
    bp.segment_bytes = 0;
    bp.rebuild = 1;
    CHECK_OK(mt_index_build(s, &bp, &r, NULL));
    CHECK(r.chunks_added == 3000 && r.segments == 1 && r.merged);
    check_findable(dir, 3000);
    mt_store_close(s);
}

/* A new index built in several segments keeps the segments it finished
 * when the build dies; the next build adds only the rest. */
static void test_index_build_resumes_after_last_segment(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index_build_params bp;
    struct mt_index_build_result r;
    struct mt_index_stats st;
    struct flaky f = {0, 2500};
    struct mt_error err;
    (void)state;
    store_path(dir, sizeof dir, "resume");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed_many(s, 3000);
    mt_index_default_build_params(&bp);
    bp.segment_bytes = 64 << 10;
    bp.embedder = "flaky";
    bp.dims = 4;
    bp.embed = flaky_embed;
    bp.embed_user = &f;
    bp.max_segments = 64;
    CHECK(mt_index_build(s, &bp, &r, &err) == MT_EIO);
    st = index_stats(dir);
    CHECK(st.segments >= 1 && st.chunks > 0 && st.chunks < 2600);
    f.fail_after = 0;
    CHECK_OK(mt_index_build(s, &bp, &r, NULL));
    CHECK(!r.merged && r.chunks_added == 3000 - st.chunks);
    st = index_stats(dir);
    CHECK(st.chunks == 3000 && st.segments == r.segments);
    check_findable(dir, 3000);
    mt_store_close(s);
}

static void test_index_search_ranks_and_filters(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_search_result *res;
    (void)state;
    store_path(dir, sizeof dir, "rank");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    put(s, "b", "d5", "Joint pain", "Joint pain has many causes.");
    build(s);
    res = search(dir, "joint pain", NULL);
    CHECK(res->n == 2);
    CHECK(strcmp(res->hits[0].doc_id, "d5") == 0); /* title match */
    CHECK(res->hits[0].rank == 1 && res->hits[1].rank == 2);
    CHECK(res->hits[0].score >= res->hits[1].score);
    CHECK(strcmp(res->hits[0].source, "b") == 0);
    CHECK(strcmp(res->hits[0].title, "Joint pain") == 0);
    mt_search_result_free(res);
    res = search(dir, "joint pain", "a");
    CHECK(res->n == 0);
    mt_search_result_free(res);
    mt_store_close(s);
}

static void test_index_odd_queries_never_fail(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_search_result *res;
    char *big = mt_malloc(100 * 1024 + 1);
    size_t i;
    (void)state;
    store_path(dir, sizeof dir, "odd");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    build(s);
    mt_store_close(s);
    res = search(dir, "", NULL);
    CHECK(res->n == 0);
    mt_search_result_free(res);
    res = search(dir, "the of and is", NULL);
    CHECK(res->n == 0 && res->query_terms == 0);
    mt_search_result_free(res);
    res = search(dir, "\xff\xfe gout \xc3", NULL);
    CHECK(res->n == 1 && strcmp(res->hits[0].doc_id, "d3") == 0);
    mt_search_result_free(res);
    for (i = 0; i < 100 * 1024; i++)
        big[i] = "gout asthma "[i % 12];
    big[100 * 1024] = '\0';
    res = search(dir, big, NULL);
    CHECK(res->n == 2);
    mt_search_result_free(res);
    mt_free(big);
}

static void test_index_reports_clear_errors(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    struct mt_error err;
    (void)state;
    store_path(dir, sizeof dir, "errs");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    CHECK(mt_index_open(dir, &idx, &err) == MT_ENOTFOUND);
    CHECK(strstr(err.msg, "medtrust index") != NULL);
    build(s);
    mt_store_close(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    p.mode = MT_SEARCH_HYBRID;
    CHECK(mt_index_search(idx, "gout", &p, &r, &err) == MT_EUNSUPPORTED);
    CHECK(strstr(err.msg, "--embedder") != NULL);
    mt_search_default_params(&p);
    p.source = "nope";
    CHECK(mt_index_search(idx, "gout", &p, &r, &err) == MT_ENOTFOUND);
    p.source = NULL;
    p.k = 0;
    CHECK(mt_index_search(idx, "gout", &p, &r, &err) == MT_EINVAL);
    CHECK(r == NULL);
    mt_index_close(idx);
}

static void flip_byte(const char *path, long off)
{
    FILE *f = fopen(path, "r+b");
    int c;
    CHECK(f != NULL);
    fseek(f, off, SEEK_SET);
    c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
}

/* Two segments; one is corrupted: it is detected, left out and the other
 * stays searchable. A rebuild restores everything. */
static void test_index_survives_corrupted_segment(void **state)
{
    char dir[128];
    char seg[256];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_index_stats st;
    struct mt_search_result *res;
    struct mt_index_build_params bp;
    (void)state;
    store_path(dir, sizeof dir, "corrupt");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    build(s);
    put(s, "b", "d4", "Migraine", "Triptans relieve migraine headaches.");
    build(s);
    snprintf(seg, sizeof seg, "%s/index/seg-000001.bm25", dir);
    flip_byte(seg, 200);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_index_stats(idx, &st);
    CHECK(st.segments == 1 && st.damaged_segments == 1);
    mt_index_close(idx);
    res = search(dir, "migraine", NULL);
    CHECK(res->n == 1);
    mt_search_result_free(res);
    mt_index_default_build_params(&bp);
    bp.rebuild = 1;
    CHECK_OK(mt_index_build(s, &bp, NULL, NULL));
    res = search(dir, "gout", NULL);
    CHECK(res->n == 1);
    mt_search_result_free(res);
    CHECK(access(seg, F_OK) != 0); /* the old files were collected */
    mt_store_close(s);
}

/* A build that died after writing segment files but before swapping the
 * manifest leaves the old index in force; the next build removes the
 * orphans. */
static void test_index_ignores_and_collects_orphans(void **state)
{
    char dir[128];
    char orphan[256];
    struct mt_store *s = NULL;
    struct mt_search_result *res;
    FILE *f;
    (void)state;
    store_path(dir, sizeof dir, "orphan");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    build(s);
    snprintf(orphan, sizeof orphan, "%s/index/seg-000099.bm25.tmp", dir);
    f = fopen(orphan, "w");
    fputs("half-written", f);
    fclose(f);
    res = search(dir, "gout", NULL);
    CHECK(res->n == 1);
    mt_search_result_free(res);
    put(s, "b", "d9", "Gout", "Colchicine treats gout flares.");
    build(s);
    CHECK(access(orphan, F_OK) != 0);
    mt_store_close(s);
}

static enum mt_status oom_cycle(const char *dir)
{
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_result *r = NULL;
    struct mt_index_build_params bp;
    enum mt_status st = mt_store_open(dir, NULL, &s, NULL);

    mt_index_default_build_params(&bp);
    bp.rebuild = 1;
    bp.threads = 2; /* the analysis threads' failures too, on any machine */
    if (st == MT_OK)
        st = mt_index_build(s, &bp, NULL, NULL);
    mt_store_close(s);
    if (st == MT_OK)
        st = mt_index_open(dir, &idx, NULL);
    if (st == MT_OK)
        st = mt_index_search(idx, "joint pain gout", NULL, &r, NULL);
    if (st == MT_OK && r->n != 1)
        st = MT_EINTERNAL;
    mt_search_result_free(r);
    mt_index_close(idx);
    return st;
}

static void test_index_survives_every_allocation_failure(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    enum mt_status st = MT_ENOMEM;
    long n;
    (void)state;
    store_path(dir, sizeof dir, "oom");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    mt_store_close(s);
    for (n = 0; n < 20000 && st != MT_OK; n++) {
        mt_alloc_fail_after(n);
        st = oom_cycle(dir);
        mt_alloc_fail_reset();
        CHECK(st != MT_EINTERNAL);
    }
    CHECK(st == MT_OK);
    CHECK(n > 20);
}

/* A stand-in cross-encoder: favours shorter passages. */
static enum mt_status by_shortness(void *user, const char *query,
                                   const char *const *texts, const size_t *lens,
                                   size_t n, float *scores,
                                   struct mt_error *err)
{
    size_t i;
    (void)texts;
    (void)err;
    *(size_t *)user = n;
    CHECK(strcmp(query, "pain joint gout") == 0);
    for (i = 0; i < n; i++)
        scores[i] = -(float)lens[i];
    return MT_OK;
}

static void test_index_rerank_stage_reorders_top_r(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    size_t seen = 0;
    (void)state;
    store_path(dir, sizeof dir, "rerank");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    put(s, "b", "d5", "Joint pain",
        "Joint pain has many causes, gout "
        "among them, and a long list of others that doctors consider.");
    put(s, "b", "d6", "Pain", "Pain.");
    build(s);
    mt_store_close(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    p.k = 2;
    p.rerank_depth = 50;
    CHECK_OK(mt_index_search(idx, "pain joint gout", &p, &r, NULL));
    CHECK(r->n == 2); /* no cross-encoder: first-stage order, cut to k */
    CHECK(strcmp(r->hits[0].doc_id, "d5") == 0);
    mt_search_result_free(r);
    p.rerank = by_shortness;
    p.rerank_user = &seen;
    CHECK_OK(mt_index_search(idx, "pain joint gout", &p, &r, NULL));
    CHECK(seen == 3); /* every first-stage hit went to the reranker */
    CHECK(r->n == 2);
    CHECK(strcmp(r->hits[0].doc_id, "d6") == 0);
    CHECK(strcmp(r->hits[1].doc_id, "d3") == 0);
    CHECK(r->hits[0].rank == 1 && r->hits[0].score == -5.0);
    mt_search_result_free(r);
    mt_index_close(idx);
}

/* Documents d00..d29: "gout" and i filler words, so BM25 ranks them in
 * id order (a longer document scores lower); with 'same', one text for
 * all, so every score ties. */
static void put_ranked(struct mt_store *s, int same)
{
    char id[16], text[256];
    int i, j, n;

    for (i = 0; i < 30; i++) {
        snprintf(id, sizeof id, "d%02d", i);
        n = snprintf(text, sizeof text, "gout");
        for (j = 0; j < (same ? 3 : i); j++)
            n += snprintf(text + n, sizeof text - (size_t)n, " filler");
        put(s, "a", id, NULL, text);
    }
}

static struct mt_search_result *top(struct mt_index *idx, uint32_t k)
{
    struct mt_search_params p;
    struct mt_search_result *r = NULL;

    mt_search_default_params(&p);
    p.k = k;
    CHECK_OK(mt_index_search(idx, "gout", &p, &r, NULL));
    return r;
}

static void check_ids(const struct mt_search_result *r, int first, int n)
{
    char id[16];
    int i;

    CHECK(r->n == (size_t)n);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof id, "d%02d", first + i);
        CHECK(strcmp(r->hits[i].doc_id, id) == 0);
        CHECK(r->hits[i].rank == (uint32_t)i + 1);
    }
}

/* A top k first asks the segments for k + 1 hits; chunks deleted from
 * the store since the build send the search back to the full depth, so
 * k live hits still come back (k + 1 alone would give k - 2 here). */
static void test_index_top_k_refills_after_deleted_chunks(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_result *r;
    int64_t sid = 0;
    int i, del = 0;
    (void)state;
    store_path(dir, sizeof dir, "refill");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    put_ranked(s, 0);
    build(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    r = top(idx, 10);
    check_ids(r, 0, 10);
    mt_search_result_free(r);
    CHECK_OK(mt_store_source(s, "a", &sid, NULL));
    for (i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "d%02d", i);
        CHECK_OK(mt_store_delete(s, sid, id, &del, NULL));
        CHECK(del == 1);
    }
    r = top(idx, 10);
    check_ids(r, 3, 10);
    mt_search_result_free(r);
    r = top(idx, 27); /* 30 docs, 3 gone: all that is left */
    check_ids(r, 3, 27);
    mt_search_result_free(r);
    mt_index_close(idx);
    mt_store_close(s);
}

/* Equal scores rank by chunk id, and a top k is the first k of a deeper
 * top k' whether or not the k-th and (k+1)-th tie. */
static void test_index_top_k_ties_rank_by_chunk_id(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_result *r, *deep;
    uint32_t k;
    size_t i;
    (void)state;
    store_path(dir, sizeof dir, "ties");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    put_ranked(s, 1);
    build(s);
    mt_store_close(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    deep = top(idx, 30);
    check_ids(deep, 0, 30);
    for (k = 1; k < 30; k++) {
        r = top(idx, k);
        CHECK(r->n == k);
        for (i = 0; i < k; i++) {
            CHECK(r->hits[i].chunk_id == deep->hits[i].chunk_id);
            CHECK(r->hits[i].score == deep->hits[i].score);
        }
        mt_search_result_free(r);
    }
    mt_search_result_free(deep);
    mt_index_close(idx);
}

static void put_meta(struct mt_store *s, const char *id, const char *meta)
{
    struct mt_doc d = {id, "Trial", "aspirin trial outcome", 21, meta};
    int64_t sid = 0;
    CHECK_OK(mt_store_source(s, "pm", &sid, NULL));
    CHECK_OK(mt_store_put(s, sid, &d, NULL, NULL));
}

static void test_index_metadata_filter_keeps_range(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    (void)state;
    store_path(dir, sizeof dir, "meta");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    put_meta(s, "y2001", "{\"year\":2001}");
    put_meta(s, "y2012", "{\"year\":2012}");
    put_meta(s, "y2015s", "{\"year\":\"2015\"}");
    put_meta(s, "none", "{\"mesh\":[\"x\"]}");
    put_meta(s, "junk", "{\"year\":\"soon\"}");
    build(s);
    mt_store_close(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    p.filter_key = "year";
    p.filter_min = 2010;
    p.filter_max = 2015;
    CHECK_OK(mt_index_search(idx, "aspirin", &p, &r, NULL));
    CHECK(r->n == 2);
    CHECK(strncmp(r->hits[0].doc_id, "y201", 4) == 0);
    CHECK(strncmp(r->hits[1].doc_id, "y201", 4) == 0);
    mt_search_result_free(r);
    p.filter_min = 1990;
    CHECK_OK(mt_index_search(idx, "aspirin", &p, &r, NULL));
    CHECK(r->n == 3); /* no year or a non-numeric one: left out */
    mt_search_result_free(r);
    mt_index_close(idx);
}

/* 400 documents by "Smith" that say "aspirin" three times and 3 by
 * "Jane Doe" (in The Lancet, a trial) that say it once, so the filtered
 * documents rank below every other: a first stage cut at its usual depth
 * and post-filtered would come back short. Each text ends with its
 * number, which the test embedder turns into the vector's angle. */
static void seed_authors(struct mt_store *s)
{
    char id[32], text[128], meta[160];
    int64_t sid = 0;
    int i;

    CHECK_OK(mt_store_source(s, "pm", &sid, NULL));
    for (i = 0; i < 403; i++) {
        struct mt_doc d = {id, "Trial", text, 0, meta};
        int doe = i >= 400;
        snprintf(id, sizeof id, "%s%d", doe ? "doe" : "smith", i);
        snprintf(text, sizeof text, "%s outcome %d",
                 doe ? "aspirin" : "aspirin aspirin aspirin", i);
        snprintf(meta, sizeof meta,
                 "{\"authors\":[\"A Smith\",\"%s\"],\"journal\":\"%s\","
                 "\"publication_types\":[\"%s\"],\"year\":\"%d\"}",
                 doe ? "Jane Doe" : "Bo Li", doe ? "The Lancet" : "BMJ",
                 doe ? "Randomized Controlled Trial" : "Review",
                 doe ? 2020 : 2000);
        d.text_len = strlen(text);
        CHECK_OK(mt_store_put(s, sid, &d, NULL, NULL));
    }
}

/* 8 dimensions: document n points at angle n / 300 from the query's
 * axis, so the Doe documents (400..402) are the farthest. */
static enum mt_status angle_embed(void *user, const char *const *texts,
                                  const size_t *lens, size_t n, float *out,
                                  struct mt_error *err)
{
    size_t i, j;

    (void)user;
    (void)err;
    for (i = 0; i < n; i++) {
        char buf[256];
        const char *sp;
        double a;
        snprintf(buf, sizeof buf, "%.*s", (int)lens[i], texts[i]);
        sp = strrchr(buf, ' ');
        a = sp ? atof(sp + 1) / 300.0 : 0.0;
        for (j = 0; j < 8; j++)
            out[i * 8 + j] = 0.0f;
        out[i * 8] = (float)cos(a);
        out[i * 8 + 1] = (float)sin(a);
    }
    return MT_OK;
}

/* seed_authors' documents with angle_embed vectors kept as 'vs', in a
 * graph from hnsw_min vectors on. */
static void build_angles(const char *dir, enum mt_vec_store vs,
                         uint32_t hnsw_min)
{
    struct mt_store *s = NULL;
    struct mt_index_build_params bp;

    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed_authors(s);
    mt_index_default_build_params(&bp);
    bp.embedder = "angle";
    bp.dims = 8;
    bp.embed = angle_embed;
    bp.vec_store = vs;
    bp.hnsw_min = hnsw_min;
    bp.hnsw_threads = 1; /* the serial build: the same graph every run */
    CHECK_OK(mt_index_build(s, &bp, NULL, NULL));
    mt_store_close(s);
}

static void build_authors(const char *dir)
{
    /* a graph, so the selective filter goes exact */
    build_angles(dir, MT_VEC_STORE_RESIDUAL, 50);
}

/* Where section id of the segment file at path starts (its table:
 * header u64 at 24, count u32 at 32; 32-byte entries of u32 id, u64
 * offset at 8, u64 size at 16; src/index/segment.h); its size in *size. */
static long section_of(const char *path, uint32_t id, long *size)
{
    unsigned char e[32];
    uint64_t toff = 0, off = 0, n64 = 0;
    uint32_t n = 0, got = 0, i;
    FILE *f = fopen(path, "rb");
    long at = -1;

    CHECK(f != NULL);
    CHECK(fseek(f, 24, SEEK_SET) == 0 && fread(&toff, 8, 1, f) == 1);
    CHECK(fread(&n, 4, 1, f) == 1);
    for (i = 0; i < n && at < 0; i++) {
        CHECK(fseek(f, (long)(toff + 32u * i), SEEK_SET) == 0);
        CHECK(fread(e, sizeof e, 1, f) == 1);
        memcpy(&got, e, 4);
        memcpy(&off, e + 8, 8);
        memcpy(&n64, e + 16, 8);
        if (got == id) {
            at = (long)off;
            *size = (long)n64;
        }
    }
    fclose(f);
    CHECK(at > 0 && *size > 0);
    return at;
}

static uint64_t check_done, check_total;

static void on_check(uint64_t done, uint64_t total, void *user)
{
    (void)user;
    CHECK(done > check_done && done <= total);
    check_done = done;
    check_total = total;
}

/* Opening reads the tables; the postings' and the vectors' checksums
 * are left to mt_index_check, which reads every byte, reports the
 * bytes as it goes and names the damaged file and section. */
static void test_index_check_reads_what_open_leaves(void **state)
{
    char dir[128], bm[256], hn[256];
    struct mt_index *idx = NULL;
    struct mt_index_stats st;
    struct mt_search_result *r = NULL;
    struct mt_error err;
    long at, size;
    (void)state;
    store_path(dir, sizeof dir, "check");
    build_angles(dir, MT_VEC_STORE_RESIDUAL, 50);
    snprintf(bm, sizeof bm, "%s/index/seg-000001.bm25", dir);
    snprintf(hn, sizeof hn, "%s/index/seg-000001.hnsw", dir);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    check_done = check_total = 0;
    CHECK_OK(mt_index_check(idx, on_check, NULL, NULL));
    CHECK(check_total > 0 && check_done == check_total);
    CHECK_OK(mt_index_check(idx, NULL, NULL, NULL));
    mt_index_close(idx);

    at = section_of(hn, MT_SEG_ID('V', 'C', 'O', 'D'), &size);
    flip_byte(hn, at + size / 2);
    CHECK_OK(mt_index_open(dir, &idx, NULL)); /* the open does not read it */
    mt_index_stats(idx, &st);
    CHECK(st.segments == 1 && st.damaged_segments == 0);
    CHECK(mt_index_check(idx, NULL, NULL, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "1 of 1 segments damaged") != NULL);
    CHECK(strstr(err.msg, "seg-000001.hnsw: section 'VCOD' checksum "
                          "mismatch") != NULL);
    CHECK(strstr(err.msg, "--rebuild") != NULL);
    mt_index_close(idx);

    at = section_of(bm, MT_SEG_ID('P', 'O', 'S', 'T'), &size);
    flip_byte(bm, at + size / 2);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    CHECK_OK(mt_index_search(idx, "aspirin", NULL, &r, NULL));
    mt_search_result_free(r);
    CHECK(mt_index_check(idx, NULL, NULL, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "seg-000001.bm25: section 'POST' checksum "
                          "mismatch") != NULL);
    mt_index_close(idx);

    at = section_of(bm, MT_SEG_ID('T', 'E', 'R', 'M'), &size);
    flip_byte(bm, at + size / 2); /* a table: refused at open, left out */
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_index_stats(idx, &st);
    CHECK(st.segments == 0 && st.damaged_segments == 1);
    CHECK(mt_index_check(idx, NULL, NULL, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "1 segments were left out") != NULL);
    mt_index_close(idx);
}

static int all_doe(const struct mt_search_result *r)
{
    size_t i;

    for (i = 0; i < r->n; i++)
        if (strncmp(r->hits[i].doc_id, "doe", 3) != 0)
            return 0;
    return 1;
}

static void search_meta(struct mt_index *idx, enum mt_search_mode mode,
                        const struct mt_meta_cond *c, size_t n, size_t want)
{
    static const float q[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    struct mt_search_params p;
    struct mt_search_result *r = NULL;

    mt_search_default_params(&p);
    p.mode = mode;
    p.k = 3;
    p.meta = c;
    p.nmeta = n;
    p.query_vec = q;
    p.query_dims = 8;
    CHECK_OK(mt_index_search(idx, "aspirin", &p, &r, NULL));
    CHECK(r->n == want);
    CHECK(all_doe(r));
    mt_search_result_free(r);
}

static void test_index_metadata_filters_search_inside_first_stage(void **s)
{
    char dir[128];
    struct mt_index *idx = NULL;
    struct mt_meta_cond author = {"authors", "jane DOE", 0, 0};
    struct mt_meta_cond both[3] = {{"journal", "lancet", 0, 0},
                                   {"publication_types", "randomized", 0, 0},
                                   {"year", NULL, 2019, 2021}};
    struct mt_meta_cond none[2] = {{"journal", "lancet", 0, 0},
                                   {"authors", "Bo Li", 0, 0}};
    (void)s;
    store_path(dir, sizeof dir, "authors");
    build_authors(dir);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    /* all three come back in every mode, though 400 others rank higher */
    search_meta(idx, MT_SEARCH_BM25, &author, 1, 3);
    search_meta(idx, MT_SEARCH_DENSE, &author, 1, 3);
    search_meta(idx, MT_SEARCH_HYBRID, &author, 1, 3);
    search_meta(idx, MT_SEARCH_BM25, both, 3, 3); /* conditions AND */
    search_meta(idx, MT_SEARCH_HYBRID, both, 3, 3);
    search_meta(idx, MT_SEARCH_HYBRID, none, 2, 0);
    search_meta(idx, MT_SEARCH_BM25, &author, 1, 3); /* the kept filter */
    mt_index_close(idx);
}

/* --fusion-depth: each hybrid list is cut to its first N chunks before
 * fusion (VerifAI fuses the top 10 of each), so the fused union holds at
 * most 2N candidates; without it, the lists are the first stage's 50. */
static void test_index_fusion_depth_cuts_each_list(void **s)
{
    static const float q[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    char dir[128];
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    (void)s;
    store_path(dir, sizeof dir, "fusion");
    build_angles(dir, MT_VEC_STORE_FLOAT, 100000); /* flat: exact lists */
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    p.mode = MT_SEARCH_HYBRID;
    p.k = 10;
    p.query_vec = q;
    p.query_dims = 8;
    CHECK_OK(mt_index_search(idx, "aspirin", &p, &r, NULL));
    CHECK(r->n == 10);
    mt_search_result_free(r);
    p.fusion_depth = 2;
    CHECK_OK(mt_index_search(idx, "aspirin", &p, &r, NULL));
    CHECK(r->n >= 2 && r->n <= 4);
    /* dense's first (smith0, on the query's axis) is fused in */
    CHECK(strcmp(r->hits[0].doc_id, "smith0") == 0);
    mt_search_result_free(r);
    p.fusion_depth = 100001;
    CHECK(mt_index_search(idx, "aspirin", &p, &r, NULL) == MT_EINVAL);
    mt_index_close(idx);
}

/* NLTK's English stop words (VerifAI's query parser) as published: 179
 * words, and a lexical query drops them only when asked ("what" and
 * "during" are not in Lucene's 33). */
static void test_index_nltk_stopwords_for_lexical_queries(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    char *f;
    size_t i;
    (void)state;
    CHECK(mtx_nltk_english_count() == 179);
    for (i = 1; i < mtx_nltk_english_count(); i++)
        CHECK(strcmp(mtx_nltk_english_word(i - 1), mtx_nltk_english_word(i)) <
              0);
    CHECK(mtx_nltk_english_stop("mightn't", 8));
    CHECK(mtx_nltk_english_stop("should've", 9));
    CHECK(!mtx_nltk_english_stop("gout", 4));
    f = mtx_drop_nltk_stopwords("What causes GOUT during the night?  Why");
    CHECK(f && strcmp(f, "causes GOUT night?") == 0);
    mt_free(f);
    store_path(dir, sizeof dir, "nltk");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    build(s);
    mt_store_close(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    CHECK_OK(mt_index_search(idx, "what about gout during", &p, &r, NULL));
    CHECK(r->query_terms == 4 && r->n == 1);
    mt_search_result_free(r);
    p.nltk_stopwords = 1;
    CHECK_OK(mt_index_search(idx, "what about gout during", &p, &r, NULL));
    CHECK(r->query_terms == 1 && r->n == 1);
    CHECK(strcmp(r->hits[0].doc_id, "d3") == 0);
    mt_search_result_free(r);
    mt_index_close(idx);
}

/* Several sources are one search over their union (what a check with
 * several --source filters runs): hits of any of them, k in all, and
 * 'source' joins 'sources'; an unknown name or too many are refused. */
static void test_index_sources_search_their_union(void **state)
{
    static const char *const ab[] = {"a", "b"};
    static const char *const a_only[] = {"a"};
    static const char *const many[17] = {"a"};
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    size_t i;
    (void)state;
    store_path(dir, sizeof dir, "union");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    seed(s);
    put(s, "c", "d4", "Gout", "Gout flares and asthma attacks at night.");
    build(s);
    mt_store_close(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    p.sources = ab;
    p.nsources = 2;
    CHECK_OK(mt_index_search(idx, "gout asthma", &p, &r, NULL));
    CHECK(r->n == 2);
    for (i = 0; i < r->n; i++)
        CHECK(strcmp(r->hits[i].doc_id, "d4") != 0);
    mt_search_result_free(r);
    p.k = 1;
    CHECK_OK(mt_index_search(idx, "gout asthma", &p, &r, NULL));
    CHECK(r->n == 1); /* k over the union, not k per source */
    mt_search_result_free(r);
    p.k = 10;
    p.source = "c";
    p.sources = a_only;
    p.nsources = 1;
    CHECK_OK(mt_index_search(idx, "gout asthma", &p, &r, NULL));
    CHECK(r->n == 2 && strcmp(r->hits[0].doc_id, "d4") == 0);
    CHECK(strcmp(r->hits[1].doc_id, "d2") == 0);
    mt_search_result_free(r);
    p.source = "nope";
    CHECK(mt_index_search(idx, "gout", &p, &r, NULL) == MT_ENOTFOUND);
    p.source = NULL;
    p.sources = many;
    p.nsources = 17;
    CHECK(mt_index_search(idx, "gout", &p, &r, NULL) == MT_EINVAL);
    mt_index_close(idx);
}

static void test_index_metadata_filter_refuses_bad_key(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    struct mt_meta_cond bad = {"a'b", "x", 0, 0};
    struct mt_error err;
    (void)state;
    store_path(dir, sizeof dir, "badkey");
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    put_meta(s, "x", "{\"journal\":\"BMJ\"}");
    build(s);
    mt_store_close(s);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    p.meta = &bad;
    p.nmeta = 1;
    CHECK(mt_index_search(idx, "aspirin", &p, &r, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "a'b") != NULL);
    mt_index_close(idx);
}

/* Bytes of the index's vector files (*.vec, *.hnsw) under store 'dir'. */
static long vector_bytes(const char *dir)
{
    char idir[256], path[512];
    struct dirent *e;
    struct stat st;
    long total = 0;
    DIR *d;

    snprintf(idir, sizeof idir, "%s/index", dir);
    d = opendir(idir);
    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".vec") && strcmp(dot, ".hnsw")))
            continue;
        snprintf(path, sizeof path, "%s/%s", idir, e->d_name);
        CHECK(stat(path, &st) == 0);
        total += (long)st.st_size;
    }
    closedir(d);
    return total;
}

/* Builds seed_authors' 403 documents with vector store 'vs' (a graph when
 * graph, else flat) and returns the dense top 5 for a query at angle
 * 150.25 / 300 from the first axis: documents 150, 151, 149, 152, 148 by
 * exact cosine, whose scores differ by 3e-6 to 1e-5, far below the int8
 * codes' error (about 2e-3 here) and the residual's (about 1e-4). */
static void store_top5(const char *leaf, enum mt_vec_store vs, int graph,
                       char out[5][32], long *bytes)
{
    char dir[128];
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    float q[8] = {0};
    size_t i;

    store_path(dir, sizeof dir, leaf);
    build_angles(dir, vs, graph ? 50 : 100000);
    q[0] = (float)cos(150.25 / 300.0);
    q[1] = (float)sin(150.25 / 300.0);
    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    p.mode = MT_SEARCH_DENSE;
    p.k = 5;
    p.query_vec = q;
    p.query_dims = 8;
    CHECK_OK(mt_index_search(idx, "", &p, &r, NULL));
    CHECK(r->n == 5);
    for (i = 0; i < 5; i++)
        snprintf(out[i], 32, "%s", r->hits[i].doc_id);
    mt_search_result_free(r);
    mt_index_close(idx);
    *bytes = vector_bytes(dir);
}

static void test_index_vector_stores_trade_bytes_for_precision(void **state)
{
    static const char *const exact[5] = {"smith150", "smith151", "smith149",
                                         "smith152", "smith148"};
    static const char *const leaves[2][3] = {{"vs-r", "vs-i", "vs-f"},
                                             {"vg-r", "vg-i", "vg-f"}};
    char top[3][5][32];
    long bytes[3];
    enum mt_vec_store kind = MT_VEC_STORE_RESIDUAL;
    int graph, k, i;
    (void)state;
    for (graph = 0; graph < 2; graph++) {
        for (k = 0; k < 3; k++)
            store_top5(leaves[graph][k], (enum mt_vec_store)k, graph, top[k],
                       &bytes[k]);
        /* float32 re-scores exactly: the true order, flat and graph */
        for (i = 0; i < 5; i++)
            CHECK(strcmp(top[MT_VEC_STORE_FLOAT][i], exact[i]) == 0);
        /* per vector of 8 dimensions: codes 8 bytes, residual 4, floats
         * 32 (section padding aside) */
        CHECK(bytes[MT_VEC_STORE_INT8] + 403 * 4 <=
              bytes[MT_VEC_STORE_RESIDUAL]);
        CHECK(bytes[MT_VEC_STORE_INT8] + 403 * 32 <= bytes[MT_VEC_STORE_FLOAT]);
        CHECK(bytes[MT_VEC_STORE_FLOAT] <
              bytes[MT_VEC_STORE_INT8] + 403 * 32 + 4096);
    }
    /* the quantised stores cannot tell these neighbours apart: neither
     * gives the exact order (they still find the right neighbourhood) */
    CHECK(strcmp(top[MT_VEC_STORE_INT8][0], exact[0]) != 0 ||
          strcmp(top[MT_VEC_STORE_INT8][1], exact[1]) != 0 ||
          strcmp(top[MT_VEC_STORE_INT8][2], exact[2]) != 0);
    for (i = 0; i < 5; i++)
        CHECK(abs(atoi(top[MT_VEC_STORE_RESIDUAL][i] + 5) - 150) <= 8);
    CHECK_OK(mt_vec_store_parse("float32", &kind));
    CHECK(kind == MT_VEC_STORE_FLOAT);
    CHECK(mt_vec_store_parse("f32", &kind) == MT_EINVAL);
    CHECK(strcmp(mt_vec_store_str(MT_VEC_STORE_INT8), "int8") == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fusion_linear_matches_hand_computation),
        cmocka_unit_test(test_fusion_rrf_matches_hand_computation),
        cmocka_unit_test(test_fusion_ignores_list_without_positive_top),
        cmocka_unit_test(test_index_incremental_then_merge_on_replace),
        cmocka_unit_test(test_index_search_ranks_and_filters),
        cmocka_unit_test(test_index_odd_queries_never_fail),
        cmocka_unit_test(test_index_reports_clear_errors),
        cmocka_unit_test(test_index_survives_corrupted_segment),
        cmocka_unit_test(test_index_check_reads_what_open_leaves),
        cmocka_unit_test(test_index_ignores_and_collects_orphans),
        cmocka_unit_test(test_index_survives_every_allocation_failure),
        cmocka_unit_test(test_index_rerank_stage_reorders_top_r),
        cmocka_unit_test(test_index_top_k_refills_after_deleted_chunks),
        cmocka_unit_test(test_index_top_k_ties_rank_by_chunk_id),
        cmocka_unit_test(test_index_metadata_filter_keeps_range),
        cmocka_unit_test(test_index_metadata_filters_search_inside_first_stage),
        cmocka_unit_test(test_index_fusion_depth_cuts_each_list),
        cmocka_unit_test(test_index_nltk_stopwords_for_lexical_queries),
        cmocka_unit_test(test_index_sources_search_their_union),
        cmocka_unit_test(test_index_metadata_filter_refuses_bad_key),
        cmocka_unit_test(test_index_vector_stores_trade_bytes_for_precision),
        cmocka_unit_test(test_index_build_splits_segments_at_memory_limit),
        cmocka_unit_test(test_index_build_resumes_after_last_segment),
    };
    return cmocka_run_group_tests_name("index", tests, setup, teardown);
}
