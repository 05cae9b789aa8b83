/* Unit tests for src/index vec and simd: truncation, int8 quantisation,
 * kernels, flat search (int8 and float), and the vector file format. */
#include "check.h"
#include "legacy_vec.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/simd.h"
#include "index/vec.h"
#include "medtrust/core.h"

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float rng_uniform(void) /* (0, 1] */
{
    return (float)((double)((rng_next() >> 11) + 1) * 0x1p-53);
}

static float rng_gauss(void)
{
    double u = (double)rng_uniform();
    double v = (double)rng_uniform();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static void random_unit(float *v, uint32_t dims)
{
    uint32_t i;
    for (i = 0; i < dims; i++)
        v[i] = rng_gauss();
    CHECK_OK(mtx_vec_normalize(v, dims));
}

static char tmpdir[64];

static void path_in_tmp(char *buf, size_t n, const char *name)
{
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/mt_test_vec_XXXXXX");
        CHECK(mkdtemp(tmpdir) != NULL);
    }
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

static void test_quantize_error_within_half_step(void **state)
{
    float x[300];
    int8_t c[300];
    uint32_t d;
    uint32_t i;
    (void)state;
    rng_state = 1;
    for (d = 1; d <= 300; d += 37) {
        int saw127 = 0;
        float s;
        for (i = 0; i < d; i++)
            x[i] = rng_gauss() * 3.0f;
        s = mtx_vec_quantize(x, d, c);
        CHECK(s > 0.0f);
        for (i = 0; i < d; i++) {
            CHECK(c[i] >= -127 && c[i] <= 127);
            CHECK(fabsf(x[i] - (float)c[i] * s) <= s * 0.5f + 1e-5f);
            saw127 |= c[i] == 127 || c[i] == -127;
        }
        CHECK(saw127);
    }
    for (i = 0; i < 8; i++)
        x[i] = 0.0f;
    CHECK(mtx_vec_quantize(x, 8, c) == 0.0f);
    for (i = 0; i < 8; i++)
        CHECK(c[i] == 0);
}

static void test_truncate_renormalizes_to_unit(void **state)
{
    float in[768];
    float out[768];
    double s = 0.0;
    uint32_t i;
    (void)state;
    rng_state = 2;
    random_unit(in, 768);
    CHECK_OK(mtx_vec_truncate_normalize(in, 768, 256, out));
    for (i = 0; i < 256; i++)
        s += (double)out[i] * (double)out[i];
    CHECK(fabs(s - 1.0) < 1e-5);
    for (i = 1; i < 256; i++) /* same direction: a common positive ratio */
        CHECK(fabsf(out[i] * in[0] - out[0] * in[i]) < 1e-5f);
    CHECK(out[0] * in[0] > 0.0f);
    CHECK(mtx_vec_truncate_normalize(in, 768, 0, out) == MT_EINVAL);
    CHECK(mtx_vec_truncate_normalize(in, 768, 769, out) == MT_EINVAL);
    memset(in, 0, sizeof in);
    CHECK(mtx_vec_truncate_normalize(in, 768, 16, out) == MT_EINVAL);
    CHECK_OK(mtx_vec_truncate_normalize(out, 256, 256, out)); /* in place */
}

static void fill_i8(int8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = (int8_t)(int)(rng_next() % 256u - 128u);
}

static void test_simd_int8_kernels_match_portable(void **state)
{
    const struct mt_simd_kernels *ref = mtx_simd_level(MT_SIMD_PORTABLE);
    static int8_t a[1027 * 3];
    static int8_t b[1027];
    int32_t want[3];
    int32_t got[3];
    int lv;
    size_t n;
    (void)state;
    rng_state = 3;
    CHECK(mtx_simd_get() != NULL);
    for (lv = 0; lv < MT_SIMD_LEVEL_COUNT; lv++) {
        const struct mt_simd_kernels *k = mtx_simd_level(lv);
        if (!k)
            continue;
        print_message("kernel %s\n", k->name);
        for (n = 1; n <= 1027; n++) {
            fill_i8(a, 3 * n);
            fill_i8(b, n);
            a[0] = -128; /* the widening kernels are exact at -128 too */
            b[0] = -128;
            CHECK(k->dot_i8(a, b, n) == ref->dot_i8(a, b, n));
            ref->dot_i8_batch(b, a, n, 3, n, want);
            k->dot_i8_batch(b, a, n, 3, n, got);
            CHECK(memcmp(want, got, sizeof want) == 0);
        }
    }
}

static void test_simd_float_kernels_agree(void **state)
{
    const struct mt_simd_kernels *ref = mtx_simd_level(MT_SIMD_PORTABLE);
    float a[515];
    float b[515];
    int8_t c[515];
    int lv;
    size_t n;
    size_t i;
    (void)state;
    rng_state = 4;
    for (lv = 0; lv < MT_SIMD_LEVEL_COUNT; lv++) {
        const struct mt_simd_kernels *k = mtx_simd_level(lv);
        if (!k)
            continue;
        for (n = 1; n <= 515; n += 2) {
            double exact = 0.0;
            double exact8 = 0.0;
            for (i = 0; i < n; i++) {
                a[i] = rng_gauss();
                b[i] = rng_gauss();
                c[i] = (int8_t)(int)(rng_next() % 255u - 127u);
                exact += (double)a[i] * (double)b[i];
                exact8 += (double)a[i] * (double)c[i];
            }
            CHECK(fabs((double)k->dot_f32(a, b, n) - exact) < 1e-3);
            CHECK(fabs((double)k->dot_f32_i8(a, c, n) - exact8) < 0.05);
            CHECK(fabs((double)ref->dot_f32(a, b, n) - exact) < 1e-3);
        }
    }
}

static struct mt_vecset *random_set(uint32_t n, uint32_t dims, int keep)
{
    struct mt_vecset_params p = mtx_vecset_default_params();
    struct mt_vecset *vs;
    float v[256];
    uint32_t i;
    uint32_t id;

    p.keep_float = keep;
    CHECK_OK(mtx_vecset_new(dims, &p, &vs));
    for (i = 0; i < n; i++) {
        random_unit(v, dims);
        CHECK_OK(mtx_vecset_add(vs, v, &id));
        CHECK(id == i);
    }
    return vs;
}

static void test_flat_int8_recall_vs_float(void **state)
{
    struct mt_vecset *vs;
    struct mt_vec_hit hf[10];
    struct mt_vec_hit hq[10];
    float q[128];
    uint32_t nf, nq, i, a, b;
    uint32_t found = 0;
    (void)state;
    rng_state = 5;
    vs = random_set(3000, 128, 1);
    for (i = 0; i < 50; i++) {
        random_unit(q, 128);
        CHECK_OK(mtx_vecset_search_float(vs, q, 10, NULL, hf, &nf));
        CHECK_OK(mtx_vecset_search_flat(vs, q, 10, NULL, hq, &nq));
        CHECK(nf == 10 && nq == 10);
        for (a = 0; a < 10; a++) {
            CHECK(a == 0 || hq[a - 1].score >= hq[a].score);
            for (b = 0; b < 10; b++)
                found += hf[a].id == hq[b].id;
        }
        CHECK(fabsf(hf[0].score - hq[0].score) < 0.02f);
    }
    print_message("flat int8 recall@10 vs float: %.3f\n",
                  (double)found / 500.0);
    CHECK(found >= 450);
    mtx_vecset_free(vs);
}

/* Clustered unit vectors (10 Gaussian clusters, noise of norm ~0.8 as in
 * bench/vec_gen.c): neighbours sit close together, which is where the int8
 * codes alone lose recall and the 4-bit residual wins it back. */
static void clustered(float *v, uint32_t n, uint32_t dims)
{
    float c[10][128];
    uint32_t i;
    uint32_t j;

    for (i = 0; i < 10; i++)
        random_unit(c[i], dims);
    for (i = 0; i < n; i++) {
        const float *ci = c[rng_next() % 10];
        for (j = 0; j < dims; j++)
            v[(size_t)i * dims + j] =
                ci[j] + 0.8f * rng_gauss() / sqrtf((float)dims);
        CHECK_OK(mtx_vec_normalize(v + (size_t)i * dims, dims));
    }
}

static uint32_t overlap10(const struct mt_vec_hit *a,
                          const struct mt_vec_hit *b)
{
    uint32_t i;
    uint32_t j;
    uint32_t found = 0;

    for (i = 0; i < 10; i++)
        for (j = 0; j < 10; j++)
            found += a[i].id == b[j].id;
    return found;
}

/* int8 codes alone, + the 2-bit residual, + the 4-bit one (the default):
 * recall of the flat search and the score error each get better in that
 * order. */
static void test_flat_refine_beats_int8(void **state)
{
    enum { N = 4000, D = 128, Q = 40, NS = 3 };
    static const uint32_t bits[NS] = {0, 2, 4};
    struct mt_vecset_params p = mtx_vecset_default_params();
    struct mt_vecset *sets[NS];
    struct mt_vecset *exact;
    struct mt_vec_hit hf[10], h[10];
    float *v = mt_malloc((size_t)(N + Q) * D * sizeof *v);
    uint32_t found[NS] = {0, 0, 0};
    uint32_t i, r, n;
    double err[NS] = {0.0, 0.0, 0.0};
    (void)state;
    CHECK(v != NULL);
    rng_state = 11;
    clustered(v, N + Q, D);
    p.keep_float = 1;
    p.refine = 0;
    CHECK_OK(mtx_vecset_new(D, &p, &exact));
    for (r = 0; r < NS; r++) {
        p.keep_float = 0;
        p.refine = bits[r] != 0;
        p.refine_bits = bits[r] ? bits[r] : 4;
        CHECK_OK(mtx_vecset_new(D, &p, &sets[r]));
        CHECK(mtx_vecset_refine_bits(sets[r]) == bits[r]);
        CHECK(mtx_vecset_refine_bytes(sets[r]) == D * bits[r] / 8);
    }
    for (i = 0; i < N; i++) {
        CHECK_OK(mtx_vecset_add(exact, v + (size_t)i * D, NULL));
        for (r = 0; r < NS; r++)
            CHECK_OK(mtx_vecset_add(sets[r], v + (size_t)i * D, NULL));
    }
    CHECK(mtx_vecset_refine(sets[0], 0) == NULL);
    CHECK(mtx_vecset_refine(sets[1], 0) != NULL);
    for (i = 0; i < Q; i++) {
        const float *q = v + (size_t)(N + i) * D;
        CHECK_OK(mtx_vecset_search_float(exact, q, 10, NULL, hf, &n));
        for (r = 0; r < NS; r++) {
            CHECK_OK(mtx_vecset_search_flat(sets[r], q, 10, NULL, h, &n));
            CHECK(n == 10);
            found[r] += overlap10(hf, h);
            /* scores of the same vector: refined ones are near exact */
            err[r] += fabs((double)mtx_vecset_rescore(sets[r], q, hf[0].id) -
                           (double)hf[0].score);
        }
    }
    print_message("clustered recall@10: int8 %.3f, + 2-bit residual %.3f, "
                  "+ 4-bit %.3f; mean score error %.2e, %.2e, %.2e\n",
                  found[0] / (double)(Q * 10), found[1] / (double)(Q * 10),
                  found[2] / (double)(Q * 10), err[0] / Q, err[1] / Q,
                  err[2] / Q);
    CHECK(found[1] >= found[0] && found[2] >= found[1]);
    CHECK(found[2] >= Q * 10 * 97 / 100);
    /* a uniform error of 1/4 and 1/15 of the code step: 4x and 3.75x */
    CHECK(err[1] * 3.0 < err[0]);
    CHECK(err[2] * 2.5 < err[1]);
    for (r = 0; r < NS; r++)
        mtx_vecset_free(sets[r]);
    mtx_vecset_free(exact);
    mt_free(v);
}

static void test_flat_ties_break_by_id(void **state)
{
    struct mt_vecset *vs;
    struct mt_vec_hit h[6];
    float v[16];
    float w[16];
    uint32_t n, i;
    (void)state;
    rng_state = 6;
    CHECK_OK(mtx_vecset_new(16, NULL, &vs));
    random_unit(v, 16);
    for (i = 0; i < 8; i++) { /* ids 0,2,4,6 copy v; odd ids differ */
        random_unit(w, 16);
        CHECK_OK(mtx_vecset_add(vs, i % 2 ? w : v, NULL));
    }
    CHECK_OK(mtx_vecset_search_flat(vs, v, 3, NULL, h, &n));
    CHECK(n == 3);
    CHECK(h[0].id == 0 && h[1].id == 2 && h[2].id == 4);
    CHECK(h[0].score == h[1].score && h[1].score == h[2].score);
    CHECK_OK(mtx_vecset_search_flat(vs, v, 6, NULL, h, &n));
    CHECK(n == 6 && h[3].id == 6 && h[4].score < h[3].score);
    mtx_vecset_free(vs);
}

static int accept_even(uint32_t id, void *user)
{
    (*(int *)user)++;
    return id % 2 == 0;
}

static void test_flat_filter_and_k_beyond_n(void **state)
{
    struct mt_vecset *vs;
    struct mt_vec_hit h[50];
    int calls = 0;
    struct mt_vec_filter f = {accept_even, &calls};
    float q[32];
    uint32_t n, i;
    (void)state;
    rng_state = 7;
    vs = random_set(40, 32, 1);
    random_unit(q, 32);
    CHECK_OK(mtx_vecset_search_flat(vs, q, 50, &f, h, &n));
    CHECK(n == 20 && calls == 40);
    for (i = 0; i < n; i++)
        CHECK(h[i].id % 2 == 0);
    CHECK_OK(mtx_vecset_search_float(vs, q, 50, &f, h, &n));
    CHECK(n == 20);
    CHECK_OK(mtx_vecset_search_flat(vs, q, 50, NULL, h, &n));
    CHECK(n == 40);
    CHECK_OK(mtx_vecset_search_flat(vs, q, 0, NULL, h, &n));
    CHECK(n == 0);
    mtx_vecset_free(vs);
    CHECK_OK(mtx_vecset_new(32, NULL, &vs)); /* empty set */
    CHECK_OK(mtx_vecset_search_flat(vs, q, 5, NULL, h, &n));
    CHECK(n == 0);
    CHECK(mtx_vecset_search_float(vs, q, 5, NULL, h, &n) == MT_EUNSUPPORTED);
    mtx_vecset_free(vs);
}

static void test_vecset_rejects_bad_input(void **state)
{
    struct mt_vecset *vs = (struct mt_vecset *)1;
    struct mt_vecset_params p = mtx_vecset_default_params();
    struct mt_vec_hit h[2];
    float v[4] = {0, 0, 0, 0};
    uint32_t n;
    (void)state;
    CHECK(mtx_vecset_new(0, NULL, &vs) == MT_EINVAL && vs == NULL);
    CHECK(mtx_vecset_new(MT_VEC_MAX_DIMS + 1, NULL, &vs) == MT_EINVAL);
    p.max_count = 1;
    CHECK_OK(mtx_vecset_new(4, &p, &vs));
    CHECK(mtx_vecset_add(vs, v, NULL) == MT_EINVAL); /* zero vector */
    v[1] = NAN;
    CHECK(mtx_vecset_add(vs, v, NULL) == MT_EINVAL);
    v[1] = 1.0f;
    CHECK_OK(mtx_vecset_add(vs, v, NULL));
    CHECK(mtx_vecset_add(vs, v, NULL) == MT_ELIMIT);
    CHECK(mtx_vecset_count(vs) == 1);
    v[1] = INFINITY;
    CHECK(mtx_vecset_search_flat(vs, v, 2, NULL, h, &n) == MT_EINVAL);
    mtx_vecset_free(vs);
    mtx_vecset_free(NULL);
}

static void flip_byte(const char *path, long off)
{
    FILE *f = fopen(path, "r+b");
    int c;
    CHECK(f != NULL);
    CHECK(fseek(f, off, SEEK_SET) == 0);
    c = fgetc(f);
    CHECK(fseek(f, off, SEEK_SET) == 0);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static void copy_prefix(const char *from, const char *to, long n)
{
    FILE *a = fopen(from, "rb");
    FILE *b = fopen(to, "wb");
    long i;
    CHECK(a && b);
    for (i = 0; i < n; i++)
        fputc(fgetc(a), b);
    fclose(a);
    fclose(b);
}

static void test_vecset_file_round_trip(void **state)
{
    char path[128];
    char bad[128];
    struct mt_vecset *vs;
    struct mt_vecset *vo;
    struct mt_vec_hit h1[10], h2[10];
    struct mt_error err;
    struct stat sb;
    float q[48];
    uint32_t n1, n2;
    (void)state;
    rng_state = 8;
    path_in_tmp(path, sizeof path, "set.vec");
    path_in_tmp(bad, sizeof bad, "bad.vec");
    vs = random_set(500, 48, 1);
    CHECK_OK(mtx_vecset_write(vs, path, &err));
    CHECK(access(bad, F_OK) != 0);
    CHECK_OK(mtx_vecset_open(path, &vo, &err));
    CHECK(mtx_vecset_count(vo) == 500 && mtx_vecset_has_float(vo));
    random_unit(q, 48);
    CHECK_OK(mtx_vecset_search_flat(vs, q, 10, NULL, h1, &n1));
    CHECK_OK(mtx_vecset_search_flat(vo, q, 10, NULL, h2, &n2));
    CHECK(n1 == 10 && n2 == 10 && memcmp(h1, h2, sizeof h1) == 0);
    CHECK(mtx_vecset_add(vo, q, NULL) == MT_EUNSUPPORTED);
    mtx_vecset_free(vo);
    CHECK(stat(path, &sb) == 0);
    copy_prefix(path, bad, sb.st_size - 64);
    CHECK(mtx_vecset_open(bad, &vo, &err) == MT_EPARSE && vo == NULL);
    CHECK(strstr(err.msg, "bad.vec") != NULL);
    copy_prefix(path, bad, 100);
    CHECK(mtx_vecset_open(bad, &vo, &err) == MT_EPARSE);
    /* the vectors' CRCs are left to mtx_vecset_check; the rest's are
     * checked at open (VSCL: the scales, from byte 128) */
    copy_prefix(path, bad, sb.st_size);
    flip_byte(bad, sb.st_size / 2);
    CHECK_OK(mtx_vecset_open(bad, &vo, &err));
    CHECK(mtx_vecset_check(vo, NULL, NULL, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "bad.vec: section 'VFLT' checksum mismatch"));
    mtx_vecset_free(vo);
    copy_prefix(path, bad, sb.st_size);
    flip_byte(bad, 200);
    CHECK(mtx_vecset_open(bad, &vo, &err) == MT_EPARSE && vo == NULL);
    CHECK(strstr(err.msg, "bad.vec: section 'VSCL' checksum mismatch"));
    copy_prefix(path, bad, sb.st_size);
    CHECK_OK(mtx_vecset_open(bad, &vo, &err));
    CHECK_OK(mtx_vecset_check(vo, NULL, NULL, &err));
    CHECK(mtx_vecset_check_bytes(vo) > 500 * 48 * 5);
    CHECK(mtx_vecset_check_bytes(vs) == 0 &&
          mtx_vecset_check(vs, NULL, NULL, &err) == MT_OK);
    mtx_vecset_free(vo);
    copy_prefix(path, bad, sb.st_size);
    flip_byte(bad, 12); /* the format version in the header */
    CHECK(mtx_vecset_open(bad, &vo, &err) == MT_EPARSE);
    path_in_tmp(bad, sizeof bad, "missing.vec");
    CHECK(mtx_vecset_open(bad, &vo, &err) == MT_EIO);
    mtx_vecset_free(vs);
}

/* The u32 format version at offset 12 of the file at path. */
static uint32_t file_version(const char *path)
{
    uint32_t v = 0;
    FILE *f = fopen(path, "rb");
    CHECK(f && fseek(f, 12, SEEK_SET) == 0 && fread(&v, 4, 1, f) == 1);
    fclose(f);
    return v;
}

/* Each component a residual set gives back (the score against a one-hot
 * query) is within half a residual level of the component: 1/30 of the
 * code step with 4 bits, 1/8 with 2. Odd and chunk-crossing dimension
 * counts check the unpacking of a last partial byte and past the 512
 * components the re-scorer unpacks at a time. */
static void test_residual_unpacks_every_component(void **state)
{
    static const uint32_t dims[] = {7, 64, 513};
    struct mt_vecset_params p = mtx_vecset_default_params();
    float x[513], q[513];
    uint32_t d, bits, j, id;
    (void)state;
    rng_state = 21;
    p.normalize = 0;
    for (d = 0; d < 3; d++)
        for (bits = 2; bits <= 4; bits += 2) {
            struct mt_vecset *vs;
            uint32_t n = dims[d];
            double tol;
            p.refine_bits = bits;
            CHECK_OK(mtx_vecset_new(n, &p, &vs));
            for (id = 0; id < 3; id++) {
                random_unit(x, n);
                CHECK_OK(mtx_vecset_add(vs, x, NULL));
            }
            tol = (double)mtx_vecset_scale(vs, 2) *
                      (bits == 2 ? 0.125 : 1.0 / 30) +
                  1e-6;
            memset(q, 0, sizeof q);
            for (j = 0; j < n; j++) {
                q[j] = 1.0f;
                CHECK(fabs((double)mtx_vecset_rescore(vs, q, 2) -
                           (double)x[j]) <= tol);
                q[j] = 0.0f;
            }
            mtx_vecset_free(vs);
        }
}

/* A set with the 2-bit residual is written as version 3 (older binaries
 * refuse it by number) with dims/4 residual bytes a vector and reads back
 * the same; a set without it stays version 2; other widths are refused. */
static void test_vecset_refine2_file(void **state)
{
    struct mt_vecset_params p = mtx_vecset_default_params();
    struct mt_vecset *vs, *vo;
    struct mt_vec_hit h1[10], h2[10];
    struct mt_error err;
    char path[256];
    struct stat s2, s4;
    float v[64];
    uint32_t i, n1, n2, bits;
    (void)state;
    rng_state = 9;
    path_in_tmp(path, sizeof path, "r2.vec");
    for (bits = 2; bits <= 4; bits += 2) {
        p.refine_bits = bits;
        CHECK_OK(mtx_vecset_new(64, &p, &vs));
        for (i = 0; i < 300; i++) {
            random_unit(v, 64);
            CHECK_OK(mtx_vecset_add(vs, v, NULL));
        }
        CHECK_OK(mtx_vecset_write(vs, path, &err));
        CHECK(file_version(path) == (bits == 2 ? 3u : 2u));
        CHECK(stat(path, bits == 2 ? &s2 : &s4) == 0);
        CHECK_OK(mtx_vecset_open(path, &vo, &err));
        CHECK(mtx_vecset_refine_bits(vo) == bits);
        random_unit(v, 64);
        CHECK_OK(mtx_vecset_search_flat(vs, v, 10, NULL, h1, &n1));
        CHECK_OK(mtx_vecset_search_flat(vo, v, 10, NULL, h2, &n2));
        CHECK(n1 == 10 && n2 == 10 && memcmp(h1, h2, sizeof h1) == 0);
        CHECK(mtx_vecset_rescore(vs, v, 7) == mtx_vecset_rescore(vo, v, 7));
        mtx_vecset_free(vo);
        mtx_vecset_free(vs);
    }
    /* 300 vectors x (32 - 16) residual bytes, give or take alignment */
    CHECK(s4.st_size - s2.st_size >= 300 * 16 - 64 &&
          s4.st_size - s2.st_size <= 300 * 16 + 64);
    p.refine_bits = 3;
    vs = (struct mt_vecset *)1;
    CHECK(mtx_vecset_new(64, &p, &vs) == MT_EINVAL && vs == NULL);
    p.refine = 0; /* the width matters only with a residual */
    CHECK_OK(mtx_vecset_new(64, &p, &vs));
    mtx_vecset_free(vs);
}

/* Flat top-5 of each of the 48 vectors in a and b are the same. */
static void same_flat_hits(const struct mt_vecset *a, const struct mt_vecset *b)
{
    struct mt_vec_hit h1[5], h2[5];
    uint32_t n1, n2, i;
    float v[16];
    for (i = 0; i < 48; i++) {
        legacy_vec(i, v);
        CHECK_OK(mtx_vecset_search_flat(a, v, 5, NULL, h1, &n1));
        CHECK_OK(mtx_vecset_search_flat(b, v, 5, NULL, h2, &n2));
        CHECK(n1 == 5 && n2 == 5 && memcmp(h1, h2, sizeof h1) == 0);
        CHECK(h1[0].id == i);
    }
}

static void test_vecset_opens_file_written_before_segments(void **state)
{
    struct mt_vecset_params p = mtx_vecset_default_params();
    struct mt_vecset *fresh, *old, *conv;
    struct mt_error err;
    char path[128];
    char magic[8];
    float v[16];
    uint32_t i;
    FILE *f;
    (void)state;
    p.keep_float = 1;
    CHECK_OK(mtx_vecset_new(16, &p, &fresh));
    for (i = 0; i < 48; i++) {
        legacy_vec(i, v);
        CHECK_OK(mtx_vecset_add(fresh, v, NULL));
    }
    if (mtx_vecset_open("tests/unit/legacy/v1.vec", &old, &err) != MT_OK)
        fail_msg("%s", err.msg);
    CHECK(mtx_vecset_count(old) == 48 && mtx_vecset_dims(old) == 16);
    CHECK(mtx_vecset_has_float(old));
    CHECK(memcmp(mtx_vecset_codes(old), mtx_vecset_codes(fresh), 48 * 16) == 0);
    same_flat_hits(fresh, old);
    path_in_tmp(path, sizeof path, "conv.vec"); /* rewriting converts */
    CHECK_OK(mtx_vecset_write(old, path, &err));
    CHECK_OK(mtx_vecset_open(path, &conv, &err));
    same_flat_hits(old, conv);
    f = fopen(path, "rb");
    CHECK(f && fread(magic, 1, 8, f) == 8 && memcmp(magic, "MTVEC002", 8) == 0);
    fclose(f);
    mtx_vecset_free(conv);
    copy_prefix("tests/unit/legacy/v1.vec", path, 4544);
    flip_byte(path, 2000);
    CHECK(mtx_vecset_open(path, &conv, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "checksum") != NULL && conv == NULL);
    mtx_vecset_free(old);
    mtx_vecset_free(fresh);
}

static void test_vecset_oom_loop(void **state)
{
    long i;
    int ok = 0;
    (void)state;
    for (i = 0; !ok && i < 100; i++) {
        struct mt_vecset *vs = NULL;
        enum mt_status st;
        float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        uint32_t j;
        struct mt_vec_hit h[3];
        uint32_t n;
        struct mt_vecset_params p = mtx_vecset_default_params();
        p.keep_float = 1;
        mt_alloc_fail_after(i);
        st = mtx_vecset_new(8, &p, &vs);
        for (j = 0; st == MT_OK && j < 100; j++) {
            v[j % 8] += 1.0f;
            st = mtx_vecset_add(vs, v, NULL);
        }
        if (st == MT_OK)
            st = mtx_vecset_search_flat(vs, v, 3, NULL, h, &n);
        mt_alloc_fail_reset();
        CHECK(st == MT_OK || st == MT_ENOMEM);
        CHECK(st != MT_ENOMEM || vs == NULL || mtx_vecset_count(vs) == j - 1 ||
              mtx_vecset_count(vs) == 100);
        ok = st == MT_OK;
        mtx_vecset_free(vs);
    }
    CHECK(ok && i > 3);
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    if (tmpdir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            return -1;
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_error_within_half_step),
        cmocka_unit_test(test_truncate_renormalizes_to_unit),
        cmocka_unit_test(test_simd_int8_kernels_match_portable),
        cmocka_unit_test(test_simd_float_kernels_agree),
        cmocka_unit_test(test_flat_int8_recall_vs_float),
        cmocka_unit_test(test_flat_refine_beats_int8),
        cmocka_unit_test(test_vecset_refine2_file),
        cmocka_unit_test(test_residual_unpacks_every_component),
        cmocka_unit_test(test_flat_ties_break_by_id),
        cmocka_unit_test(test_flat_filter_and_k_beyond_n),
        cmocka_unit_test(test_vecset_rejects_bad_input),
        cmocka_unit_test(test_vecset_file_round_trip),
        cmocka_unit_test(test_vecset_opens_file_written_before_segments),
        cmocka_unit_test(test_vecset_oom_loop),
    };
    return cmocka_run_group_tests_name("vec", tests, NULL, teardown);
}
