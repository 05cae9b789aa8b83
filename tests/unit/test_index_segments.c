/* Unit tests for searching an index of several segments: the same store
 * indexed as one segment and as many (split by the memory limit, or
 * appended by later builds) ranks and scores every search alike. */
#include "check.h"

#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "medtrust/index.h"
#include "medtrust/store.h"

#define DIMS 8
#define NDOCS 1800

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("mt-isegs");
}

/* ==== A corpus whose term statistics differ from part to part ==== */

static const char *const vocab[] = {
    "fever",    "cough",   "insulin",  "glucose",  "asthma",    "steroid",
    "migraine", "triptan", "aspirin",  "stroke",   "renal",     "dialysis",
    "statin",   "lipid",   "sepsis",   "lactate",  "anemia",    "iron",
    "vaccine",  "measles", "tumor",    "biopsy",   "opioid",    "naloxone",
    "thyroid",  "goiter",  "warfarin", "bleeding", "asthmatic", "child",
    "elderly",  "trial",   "placebo",  "cohort",   "dose",      "outcome",
};
#define NVOCAB (sizeof vocab / sizeof *vocab)

/* A deterministic generator (the corpus is the same every run). */
static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffffu;
}

/* Document i's text: 4 to 60 words whose mix drifts with i, so the early,
 * middle and late documents (the segments) hold each term in different
 * proportions and have different mean lengths. */
static void doc_text(int i, char *buf, size_t n)
{
    uint32_t s = (uint32_t)i * 2654435761u + 7u;
    uint32_t words = 4 + lcg(&s) % (i < NDOCS / 2 ? 20u : 57u);
    size_t len = 0;

    buf[0] = '\0';
    for (uint32_t w = 0; w < words && len + 16 < n; w++) {
        uint32_t r = lcg(&s);
        size_t v = (r % 3 == 0) ? ((size_t)(i * 7 / NDOCS) + r % 5) % NVOCAB
                                : (size_t)(r % NVOCAB);
        len += (size_t)snprintf(buf + len, n - len, "%s%s", w ? " " : "",
                                vocab[v]);
    }
}

static void seed(struct mt_store *s, int from, int to)
{
    char id[16], title[64], text[1024], meta[64];
    int64_t sid[2];
    int i;

    CHECK_OK(mt_store_source(s, "pubmed", &sid[0], NULL));
    CHECK_OK(mt_store_source(s, "medquad", &sid[1], NULL));
    CHECK_OK(mt_store_begin(s, NULL));
    for (i = from; i < to; i++) {
        struct mt_doc d = {id, i % 3 ? NULL : title, text, 0, meta};
        snprintf(id, sizeof id, "d%d", i);
        snprintf(title, sizeof title, "%s %s", vocab[(size_t)i % NVOCAB],
                 vocab[(size_t)(i / 3) % NVOCAB]);
        doc_text(i, text, sizeof text);
        snprintf(meta, sizeof meta, "{\"year\":%d}", 1990 + i % 30);
        d.text_len = strlen(text);
        CHECK_OK(mt_store_put(s, sid[i % 5 == 0], &d, NULL, NULL));
    }
    CHECK_OK(mt_store_commit(s, NULL));
}

/* Bag-of-words vectors: each word adds to two of the 8 dimensions. */
static void embed_one(const char *t, size_t n, float *out)
{
    uint32_t h = 2166136261u;
    size_t i;

    memset(out, 0, DIMS * sizeof *out);
    for (i = 0; i <= n; i++) {
        if (i < n && t[i] != ' ' && t[i] != '.') {
            h = (h ^ (uint8_t)t[i]) * 16777619u;
            continue;
        }
        if (h != 2166136261u) {
            out[h % DIMS] += 1.0f;
            out[(h >> 8) % DIMS] += 0.5f;
        }
        h = 2166136261u;
    }
}

/* The embedder's count of texts, and a failure once it passes fail_after
 * (0: never), to kill a build part-way. */
struct bow {
    size_t seen, fail_after;
};

static enum mt_status bow_embed(void *user, const char *const *texts,
                                const size_t *lens, size_t n, float *out,
                                struct mt_error *err)
{
    struct bow *b = user;
    size_t i;

    for (i = 0; i < n; i++)
        embed_one(texts[i], lens[i], out + i * DIMS);
    b->seen += n;
    if (b->fail_after && b->seen > b->fail_after)
        return mt_fail(err, MT_EIO, "test embedder: gone");
    return MT_OK;
}

/* How a test index is built: a build after the documents up to each
 * cut (the last is NDOCS), each segment at most seg_bytes (0: one per
 * build), at most max_segments (0: 64) before a merge. */
struct spec {
    const int *cuts;
    size_t ncuts;
    uint64_t seg_bytes;
    int float_norms;
    uint32_t max_segments;
    uint32_t threads; /* analysis threads (0: one per online core) */
};

static void build_params(struct mt_index_build_params *bp,
                         const struct spec *sp, struct bow *e)
{
    mt_index_default_build_params(bp);
    bp->embedder = "bow";
    bp->dims = DIMS;
    bp->embed = bow_embed;
    bp->embed_user = e;
    /* Codes alone: a flat scan is then exact whatever the segments. (The
     * int8r and float32 stores re-score each segment's best max(4k, 64)
     * codes, so more segments re-score more candidates: not a question of
     * collection statistics.) */
    bp->vec_store = MT_VEC_STORE_INT8;
    bp->segment_bytes = sp->seg_bytes;
    bp->bm25_float_norms = sp->float_norms;
    bp->max_segments = sp->max_segments ? sp->max_segments : 64;
    bp->threads = sp->threads;
}

/* Builds the store at 'leaf' as sp says; no build rewrites the whole
 * index, and none keeps more than max_segments segments unless their
 * merges would pass seg_bytes. Returns the last build's result. */
static struct mt_index_build_result
make_spec(const char *leaf, const struct spec *sp, char *dir, size_t n)
{
    struct mt_store *s = NULL;
    struct mt_index_build_params bp;
    struct mt_index_build_result r;
    struct bow e = {0, 0};
    size_t i;

    snprintf(dir, n, "%s/%s", tmpl, leaf);
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    build_params(&bp, sp, &e);
    for (i = 0; i < sp->ncuts; i++) {
        seed(s, i ? sp->cuts[i - 1] : 0, sp->cuts[i]);
        CHECK_OK(mt_index_build(s, &bp, &r, NULL));
        CHECK(!r.merged || i == 0); /* the first one is "rebuilt" */
        CHECK(sp->seg_bytes || r.segments <= bp.max_segments);
    }
    mt_store_close(s);
    return r;
}

/* 'parts' equal batches. */
static uint32_t make_index(const char *leaf, int parts, uint64_t seg_bytes,
                           int float_norms, char *dir, size_t n)
{
    int cuts[8];
    struct spec sp = {cuts, (size_t)parts, seg_bytes, float_norms, 0, 0};
    int p;

    for (p = 0; p < parts; p++)
        cuts[p] = NDOCS * (p + 1) / parts;
    return make_spec(leaf, &sp, dir, n).segments;
}

/* ==== Comparing searches ==== */

struct query {
    const char *text;
    enum mt_search_mode mode;
    enum mt_fusion fusion;
    uint32_t k;
    int doc_sum;
    const char *source;
    int years; /* 1: only 2000..2009 */
};

static void search(struct mt_index *idx, const struct query *q,
                   uint32_t threads, struct mt_search_result **out)
{
    static const struct mt_meta_cond years = {"year", NULL, 2000, 2009};
    struct mt_search_params p;
    float v[DIMS];

    mt_search_default_params(&p);
    embed_one(q->text, strlen(q->text), v);
    p.mode = q->mode;
    p.fusion = q->fusion;
    p.k = q->k;
    p.doc_sum = q->doc_sum;
    p.source = q->source;
    p.query_vec = v;
    p.query_dims = DIMS;
    p.meta = q->years ? &years : NULL;
    p.nmeta = q->years ? 1 : 0;
    p.search_threads = threads;
    CHECK_OK(mt_index_search(idx, q->text, &p, out, NULL));
}

/* Same hits in the same order with the same scores (to 1e-6 relative);
 * returns the largest relative score difference. */
static double same_hits(const struct mt_search_result *a,
                        const struct mt_search_result *b, const struct query *q)
{
    double worst = 0.0;
    size_t i;

    if (a->n != b->n)
        fail_msg("'%s' mode %d: %zu hits vs %zu", q->text, (int)q->mode, a->n,
                 b->n);
    for (i = 0; i < a->n; i++) {
        double sa = a->hits[i].score, sb = b->hits[i].score;
        double d = fabs(sa - sb) / fmax(1.0, fabs(sa));
        if (a->hits[i].chunk_id != b->hits[i].chunk_id || d > 1e-6)
            fail_msg("'%s' mode %d hit %zu: chunk %lld score %.9g vs chunk "
                     "%lld score %.9g",
                     q->text, (int)q->mode, i, (long long)a->hits[i].chunk_id,
                     sa, (long long)b->hits[i].chunk_id, sb);
        worst = fmax(worst, d);
    }
    return worst;
}

static const char *const texts[] = {
    "fever cough",
    "insulin glucose elderly",
    "asthma steroid child asthmatic",
    "migraine",
    "aspirin stroke bleeding warfarin",
    "renal dialysis trial placebo cohort dose outcome",
    "sepsis lactate sepsis",
    "thyroid goiter iron anemia vaccine measles tumor biopsy",
    "opioid naloxone",
    "statin lipid outcome unknownword",
};

/* The same hits in the same order with bit-identical scores. */
static void identical_hits(const struct mt_search_result *a,
                           const struct mt_search_result *b,
                           const struct query *q, uint32_t threads)
{
    size_t i;

    if (a->n != b->n)
        fail_msg("'%s' mode %d on %u threads: %zu hits vs %zu on one", q->text,
                 (int)q->mode, threads, b->n, a->n);
    for (i = 0; i < a->n; i++)
        if (a->hits[i].chunk_id != b->hits[i].chunk_id ||
            a->hits[i].score != b->hits[i].score)
            fail_msg("'%s' mode %d on %u threads, hit %zu: chunk %lld score "
                     "%.17g vs chunk %lld score %.17g on one",
                     q->text, (int)q->mode, threads, i,
                     (long long)b->hits[i].chunk_id, b->hits[i].score,
                     (long long)a->hits[i].chunk_id, a->hits[i].score);
}

/* Every query in every mode, with and without filters, on both, the
 * many-segment index searched on 'threads' threads (and, past 1, also on
 * one: the same hits bit for bit). */
static void compare_all(const char *one_dir, const char *many_dir,
                        uint32_t threads)
{
    static const struct query shapes[] = {
        {NULL, MT_SEARCH_BM25, MT_FUSION_LINEAR, 10, 0, NULL, 0},
        {NULL, MT_SEARCH_BM25, MT_FUSION_LINEAR, 100, 0, NULL, 0},
        {NULL, MT_SEARCH_BM25, MT_FUSION_LINEAR, 10, 1, NULL, 0},
        {NULL, MT_SEARCH_BM25, MT_FUSION_LINEAR, 20, 0, "medquad", 0},
        {NULL, MT_SEARCH_BM25, MT_FUSION_LINEAR, 20, 0, NULL, 1},
        {NULL, MT_SEARCH_DENSE, MT_FUSION_LINEAR, 10, 0, NULL, 0},
        {NULL, MT_SEARCH_HYBRID, MT_FUSION_LINEAR, 10, 0, NULL, 0},
        {NULL, MT_SEARCH_HYBRID, MT_FUSION_RRF, 10, 0, NULL, 0},
        {NULL, MT_SEARCH_HYBRID, MT_FUSION_LINEAR, 15, 0, "pubmed", 1},
    };
    struct mt_index *one = NULL, *many = NULL;
    size_t i, j, nonempty = 0;

    CHECK_OK(mt_index_open(one_dir, &one, NULL));
    CHECK_OK(mt_index_open(many_dir, &many, NULL));
    for (i = 0; i < sizeof texts / sizeof *texts; i++)
        for (j = 0; j < sizeof shapes / sizeof *shapes; j++) {
            struct query q = shapes[j];
            struct mt_search_result *a = NULL, *b = NULL, *c = NULL;
            q.text = texts[i];
            search(one, &q, 1, &a);
            search(many, &q, threads, &b);
            same_hits(a, b, &q);
            if (threads > 1) {
                search(many, &q, 1, &c);
                identical_hits(c, b, &q, threads);
                mt_search_result_free(c);
            }
            nonempty += a->n > 0;
            mt_search_result_free(a);
            mt_search_result_free(b);
        }
    /* the comparison saw hits, not empty lists */
    CHECK(nonempty ==
          sizeof texts / sizeof *texts * sizeof shapes / sizeof *shapes);
    mt_index_close(one);
    mt_index_close(many);
}

static void check_segments(const char *dir, uint32_t want_min)
{
    struct mt_index *idx = NULL;
    struct mt_index_stats st;

    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_index_stats(idx, &st);
    CHECK(st.segments >= want_min && st.chunks >= NDOCS);
    mt_index_close(idx);
}

/* ==== Tests ==== */

/* Split by a 24 KiB memory limit into many segments in one build. */
static void test_segments_split_rank_as_one(void **state)
{
    char one[128], many[128];
    (void)state;
    CHECK(make_index("one", 1, 0, 1, one, sizeof one) == 1);
    CHECK(make_index("split", 1, 24 << 10, 1, many, sizeof many) >= 6);
    check_segments(many, 6);
    compare_all(one, many, 1);
}

/* One query's segments searched on 2, 4 and 7 threads (the BM25 and the
 * vector lists of 6+ segments shared among them): the hits of one
 * segment, and bit for bit those of one thread. A segment whose hits a
 * thread dropped, or a merge that kept the wrong ones, changes them. */
static void test_segments_threads_search_as_one(void **state)
{
    static const uint32_t threads[] = {2, 4, 7};
    char one[128], many[128];
    size_t i;

    (void)state;
    CHECK(make_index("one-t", 1, 0, 1, one, sizeof one) == 1);
    CHECK(make_index("split-t", 1, 24 << 10, 1, many, sizeof many) >= 6);
    for (i = 0; i < sizeof threads / sizeof *threads; i++)
        compare_all(one, many, threads[i]);
}

/* A hybrid search on 3 threads of a fresh handle (its workers and
 * contexts made in the search) with the n-th allocation failing. */
static enum mt_status oom_search(const char *dir, long n,
                                 struct mt_search_result **out, long *failed)
{
    struct mt_index *idx = NULL;
    struct mt_search_params p;
    float v[DIMS];
    const char *q = "renal dialysis trial placebo cohort dose outcome";
    enum mt_status st;

    CHECK_OK(mt_index_open(dir, &idx, NULL));
    mt_search_default_params(&p);
    embed_one(q, strlen(q), v);
    p.mode = MT_SEARCH_HYBRID;
    p.k = 20;
    p.query_vec = v;
    p.query_dims = DIMS;
    p.search_threads = 3;
    mt_alloc_fail_after(n);
    st = mt_index_search(idx, q, &p, out, NULL);
    *failed = mt_alloc_failures();
    mt_alloc_fail_reset();
    mt_index_close(idx);
    return st;
}

/* Out of memory anywhere in a search on several threads (the workers,
 * a thread's context, its lists, a worker's task): MT_ENOMEM, or, when
 * the search went on (with fewer threads), the same hits; nothing leaks
 * (ASan) and nothing else fails. */
static void test_segments_threads_search_oom(void **state)
{
    struct mt_search_result *ref = NULL, *r = NULL;
    struct query q = {"oom", MT_SEARCH_HYBRID, MT_FUSION_LINEAR, 20, 0, NULL,
                      0};
    char many[128];
    long n, failed = 1;

    (void)state;
    CHECK(make_index("split-oom", 1, 24 << 10, 1, many, sizeof many) >= 6);
    CHECK_OK(oom_search(many, -1, &ref, &failed));
    CHECK(ref->n == 20);
    failed = 1;
    for (n = 0; n < 20000 && failed; n++) {
        enum mt_status st = oom_search(many, n, &r, &failed);
        CHECK(st == MT_OK || st == MT_ENOMEM);
        if (st != MT_OK)
            continue;
        identical_hits(ref, r, &q, 3); /* maybe on fewer threads */
        mt_search_result_free(r);
    }
    CHECK(!failed && n > 10);
    mt_search_result_free(ref);
}

/* Appended by three later builds (the checkpointed import's shape), each
 * split further, with Lucene's one-byte norms. */
static void test_segments_appended_rank_as_one(void **state)
{
    char one[128], many[128];
    (void)state;
    CHECK(make_index("one-b", 1, 0, 0, one, sizeof one) == 1);
    CHECK(make_index("appended", 3, 48 << 10, 0, many, sizeof many) >= 4);
    compare_all(one, many, 1);
}

static int has_segment(const char *dir, const char *name)
{
    char path[256];

    snprintf(path, sizeof path, "%s/index/%s.bm25", dir, name);
    return access(path, F_OK) == 0;
}

/* Eleven builds with at most 4 segments: each build past that merges the
 * cheapest neighbours (never a full rebuild; the 1,000-document first
 * segment is never rewritten), and the result ranks as one segment. */
static void test_segments_merge_smallest_not_rebuild(void **state)
{
    static const int cuts[] = {1000, 1100, 1180, 1250, 1330, 1400,
                               1470, 1540, 1620, 1700, NDOCS};
    struct spec sp = {cuts, 11, 0, 1, 4, 0};
    char one[128], many[128];
    struct mt_index_build_result r;
    (void)state;
    CHECK(make_index("one-m", 1, 0, 1, one, sizeof one) == 1);
    r = make_spec("merged", &sp, many, sizeof many);
    CHECK(r.segments >= 3 && r.segments <= 4 && r.segments_merged >= 2);
    CHECK(has_segment(many, "seg-000001"));
    CHECK(!has_segment(many, "seg-000005")); /* merged away */
    check_segments(many, 3);
    compare_all(one, many, 1);
}

/* A merge killed part-way (the embedder fails while the merged segment
 * is built) leaves the index as it was; the next build merges again and
 * finishes, and the index then ranks as one segment. */
static void test_segments_killed_merge_leaves_index(void **state)
{
    static const int cuts[] = {1000, 1100, 1200, 1300};
    struct spec sp = {cuts, 4, 0, 1, 4, 0};
    struct mt_index_build_params bp;
    struct mt_index_build_result r;
    struct mt_index_stats st;
    struct mt_store *s = NULL;
    struct mt_index *idx = NULL;
    struct mt_error err;
    struct bow e = {0, 50};
    char one[128], many[128];
    (void)state;
    CHECK(make_index("one-k", 1, 0, 1, one, sizeof one) == 1);
    r = make_spec("killed", &sp, many, sizeof many);
    CHECK(r.segments == 4 && r.segments_merged == 0);
    CHECK_OK(mt_store_open(many, NULL, &s, NULL));
    build_params(&bp, &sp, &e);
    seed(s, 1300, 1400);
    CHECK(mt_index_build(s, &bp, &r, &err) == MT_EIO);
    CHECK_OK(mt_index_open(many, &idx, NULL));
    mt_index_stats(idx, &st);
    CHECK(st.segments == 4 && st.chunks == 1300);
    mt_index_close(idx);
    e.fail_after = 0;
    CHECK_OK(mt_index_build(s, &bp, &r, NULL));
    CHECK(!r.merged && r.segments_merged == 2 && r.segments == 4);
    seed(s, 1400, NDOCS);
    CHECK_OK(mt_index_build(s, &bp, &r, NULL));
    CHECK(!r.merged && r.segments <= 4);
    mt_store_close(s);
    compare_all(one, many, 1);
}

/* Segments built to a 24 KiB budget are not merged (a merge would pass
 * it): the index keeps more than max_segments instead of a rebuild. */
static void test_segments_full_ones_never_merge(void **state)
{
    static const int cuts[] = {1500, NDOCS};
    struct spec sp = {cuts, 2, 24 << 10, 1, 4, 0};
    char one[128], many[128];
    struct mt_index_build_result r;
    (void)state;
    CHECK(make_index("one-f", 1, 0, 1, one, sizeof one) == 1);
    r = make_spec("full", &sp, many, sizeof many);
    CHECK(!r.merged && r.segments > 4);
    compare_all(one, many, 1);
}

/* ==== Threads ==== */

static void read_all(const char *path, char **buf, size_t *n)
{
    FILE *f = fopen(path, "rb");
    long len;

    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    len = ftell(f);
    CHECK(len >= 0 && fseek(f, 0, SEEK_SET) == 0);
    *buf = malloc((size_t)len + 1);
    CHECK(*buf != NULL);
    CHECK(fread(*buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    *n = (size_t)len;
}

/* Every file of a's index is in b's with the same bytes, and b has no
 * other; returns how many segment files there are. */
static size_t same_files(const char *a, const char *b)
{
    char da[512], db[512], pa[1024], pb[1024];
    DIR *d;
    struct dirent *e;
    size_t files = 0, segs = 0;

    snprintf(da, sizeof da, "%s/index", a);
    snprintf(db, sizeof db, "%s/index", b);
    d = opendir(da);
    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        char *x, *y;
        size_t nx, ny;
        if (e->d_name[0] == '.')
            continue;
        snprintf(pa, sizeof pa, "%s/%s", da, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", db, e->d_name);
        read_all(pa, &x, &nx);
        read_all(pb, &y, &ny);
        if (nx != ny || memcmp(x, y, nx) != 0)
            fail_msg("%s differs from %s (%zu vs %zu bytes)", pb, pa, ny, nx);
        free(x);
        free(y);
        files++;
        segs += strncmp(e->d_name, "seg-", 4) == 0;
    }
    closedir(d);
    d = opendir(db);
    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL)
        files -= e->d_name[0] != '.';
    closedir(d);
    CHECK(files == 0);
    return segs;
}

/* The same store indexed on 1, 2 and 5 analysis threads writes the same
 * bytes: split into many segments by the memory limit (byte norms), and
 * appended by eleven builds with tiered merges, with vectors. */
static void test_segments_threads_write_same_bytes(void **state)
{
    static const int cuts[] = {1000, 1100, 1180, 1250, 1330, 1400,
                               1470, 1540, 1620, 1700, NDOCS};
    static const int all[] = {NDOCS};
    static const uint32_t threads[] = {1, 2, 5};
    char ref[2][128], dir[128], leaf[32];
    struct mt_index_build_result r;
    size_t i, k;
    (void)state;
    for (k = 0; k < 2; k++)
        for (i = 0; i < sizeof threads / sizeof *threads; i++) {
            struct spec sp = {all, 1, 24 << 10, 0, 0, threads[i]};
            if (k == 1) {
                struct spec m = {cuts, 11, 0, 1, 4, threads[i]};
                sp = m;
            }
            snprintf(leaf, sizeof leaf, "thr-%zu-%u", k, threads[i]);
            r = make_spec(leaf, &sp, i ? dir : ref[k], sizeof dir);
            CHECK(k == 1 ? r.segments_merged >= 2 : r.segments >= 6);
            if (i)
                CHECK(same_files(ref[k], dir) >= 2 * r.segments);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segments_split_rank_as_one),
        cmocka_unit_test(test_segments_appended_rank_as_one),
        cmocka_unit_test(test_segments_threads_search_as_one),
        cmocka_unit_test(test_segments_threads_search_oom),
        cmocka_unit_test(test_segments_merge_smallest_not_rebuild),
        cmocka_unit_test(test_segments_killed_merge_leaves_index),
        cmocka_unit_test(test_segments_full_ones_never_merge),
        cmocka_unit_test(test_segments_threads_write_same_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
