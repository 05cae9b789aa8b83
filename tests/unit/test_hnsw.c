/* Unit tests for src/index/hnsw: recall against exact float search on
 * clustered data, determinism, file round trip and corruption, filters,
 * edge cases, concurrent search and allocation failures. */
#include "check.h"
#include "legacy_vec.h"

#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/hnsw.h"
#include "index/segment.h"
#include "index/vec.h"
#include "medtrust/core.h"

#define N_VEC 20000
#define DIMS 64
#define N_CLUSTERS 50
#define N_QUERIES 200
#define K 10

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(void) /* (0, 1] */
{
    return (double)((rng_next() >> 11) + 1) * 0x1p-53;
}

static float rng_gauss(void)
{
    double u = rng_uniform();
    double v = rng_uniform();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static void normalize(float *v, uint32_t d)
{
    CHECK_OK(mtx_vec_normalize(v, d));
}

/* Shared fixture: clustered unit vectors (50 Gaussian clusters, noise of
 * norm about 0.8 around unit centres), queries from the same mixture,
 * exact float top-10 computed here in double, and one default build. */
static float *data;
static float *queries;
static uint32_t truth[N_QUERIES][K];
static struct mt_vecset *vs;
static struct mt_hnsw *idx;
static char tmpdir[64];

static void clustered(float *out, uint32_t n, const float *centres)
{
    uint32_t i;
    uint32_t j;
    for (i = 0; i < n; i++) {
        const float *c = centres + (rng_next() % N_CLUSTERS) * DIMS;
        for (j = 0; j < DIMS; j++)
            out[i * DIMS + j] = c[j] + 0.1f * rng_gauss();
        normalize(out + i * DIMS, DIMS);
    }
}

static void exact_top(const float *q, uint32_t *out)
{
    struct mt_vec_hit h[K];
    struct mt_vec_topk t = {h, 0, K};
    uint32_t i;
    uint32_t j;
    for (i = 0; i < N_VEC; i++) {
        double s = 0.0;
        for (j = 0; j < DIMS; j++)
            s += (double)q[j] * (double)data[i * DIMS + j];
        mtx_vec_topk_push(&t, i, (float)s);
    }
    mtx_vec_topk_sort(&t);
    for (i = 0; i < K; i++)
        out[i] = h[i].id;
}

static int setup(void **state)
{
    static float centres[N_CLUSTERS * DIMS];
    struct mt_hnsw_params hp = mtx_hnsw_default_params();
    uint32_t i;
    (void)state;
    rng_state = 12345;
    for (i = 0; i < N_CLUSTERS * DIMS; i++)
        centres[i] = rng_gauss();
    for (i = 0; i < N_CLUSTERS; i++)
        normalize(centres + i * DIMS, DIMS);
    data = malloc(sizeof(float) * N_VEC * DIMS);
    queries = malloc(sizeof(float) * N_QUERIES * DIMS);
    if (!data || !queries)
        return -1;
    clustered(data, N_VEC, centres);
    clustered(queries, N_QUERIES, centres);
    for (i = 0; i < N_QUERIES; i++)
        exact_top(queries + i * DIMS, truth[i]);
    if (mtx_vecset_new(DIMS, NULL, &vs) != MT_OK)
        return -1;
    for (i = 0; i < N_VEC; i++)
        if (mtx_vecset_add(vs, data + i * DIMS, NULL) != MT_OK)
            return -1;
    strcpy(tmpdir, "/tmp/mt_test_hnsw_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    /* 4 threads: the parallel build interleaves inserts even on one
     * core; test_hnsw_parallel_build_keeps_recall compares it with the
     * serial build */
    hp.threads = 4;
    return mtx_hnsw_build(vs, &hp, &idx) == MT_OK ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    mtx_hnsw_free(idx);
    mtx_vecset_free(vs);
    free(data);
    free(queries);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static double recall_of(const struct mt_hnsw *h, uint32_t ef)
{
    struct mt_vec_hit hits[K];
    uint32_t found = 0;
    uint32_t q, a, b, n;
    for (q = 0; q < N_QUERIES; q++) {
        CHECK_OK(mtx_hnsw_search(h, queries + q * DIMS, K, ef, NULL, hits, &n));
        CHECK(n == K);
        for (a = 0; a < K; a++)
            for (b = 0; b < K; b++)
                found += hits[a].id == truth[q][b];
    }
    return (double)found / (N_QUERIES * K);
}

static void test_hnsw_default_recall_at_least_095(void **state)
{
    struct mt_hnsw_params p = mtx_hnsw_params_of(idx);
    double r = recall_of(idx, 0);
    (void)state;
    CHECK(p.M == 16 && p.ef_construction == 200 && p.ef_search == 128);
    CHECK(mtx_hnsw_default_ef(idx) == 128); /* small sets: ef_search */
    print_message("recall@10 default (ef %u): %.4f; ef 16: %.4f; "
                  "ef 64: %.4f\n",
                  p.ef_search, r, recall_of(idx, 16), recall_of(idx, 64));
    CHECK(r >= 0.95);
    CHECK(recall_of(idx, 64) >= 0.95);
    CHECK(recall_of(idx, 16) < r); /* ef matters, so the test can fail */
}

/* The parallel build (the fixture's, 4 threads) against the serial one:
 * recall at every ef within 0.01 of it (a parallel graph differs from run
 * to run; on this set builds differ by about 0.001). */
static void test_hnsw_parallel_build_keeps_recall(void **state)
{
    static const uint32_t efs[] = {16, 32, 64, 128};
    struct mt_hnsw_params p = mtx_hnsw_default_params();
    struct mt_hnsw *serial;
    uint32_t i;
    (void)state;
    p.threads = 1;
    CHECK_OK(mtx_hnsw_build(vs, &p, &serial));
    for (i = 0; i < sizeof efs / sizeof efs[0]; i++) {
        double rs = recall_of(serial, efs[i]);
        double rp = recall_of(idx, efs[i]);
        print_message("ef %u recall@10: serial %.4f, 4 threads %.4f\n", efs[i],
                      rs, rp);
        CHECK(rp >= rs - 0.01);
    }
    mtx_hnsw_free(serial);
}

static void test_hnsw_hits_sorted_and_distinct(void **state)
{
    struct mt_vec_hit h[K];
    uint32_t n, i, j;
    (void)state;
    CHECK_OK(mtx_hnsw_search(idx, queries, K, 0, NULL, h, &n));
    for (i = 0; i < n; i++) {
        CHECK(i == 0 || mtx_vec_hit_better(h[i - 1], h[i]));
        for (j = 0; j < i; j++)
            CHECK(h[i].id != h[j].id);
    }
}

static void search_all(const struct mt_hnsw *h, struct mt_vec_hit *out)
{
    uint32_t q, n;
    for (q = 0; q < N_QUERIES; q++) {
        CHECK_OK(mtx_hnsw_search(h, queries + q * DIMS, K, 0, NULL, out + q * K,
                                 &n));
        CHECK(n == K);
    }
}

static void file_bytes(const char *path, unsigned char **p, long *n)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *p = malloc((size_t)*n);
    CHECK(*p && fread(*p, 1, (size_t)*n, f) == (size_t)*n);
    fclose(f);
}

static void put_bytes(const char *path, const unsigned char *p, long n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
}

static void test_hnsw_round_trip_identical(void **state)
{
    static struct mt_vec_hit a[N_QUERIES * K], b[N_QUERIES * K];
    char path[128];
    struct mt_error err;
    struct mt_hnsw *o;
    (void)state;
    snprintf(path, sizeof path, "%s/idx.hnsw", tmpdir);
    CHECK_OK(mtx_hnsw_write(idx, path, &err));
    CHECK_OK(mtx_hnsw_open(path, &o, &err));
    CHECK(mtx_hnsw_count(o) == N_VEC);
    search_all(idx, a);
    search_all(o, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
    mtx_hnsw_free(o);
}

/* Same seed and vectors: byte-identical files; another seed differs. */
static void test_hnsw_build_is_deterministic(void **state)
{
    struct mt_hnsw_params p = mtx_hnsw_default_params();
    struct mt_vecset *small;
    struct mt_hnsw *h1, *h2, *h3;
    unsigned char *b1, *b2, *b3;
    long n1, n2, n3;
    char f1[128], f2[128], f3[128];
    uint32_t i;
    (void)state;
    p.threads = 1; /* the serial build is the deterministic one */
    CHECK_OK(mtx_vecset_new(DIMS, NULL, &small));
    for (i = 0; i < 2000; i++)
        CHECK_OK(mtx_vecset_add(small, data + i * DIMS, NULL));
    snprintf(f1, sizeof f1, "%s/d1", tmpdir);
    snprintf(f2, sizeof f2, "%s/d2", tmpdir);
    snprintf(f3, sizeof f3, "%s/d3", tmpdir);
    CHECK_OK(mtx_hnsw_build(small, &p, &h1));
    CHECK_OK(mtx_hnsw_build(small, &p, &h2));
    p.seed = 7;
    CHECK_OK(mtx_hnsw_build(small, &p, &h3));
    CHECK_OK(mtx_hnsw_write(h1, f1, NULL));
    CHECK_OK(mtx_hnsw_write(h2, f2, NULL));
    CHECK_OK(mtx_hnsw_write(h3, f3, NULL));
    file_bytes(f1, &b1, &n1);
    file_bytes(f2, &b2, &n2);
    file_bytes(f3, &b3, &n3);
    CHECK(n1 == n2 && memcmp(b1, b2, (size_t)n1) == 0);
    CHECK(n1 != n3 || memcmp(b1, b3, (size_t)n1) != 0);
    free(b1);
    free(b2);
    free(b3);
    mtx_hnsw_free(h1);
    mtx_hnsw_free(h2);
    mtx_hnsw_free(h3);
    mtx_vecset_free(small);
}

static void expect_rejected(const char *path, const char *name)
{
    struct mt_error err;
    struct mt_hnsw *o = (struct mt_hnsw *)1;
    CHECK(mtx_hnsw_open(path, &o, &err) == MT_EPARSE);
    CHECK(o == NULL);
    CHECK(strstr(err.msg, name) != NULL);
}

static int sum_steps_called;
static uint64_t sum_steps_bytes;

static void sum_steps(uint64_t bytes, void *user)
{
    (void)user;
    sum_steps_called++;
    sum_steps_bytes += bytes;
}

/* A damaged file is refused at open, or, where the damage is in the
 * vectors or the links (whose checksums the open leaves), opens and
 * fails mtx_hnsw_check naming the section. Returns 1 for the second. */
static int expect_damaged(const char *path, const char *name)
{
    struct mt_error err;
    struct mt_hnsw *o = (struct mt_hnsw *)1;
    enum mt_status st = mtx_hnsw_open(path, &o, &err);
    if (st != MT_OK) {
        CHECK(st == MT_EPARSE && o == NULL);
        CHECK(strstr(err.msg, name) != NULL);
        return 0;
    }
    mt_error_clear(&err);
    CHECK(mtx_hnsw_check(o, NULL, NULL, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, name) != NULL);
    CHECK(strstr(err.msg, "section 'VCOD'") ||
          strstr(err.msg, "section 'VRES'") ||
          strstr(err.msg, "section 'VFLT'") ||
          strstr(err.msg, "section 'HL0_'") ||
          strstr(err.msg, "section 'HUP_'"));
    mtx_hnsw_free(o);
    return 1;
}

static void test_hnsw_rejects_truncated_and_flipped(void **state)
{
    int lazy = 0;
    static const long cuts[] = {0, 10, 127, 128, 129, 4096, -64, -1};
    char good[128], bad[128];
    unsigned char *b;
    long n, i;
    (void)state;
    snprintf(good, sizeof good, "%s/idx.hnsw", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.hnsw", tmpdir);
    CHECK_OK(mtx_hnsw_write(idx, good, NULL));
    file_bytes(good, &b, &n);
    for (i = 0; i < (long)(sizeof cuts / sizeof cuts[0]); i++) {
        put_bytes(bad, b, cuts[i] < 0 ? n + cuts[i] : cuts[i]);
        expect_rejected(bad, "bad.hnsw");
    }
    for (i = 0; i < 24; i++) { /* header, vectors, graph, last byte */
        long off = i < 8 ? i * 16 : (i == 23 ? n - 1 : n / 23 * i);
        b[off] ^= (unsigned char)(1u << (i % 8));
        put_bytes(bad, b, n);
        lazy += expect_damaged(bad, "bad.hnsw");
        b[off] ^= (unsigned char)(1u << (i % 8));
    }
    CHECK(lazy > 0 && lazy < 24); /* the vectors are most of the file */
    put_bytes(bad, b, n);         /* unchanged copy still opens, and checks */
    {
        struct mt_hnsw *o;
        CHECK_OK(mtx_hnsw_open(bad, &o, NULL));
        sum_steps_called = 0;
        sum_steps_bytes = 0;
        CHECK_OK(mtx_hnsw_check(o, sum_steps, NULL, NULL));
        CHECK(sum_steps_called > 0 &&
              sum_steps_bytes == mtx_hnsw_check_bytes(o));
        CHECK(sum_steps_bytes > (uint64_t)n / 2 &&
              sum_steps_bytes < (uint64_t)n);
        mtx_hnsw_free(o);
    }
    free(b);
}

/* Re-seals a modified segment file (every section CRC, the table's and
 * the header's; layout in segment.h) so only the structural checks can
 * catch it. */
static void reseal(unsigned char *b, long n)
{
    uint64_t toff, off, size, v;
    uint32_t ns, i;
    memcpy(&toff, b + 24, 8);
    memcpy(&ns, b + 32, 4);
    CHECK(toff + (uint64_t)ns * MT_SEG_ENTRY_SIZE == (uint64_t)n);
    for (i = 0; i < ns; i++) {
        unsigned char *e = b + toff + (size_t)i * MT_SEG_ENTRY_SIZE;
        memcpy(&off, e + 8, 8);
        memcpy(&size, e + 16, 8);
        v = mtx_crc32c(0, b + off, (size_t)size);
        memcpy(e + 24, &v, 8);
    }
    v = mtx_crc32c(0, b + toff, (size_t)ns * MT_SEG_ENTRY_SIZE);
    memcpy(b + 40, &v, 8);
    v = mtx_crc32c(0, b, 56);
    memcpy(b + 56, &v, 8);
}

/* Offset of section 'id' in the segment file image b. */
static long section_at(const unsigned char *b, long n, uint32_t id)
{
    struct mt_seg *sg;
    const void *p;
    size_t size;
    long off;
    CHECK_OK(mtx_seg_open_mem(b, (size_t)n, "graph", "MTHNSW02", 0, &sg, NULL));
    CHECK_OK(mtx_seg_section(sg, id, &p, &size, NULL));
    off = (long)((const unsigned char *)p - b);
    mtx_seg_close(sg);
    return off;
}

/* 300 default vectors, M 16: upper-level ids up to 299 and counts up to
 * 16 take 9 bits an entry; a level-0 Elias-Fano block (hnsw.c, "Level 0
 * as Elias-Fano blocks") has 3 low bits an id (the smallest block: 32 +
 * (299 >> 3) + 1 = 70 high-part bits and 32 x 3 low bits, 166 bits). */
#define BAD_N 300
#define BAD_BITS 9
#define BAD_LO 3
#define BAD_HIGH 70
#define BAD_BLOCK 166

/* 'width' bits of p at bit pos. */
static uint32_t bits_at(const unsigned char *p, uint64_t pos, uint32_t width)
{
    uint64_t w;
    memcpy(&w, p + pos / 8, 8);
    return (uint32_t)((w >> (pos % 8)) & ((1ull << width) - 1));
}

/* Decodes block 'node' of a level-0 section here, independently of
 * hnsw.c: the i-th set bit of the high part, at position p, is an id of
 * high part p - i whose low bits are the i-th low field. Returns the
 * count (ids holds the first 64). */
static uint32_t ef_ids(const unsigned char *l0, uint32_t node, uint32_t *ids)
{
    uint64_t at = (uint64_t)node * BAD_BLOCK;
    uint32_t c = 0, p;
    for (p = 0; p < BAD_HIGH; p++) {
        if (!bits_at(l0, at + p, 1))
            continue;
        if (c < 64)
            ids[c] = ((p - c) << BAD_LO) |
                     bits_at(l0, at + BAD_HIGH + c * BAD_LO, BAD_LO);
        c++;
    }
    return c;
}

static void expect_bad_graph(const char *path, unsigned char *b, long n)
{
    struct mt_hnsw *h = (struct mt_hnsw *)1;
    reseal(b, n);
    put_bytes(path, b, n);
    CHECK(mtx_hnsw_open(path, &h, NULL) == MT_EPARSE && h == NULL);
    expect_rejected(path, "graph.hnsw");
}

/* A damaged link block (checksums resealed) opens, since the open reads
 * no blocks; a search from every vector stays in bounds (ASan) and
 * finds hits; mtx_hnsw_check refuses the graph. */
static void expect_bad_links(const char *path, unsigned char *b, long n)
{
    struct mt_hnsw *h = NULL;
    struct mt_vec_hit hits[10];
    struct mt_error err;
    uint32_t i, got;
    reseal(b, n);
    put_bytes(path, b, n);
    CHECK_OK(mtx_hnsw_open(path, &h, NULL));
    for (i = 0; i < BAD_N; i++) {
        CHECK_OK(mtx_hnsw_search(h, data + i * DIMS, 10, 32, NULL, hits, &got));
        CHECK(got > 0);
    }
    CHECK(mtx_hnsw_check(h, NULL, NULL, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "graph.hnsw: bad graph") != NULL);
    mtx_hnsw_free(h);
}

/* The first id not in the table of nodes with upper levels (HUID). */
static uint32_t level0_only(const unsigned char *ids, uint32_t n_up)
{
    uint32_t x = 0, j, v;
    for (j = 0; j < n_up; j++, x++) {
        memcpy(&v, ids + 4 * j, 4);
        if (v != x)
            break;
    }
    return x;
}

static void set_bits(unsigned char *p, uint64_t pos, uint32_t width, uint32_t v)
{
    uint64_t w, mask = ((1ull << width) - 1) << (pos % 8);
    memcpy(&w, p + pos / 8, 8);
    w = (w & ~mask) | ((uint64_t)v << (pos % 8));
    memcpy(p + pos / 8, &w, 8);
}

/* Each change to a good file image 'b' (a copy of 'good') is refused. */
static void corrupt_graph(const char *path, unsigned char *b,
                          const unsigned char *good, long n)
{
    long l0 = section_at(b, n, MT_SEG_ID('H', 'L', '0', '_'));
    long up = section_at(b, n, MT_SEG_ID('H', 'U', 'P', '_'));
    long uid = section_at(b, n, MT_SEG_ID('H', 'U', 'I', 'D'));
    long ufs = section_at(b, n, MT_SEG_ID('H', 'U', 'F', 'S'));
    uint32_t n_up, v, w;
    memcpy(&n_up, b + section_at(b, n, MT_SEG_ID('H', 'M', 'E', 'T')) + 72, 4);
    CHECK(n_up >= 2 && n_up < BAD_N / 4);
    /* the top high-part bit: an id of high part >= 69 - 31, past node 299
     * (a real id sets bit (id >> 3) + i <= 37 + 31 at most) */
    set_bits(b + l0, BAD_HIGH - 1, 1, 1);
    expect_bad_links(path, b, n);
    memcpy(b, good, (size_t)n);
    set_bits(b + l0, 0, 32, UINT32_MAX); /* 32 + 1 ids */
    set_bits(b + l0, 32, 1, 1);
    expect_bad_links(path, b, n);
    memcpy(b, good, (size_t)n);
    CHECK(bits_at(b + up, 0, BAD_BITS) >= 1); /* first node's level 1 */
    set_bits(b + up, BAD_BITS, BAD_BITS, level0_only(b + uid, n_up));
    expect_bad_links(path, b, n);
    memcpy(b, good, (size_t)n);
    set_bits(b + up, 0, BAD_BITS, 30); /* a count past M */
    expect_bad_links(path, b, n);
    memcpy(b, good, (size_t)n);
    memcpy(&v, b + uid, 4); /* the table out of order */
    memcpy(&w, b + uid + 4, 4);
    memcpy(b + uid, &w, 4);
    memcpy(b + uid + 4, &v, 4);
    expect_bad_graph(path, b, n);
    memcpy(b, good, (size_t)n);
    memcpy(&v, b + ufs + 4 * n_up, 4); /* not ending at n_upper */
    v++;
    memcpy(b + ufs + 4 * n_up, &v, 4);
    expect_bad_graph(path, b, n);
    memcpy(b, good, (size_t)n);
}

/* A file with a valid checksum but a bad graph: a level-0 id past the
 * last node, more than M0 ids in a block, an upper-level link to a node
 * without that level or a count past M are read around by a search and
 * refused by mtx_hnsw_check; the table of upper nodes out of order or not
 * adding up to the upper blocks is refused at open. */
static void test_hnsw_rejects_bad_graph_with_valid_checksum(void **state)
{
    struct mt_vecset *s;
    struct mt_hnsw *h;
    char path[128];
    unsigned char *b, *good;
    uint32_t ids[64], c, i, j;
    long n, l0;
    (void)state;
    snprintf(path, sizeof path, "%s/graph.hnsw", tmpdir);
    CHECK_OK(mtx_vecset_new(DIMS, NULL, &s));
    for (i = 0; i < BAD_N; i++)
        CHECK_OK(mtx_vecset_add(s, data + i * DIMS, NULL));
    CHECK_OK(mtx_hnsw_build(s, NULL, &h));
    CHECK_OK(mtx_hnsw_write(h, path, NULL));
    mtx_hnsw_free(h);
    mtx_vecset_free(s);
    file_bytes(path, &b, &n);
    l0 = section_at(b, n, MT_SEG_ID('H', 'L', '0', '_'));
    for (i = 0; i < BAD_N; i++) { /* the layout is as said */
        c = ef_ids(b + l0, i, ids);
        CHECK(c >= 1 && c <= 32);
        for (j = 0; j < c; j++)
            CHECK(ids[j] < BAD_N && (j == 0 || ids[j] >= ids[j - 1]));
    }
    reseal(b, n);
    put_bytes(path, b, n);
    CHECK_OK(mtx_hnsw_open(path, &h, NULL)); /* reseal alone is harmless */
    mtx_hnsw_free(h);
    good = malloc((size_t)n);
    CHECK(good != NULL);
    memcpy(good, b, (size_t)n);
    corrupt_graph(path, b, good, n);
    memset(b + section_at(b, n, MT_VEC_SEC_META), 0, 8); /* dims 0 */
    reseal(b, n);
    put_bytes(path, b, n);
    CHECK(mtx_hnsw_open(path, &h, NULL) == MT_EPARSE);
    free(good);
    free(b);
}

/* Graph top-5 of every vector: the same in a and b, itself first. */
static void same_graph_hits(const struct mt_hnsw *a, const struct mt_hnsw *b)
{
    struct mt_vec_hit h1[5], h2[5];
    uint32_t n1, n2, i;
    float v[16];
    for (i = 0; i < 48; i++) {
        legacy_vec(i, v);
        CHECK_OK(mtx_hnsw_search(a, v, 5, 0, NULL, h1, &n1));
        CHECK_OK(mtx_hnsw_search(b, v, 5, 0, NULL, h2, &n2));
        CHECK(n1 == 5 && n2 == 5 && memcmp(h1, h2, sizeof h1) == 0);
        CHECK(h1[0].id == i);
    }
}

static void test_hnsw_opens_file_written_before_segments(void **state)
{
    const char *old_path = "tests/unit/legacy/v1.hnsw";
    struct mt_hnsw *old, *conv;
    struct mt_error err;
    char path[128];
    unsigned char *b;
    long n;
    (void)state;
    if (mtx_hnsw_open(old_path, &old, &err) != MT_OK)
        fail_msg("%s", err.msg);
    CHECK(mtx_hnsw_count(old) == 48 && mtx_hnsw_params_of(old).M == 4);
    CHECK(mtx_vecset_dims(mtx_hnsw_vecset(old)) == 16);
    snprintf(path, sizeof path, "%s/conv.hnsw", tmpdir);
    CHECK_OK(mtx_hnsw_write(old, path, &err)); /* rewriting converts */
    CHECK_OK(mtx_hnsw_open(path, &conv, &err));
    same_graph_hits(old, conv);
    mtx_hnsw_free(conv);
    file_bytes(path, &b, &n);
    CHECK(memcmp(b, "MTHNSW02", 8) == 0);
    free(b);
    file_bytes(old_path, &b, &n);
    b[n / 2] ^= 1;
    put_bytes(path, b, n);
    CHECK(mtx_hnsw_open(path, &conv, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "checksum") != NULL && conv == NULL);
    free(b);
    mtx_hnsw_free(old);
}

/* Section 'id' of the graph file at path: its size, and its first
 * 'want' bytes into out when 'want' > 0. */
static size_t section_of(const char *path, uint32_t id, void *out, size_t want)
{
    struct mt_seg *sg;
    const void *p;
    size_t size;
    CHECK_OK(mtx_seg_open(path, "MTHNSW02", 0, &sg, NULL));
    CHECK(mtx_seg_version(sg) == 4);
    CHECK_OK(mtx_seg_section(sg, id, &p, &size, NULL));
    CHECK(size >= want);
    if (want > 0)
        memcpy(out, p, want);
    mtx_seg_close(sg);
    return size;
}

/* The smallest Elias-Fano block for n ids and lists of up to m0, over
 * every low-bit width (what the issue asks: floor(log2(n / m0)) low
 * bits, then the high parts in unary). */
static uint64_t ef_block(uint32_t n, uint32_t m0)
{
    uint64_t best = UINT64_MAX, b;
    uint32_t lo;
    for (lo = 0; lo < 32; lo++) {
        b = (uint64_t)m0 * (lo + 1) + ((n - 1) >> lo) + 1;
        best = b < best ? b : best;
    }
    return best;
}

/* The level-0 section is n fixed-size Elias-Fano blocks (plus 8 bytes of
 * slack), the upper links take the fewest bits that hold every id and
 * count, the table of nodes with upper levels takes 8 bytes each and
 * the per-node level and offset arrays are gone; searches find what the
 * graph in memory finds. */
static void test_hnsw_links_elias_fano_and_packed(void **state)
{
    static const struct {
        uint32_t n, M, bits, block;
    } cases[] = {{300, 16, 9, 166},     {512, 16, 9, 192}, {513, 16, 10, 193},
                 {100, 64, 8, 228},     {2, 2, 3, 6},      {20000, 16, 15, 360},
                 {1000000, 16, 20, 542}};
    char path[128];
    uint32_t c, i, n1, n2;
    (void)state;
    snprintf(path, sizeof path, "%s/packed.hnsw", tmpdir);
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct mt_hnsw_params p = mtx_hnsw_default_params();
        struct mt_vecset *s;
        struct mt_hnsw *h, *o;
        struct mt_vec_hit h1[10], h2[10];
        struct mt_seg *sg;
        const void *q;
        size_t size;
        uint64_t m[10];
        CHECK(ef_block(cases[c].n, 2 * cases[c].M) == cases[c].block);
        if (cases[c].n > 2000)
            continue; /* the block sizes of the sets, not built */
        p.M = cases[c].M;
        CHECK_OK(mtx_vecset_new(DIMS, NULL, &s));
        for (i = 0; i < cases[c].n; i++)
            CHECK_OK(mtx_vecset_add(s, data + i * DIMS, NULL));
        CHECK_OK(mtx_hnsw_build(s, &p, &h));
        CHECK_OK(mtx_hnsw_write(h, path, NULL));
        CHECK(section_of(path, MT_SEG_ID('H', 'M', 'E', 'T'), m, sizeof m) ==
              sizeof m);
        CHECK(m[8] == cases[c].bits);
        CHECK(section_of(path, MT_SEG_ID('H', 'L', '0', '_'), NULL, 0) ==
              ((uint64_t)cases[c].n * cases[c].block + 7) / 8 + 8);
        CHECK(section_of(path, MT_SEG_ID('H', 'U', 'P', '_'), NULL, 0) ==
              (m[3] * (cases[c].M + 1) * m[8] + 7) / 8 + 8);
        CHECK(section_of(path, MT_SEG_ID('H', 'U', 'I', 'D'), NULL, 0) ==
              m[9] * 4);
        CHECK(section_of(path, MT_SEG_ID('H', 'U', 'F', 'S'), NULL, 0) ==
              m[9] * 4 + 4);
        CHECK(m[9] <= m[3] && (m[3] == 0) == (m[9] == 0));
        CHECK_OK(mtx_seg_open(path, "MTHNSW02", 0, &sg, NULL));
        CHECK(mtx_seg_section(sg, MT_SEG_ID('H', 'L', 'E', 'V'), &q, &size,
                              NULL) != MT_OK);
        CHECK(mtx_seg_section(sg, MT_SEG_ID('H', 'O', 'F', 'F'), &q, &size,
                              NULL) != MT_OK);
        mtx_seg_close(sg);
        CHECK_OK(mtx_hnsw_open(path, &o, NULL));
        for (i = 0; i < 20; i++) {
            const float *qv = queries + i * DIMS;
            CHECK_OK(mtx_hnsw_search(h, qv, 10, 0, NULL, h1, &n1));
            CHECK_OK(mtx_hnsw_search(o, qv, 10, 0, NULL, h2, &n2));
            CHECK(n1 == n2 && memcmp(h1, h2, n1 * sizeof *h1) == 0);
        }
        mtx_hnsw_free(o);
        mtx_hnsw_free(h);
        mtx_vecset_free(s);
    }
}

/* tests/unit/legacy/v2.hnsw is what the version 2 writer made (u32 links,
 * commit 88d6e1b) of the 48 legacy vectors, default set, M 4, serial
 * build, and v3.hnsw what the version 3 writer made of them (links
 * packed, commit 04b4254): each opens, finds what a build of the same
 * vectors finds today, and writing it again gives a smaller version 4
 * file with the same hits. A version past 4 is refused by its number. */
static void opens_old_file(const char *old_path)
{
    struct mt_hnsw_params p = mtx_hnsw_default_params();
    struct mt_hnsw *old, *conv, *fresh;
    struct mt_vecset *s;
    struct mt_error err;
    char path[128];
    unsigned char *b;
    long n, n_old;
    uint32_t i, five = 5;
    float v[LEGACY_DIMS];
    if (mtx_hnsw_open(old_path, &old, &err) != MT_OK)
        fail_msg("%s", err.msg);
    CHECK(mtx_hnsw_count(old) == LEGACY_N && mtx_hnsw_params_of(old).M == 4);
    CHECK_OK(mtx_vecset_new(LEGACY_DIMS, NULL, &s));
    for (i = 0; i < LEGACY_N; i++) {
        legacy_vec(i, v);
        CHECK_OK(mtx_vecset_add(s, v, NULL));
    }
    p.M = 4;
    p.threads = 1;
    CHECK_OK(mtx_hnsw_build(s, &p, &fresh));
    same_graph_hits(old, fresh);
    snprintf(path, sizeof path, "%s/v4.hnsw", tmpdir);
    CHECK_OK(mtx_hnsw_write(old, path, &err));
    CHECK_OK(mtx_hnsw_open(path, &conv, &err));
    same_graph_hits(old, conv);
    mtx_hnsw_free(conv);
    file_bytes(old_path, &b, &n_old);
    free(b);
    file_bytes(path, &b, &n);
    CHECK(memcmp(b + 12, "\4\0\0\0", 4) == 0 && n < n_old);
    memcpy(b + 12, &five, 4);
    reseal(b, n);
    put_bytes(path, b, n);
    CHECK(mtx_hnsw_open(path, &conv, &err) == MT_EPARSE && conv == NULL);
    CHECK(strstr(err.msg, "unsupported version 5") != NULL);
    free(b);
    mtx_hnsw_free(fresh);
    mtx_vecset_free(s);
    mtx_hnsw_free(old);
}

static void test_hnsw_opens_version2_file(void **state)
{
    (void)state;
    opens_old_file("tests/unit/legacy/v2.hnsw");
}

static void test_hnsw_opens_version3_file(void **state)
{
    unsigned char *b;
    long n;
    (void)state;
    file_bytes("tests/unit/legacy/v3.hnsw", &b, &n);
    CHECK(n > 16 && memcmp(b + 12, "\3\0\0\0", 4) == 0);
    free(b);
    opens_old_file("tests/unit/legacy/v3.hnsw");
}

static void test_hnsw_default_ef_grows_with_size(void **state)
{
    (void)state;
    CHECK(mtx_hnsw_ef_for(1000, 128) == 128);
    CHECK(mtx_hnsw_ef_for(350000, 128) == 128);
    CHECK(mtx_hnsw_ef_for(350000, 40) == 40);
    /* 128 * (1M / 350K)^0.9 = 329.3; 2.3M: 696.8 */
    CHECK(mtx_hnsw_ef_for(1000000, 128) == 330);
    CHECK(mtx_hnsw_ef_for(2300000, 128) == 697);
    CHECK(mtx_hnsw_ef_for(UINT32_MAX, 128) == 4096);
    CHECK(mtx_hnsw_ef_for(400000, 128) > 128);
}

static void test_hnsw_rescore_modes(void **state)
{
    struct mt_hnsw_params p = mtx_hnsw_default_params();
    struct mt_vecset *s;
    struct mt_hnsw *h0, *h1;
    struct mt_vec_hit a[3], b[3], f[3];
    uint32_t i, na, nb, nf;
    struct mt_vecset_params vp = mtx_vecset_default_params();
    (void)state;
    vp.refine = 0; /* flat search then ranks by the int8 scores alone */
    CHECK_OK(mtx_vecset_new(DIMS, &vp, &s));
    for (i = 0; i < 1000; i++)
        CHECK_OK(mtx_vecset_add(s, data + i * DIMS, NULL));
    /* serial builds: two parallel graphs differ from run to run, and at
     * load 8-15 the 0.02 check below failed once (two reruns passed);
     * the test compares re-scoring, not graphs */
    p.threads = 1;
    p.rescore = 0;
    CHECK_OK(mtx_hnsw_build(s, &p, &h0));
    p.rescore = 1;
    CHECK_OK(mtx_hnsw_build(s, &p, &h1));
    for (i = 0; i < 10; i++) {
        const float *q = queries + i * DIMS;
        CHECK_OK(mtx_hnsw_search(h0, q, 3, 0, NULL, a, &na));
        CHECK_OK(mtx_hnsw_search(h1, q, 3, 0, NULL, b, &nb));
        CHECK_OK(mtx_vecset_search_flat(s, q, 3, NULL, f, &nf));
        CHECK(na == 3 && nb == 3 && nf == 3);
        /* rescore 0 returns the int8 scores of the flat search */
        CHECK(a[0].id == f[0].id && a[0].score == f[0].score);
        CHECK(fabsf(b[0].score - a[0].score) < 0.02f);
    }
    mtx_hnsw_free(h0);
    mtx_hnsw_free(h1);
    mtx_vecset_free(s);
}

static int accept_mod3(uint32_t id, void *user)
{
    (void)user;
    return id % 3 == 0;
}

static void test_hnsw_filter_honoured(void **state)
{
    struct mt_vec_filter f = {accept_mod3, NULL};
    struct mt_vec_hit h[K];
    uint32_t q, i, n;
    (void)state;
    for (q = 0; q < 20; q++) {
        CHECK_OK(mtx_hnsw_search(idx, queries + q * DIMS, K, 0, &f, h, &n));
        CHECK(n == K);
        for (i = 0; i < n; i++)
            CHECK(h[i].id % 3 == 0);
    }
}

static void test_hnsw_small_and_empty(void **state)
{
    struct mt_vecset *s;
    struct mt_hnsw *h, *o;
    struct mt_vec_hit hits[10];
    char path[128];
    uint32_t n, i;
    (void)state;
    snprintf(path, sizeof path, "%s/empty.hnsw", tmpdir);
    CHECK_OK(mtx_vecset_new(DIMS, NULL, &s));
    CHECK_OK(mtx_hnsw_build(s, NULL, &h));
    CHECK_OK(mtx_hnsw_search(h, queries, 10, 0, NULL, hits, &n));
    CHECK(n == 0);
    CHECK_OK(mtx_hnsw_write(h, path, NULL));
    CHECK_OK(mtx_hnsw_open(path, &o, NULL));
    CHECK_OK(mtx_hnsw_search(o, queries, 10, 0, NULL, hits, &n));
    CHECK(n == 0 && mtx_hnsw_count(o) == 0);
    mtx_hnsw_free(o);
    mtx_hnsw_free(h);
    for (i = 0; i < 5; i++) /* k > n */
        CHECK_OK(mtx_vecset_add(s, data + i * DIMS, NULL));
    CHECK_OK(mtx_hnsw_build(s, NULL, &h));
    CHECK_OK(mtx_hnsw_search(h, data + 2 * DIMS, 10, 3, NULL, hits, &n));
    CHECK(n == 5 && hits[0].id == 2);
    CHECK(fabsf(hits[0].score - 1.0f) < 0.01f);
    CHECK_OK(mtx_hnsw_search(h, data, 0, 0, NULL, hits, &n));
    CHECK(n == 0);
    mtx_hnsw_free(h);
    mtx_vecset_free(s);
    mtx_hnsw_free(NULL);
}

static void test_hnsw_rejects_bad_params(void **state)
{
    struct mt_hnsw_params p = mtx_hnsw_default_params();
    struct mt_hnsw *h = (struct mt_hnsw *)1;
    struct mt_vec_hit hit = {0, 0.0f};
    float zero[DIMS] = {0};
    uint32_t n;
    (void)state;
    p.M = 1;
    CHECK(mtx_hnsw_build(vs, &p, &h) == MT_EINVAL && h == NULL);
    CHECK(mtx_hnsw_search(idx, zero, 1, 0, NULL, &hit, &n) == MT_EINVAL);
    CHECK(n == 0);
}

struct job {
    const struct mt_hnsw *h;
    uint32_t first;
    struct mt_vec_hit out[50 * K];
    int ok;
};

static void *search_job(void *arg)
{
    struct job *j = arg;
    uint32_t q, n;
    int round;
    j->ok = 1;
    for (round = 0; round < 3; round++)
        for (q = 0; q < 50; q++)
            j->ok &= mtx_hnsw_search(j->h, queries + (j->first + q) * DIMS, K,
                                     0, NULL, j->out + q * K, &n) == MT_OK &&
                     n == K;
    return NULL;
}

static void test_hnsw_concurrent_search_matches_serial(void **state)
{
    static struct mt_vec_hit serial[N_QUERIES * K];
    static struct job jobs[4];
    pthread_t t[4];
    int i;
    (void)state;
    search_all(idx, serial);
    for (i = 0; i < 4; i++) {
        jobs[i].h = idx;
        jobs[i].first = (uint32_t)i * 50;
        CHECK(pthread_create(&t[i], NULL, search_job, &jobs[i]) == 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(jobs[i].ok);
        CHECK(memcmp(jobs[i].out, serial + i * 50 * K, sizeof jobs[i].out) ==
              0);
    }
}

static void test_hnsw_oom_loop(void **state)
{
    struct mt_hnsw_params p = mtx_hnsw_default_params();
    struct mt_vecset *s;
    struct mt_vec_hit hits[5];
    long i;
    int ok = 0;
    uint32_t j, n;
    (void)state;
    CHECK_OK(mtx_vecset_new(DIMS, NULL, &s));
    for (j = 0; j < 300; j++)
        CHECK_OK(mtx_vecset_add(s, data + j * DIMS, NULL));
    p.threads = 4; /* the parallel build's failure paths */
    for (i = 0; !ok && i < 200; i++) {
        struct mt_hnsw *h = (struct mt_hnsw *)1;
        enum mt_status st;
        mt_alloc_fail_after(i);
        st = mtx_hnsw_build(s, &p, &h);
        CHECK(st == MT_OK || (st == MT_ENOMEM && h == NULL));
        if (st == MT_OK) /* the first search allocates its scratch */
            st = mtx_hnsw_search(h, data, 5, 0, NULL, hits, &n);
        mt_alloc_fail_reset();
        CHECK(st == MT_OK || st == MT_ENOMEM);
        ok = st == MT_OK;
        mtx_hnsw_free(h);
    }
    print_message("hnsw build succeeded after %ld injected failures\n", i - 1);
    CHECK(ok && i > 5 && n == 5);
    mtx_vecset_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hnsw_default_recall_at_least_095),
        cmocka_unit_test(test_hnsw_parallel_build_keeps_recall),
        cmocka_unit_test(test_hnsw_hits_sorted_and_distinct),
        cmocka_unit_test(test_hnsw_round_trip_identical),
        cmocka_unit_test(test_hnsw_build_is_deterministic),
        cmocka_unit_test(test_hnsw_rejects_truncated_and_flipped),
        cmocka_unit_test(test_hnsw_rejects_bad_graph_with_valid_checksum),
        cmocka_unit_test(test_hnsw_opens_file_written_before_segments),
        cmocka_unit_test(test_hnsw_links_elias_fano_and_packed),
        cmocka_unit_test(test_hnsw_opens_version2_file),
        cmocka_unit_test(test_hnsw_opens_version3_file),
        cmocka_unit_test(test_hnsw_default_ef_grows_with_size),
        cmocka_unit_test(test_hnsw_rescore_modes),
        cmocka_unit_test(test_hnsw_filter_honoured),
        cmocka_unit_test(test_hnsw_small_and_empty),
        cmocka_unit_test(test_hnsw_rejects_bad_params),
        cmocka_unit_test(test_hnsw_concurrent_search_matches_serial),
        cmocka_unit_test(test_hnsw_oom_loop),
    };
    return cmocka_run_group_tests_name("hnsw", tests, setup, teardown);
}
