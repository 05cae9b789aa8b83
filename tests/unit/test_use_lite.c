/* Unit tests for the use-lite embedder: tokens and vectors against golden
 * files from the package's own JavaScript (tests/use_lite/make_golden.js),
 * bad input, corrupted weight files, truncation, threads and int8. */
#include "check.h"

#include <jansson.h>
#include <math.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "model/cache.h"
#include "model/embed.h"
#include "model/embed_window.h"
#include "model/use_lite.h"

#define GOLDEN "tests/use_lite/"
#define N_VEC 200
#define DIM 512

struct golden {
    char **texts;
    size_t *lens;
    size_t n;
    float *vecs; /* N_VEC * DIM */
};

static struct golden G;

/* ==== Fixtures ==== */

static char *expand(json_t *o, size_t *len)
{
    json_t *t = json_object_get(o, "text");
    json_int_t rep = json_integer_value(json_object_get(o, "repeat"));
    size_t n = json_string_length(t), times = rep > 0 ? (size_t)rep : 1, i;
    char *s = malloc(n * times + 1);

    assert_non_null(s);
    for (i = 0; i < times; i++)
        memcpy(s + i * n, json_string_value(t), n);
    s[n * times] = '\0';
    *len = n * times;
    return s;
}

static void load_sentences(void)
{
    FILE *f = fopen(GOLDEN "sentences.jsonl", "r");
    char line[1 << 16];
    size_t cap = 0;

    assert_non_null(f);
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, JSON_ALLOW_NUL, NULL);
        assert_non_null(o);
        if (G.n == cap) {
            cap = cap ? cap * 2 : 64;
            G.texts = realloc(G.texts, cap * sizeof *G.texts);
            G.lens = realloc(G.lens, cap * sizeof *G.lens);
            assert_true(G.texts && G.lens);
        }
        G.texts[G.n] = expand(o, &G.lens[G.n]);
        G.n++;
        json_decref(o);
    }
    fclose(f);
}

static int setup(void **state)
{
    FILE *f;

    (void)state;
    load_sentences();
    G.vecs = malloc(N_VEC * DIM * sizeof *G.vecs);
    f = fopen(GOLDEN "vectors.f32", "rb");
    if (!G.vecs || !f ||
        fread(G.vecs, sizeof *G.vecs, N_VEC * DIM, f) != N_VEC * DIM)
        return -1;
    fclose(f);
    return G.n >= 500 ? 0 : -1;
}

static int teardown(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < G.n; i++)
        free(G.texts[i]);
    free(G.texts);
    free(G.lens);
    free(G.vecs);
    return 0;
}

static struct mt_str text_at(size_t i)
{
    struct mt_str s = {G.texts[i], G.lens[i]};
    return s;
}

static struct mt_embedder *open_embedder(const char *spec, uint32_t threads,
                                         uint32_t batch, uint32_t dims)
{
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    struct mt_error err;

    mt_embedder_default_params(&p);
    p.threads = threads;
    p.batch_size = batch;
    p.dims = dims;
    p.window_pool = MT_EMBED_POOL_FIRST; /* TF.js cuts at 128 tokens */
    if (mt_embedder_open(spec, &p, &e, &err) != MT_OK)
        print_error("open %s: %s\n", spec, err.msg);
    assert_non_null(e);
    return e;
}

static float *embed_all(struct mt_embedder *e, const struct mt_str *t, size_t n)
{
    float *v = malloc(n * mt_embedder_dims(e) * sizeof *v);
    struct mt_error err;

    assert_non_null(v);
    if (mt_embedder_embed(e, t, n, v, &err) != MT_OK)
        fail_msg("embed: %s", err.msg);
    return v;
}

/* Worst cosine and max |diff| of rows a vs b. */
static void compare(const float *a, const float *b, size_t n, size_t d,
                    double *min_cos, double *max_diff)
{
    size_t i, j;

    *min_cos = 1.0;
    *max_diff = 0.0;
    for (i = 0; i < n; i++) {
        double dot = 0, na = 0, nb = 0;
        for (j = 0; j < d; j++) {
            double x = a[i * d + j], y = b[i * d + j];
            dot += x * y;
            na += x * x;
            nb += y * y;
            *max_diff = fmax(*max_diff, fabs(x - y));
        }
        *min_cos = fmin(*min_cos, dot / sqrt(na * nb));
    }
}

/* ==== Tokenizer ==== */

static void test_tokenizer_matches_js_on_all_sentences(void **state)
{
    struct mt_ul_model *m = NULL;
    char *path = mtx_ul_find_weights(NULL);
    FILE *f = fopen(GOLDEN "tokens.jsonl", "r");
    char *line = malloc(1 << 20);
    size_t i = 0, bad = 0;

    (void)state;
    assert_true(path && f && line);
    CHECK_OK(mtx_ul_model_open(path, &m, NULL));
    for (i = 0; fgets(line, 1 << 20, f); i++) {
        json_t *a = json_loads(line, 0, NULL);
        int32_t *ids = NULL;
        size_t n = 0, j, same;
        assert_true(a && i < G.n);
        CHECK_OK(mtx_ul_tokenize(m, text_at(i), &ids, &n));
        same = n == json_array_size(a);
        for (j = 0; same && j < n; j++)
            same = ids[j] == json_integer_value(json_array_get(a, j));
        if (!same && bad++ < 5)
            print_message("token mismatch on sentence %zu: %.60s\n", i,
                          G.texts[i]);
        mt_free(ids);
        json_decref(a);
    }
    print_message("tokenizer: %zu sentences, %zu mismatches\n", i, bad);
    CHECK(i == G.n && bad == 0);
    fclose(f);
    free(line);
    mt_free(path);
    mtx_ul_model_close(m);
}

/* ==== Vectors ==== */

static void test_vectors_match_js(void **state)
{
    struct mt_embedder *e;
    struct mt_str t[N_VEC];
    double min_cos, max_diff;
    float *v;
    size_t i;

    (void)state;
    setenv("MEDTRUST_UL_GEMM", "f32", 1); /* the exact path */
    e = open_embedder("use-lite", 2, 32, 0);
    unsetenv("MEDTRUST_UL_GEMM");
    for (i = 0; i < N_VEC; i++)
        t[i] = text_at(i);
    CHECK(mt_embedder_dims(e) == DIM);
    CHECK(strcmp(mt_embedder_name(e), "use-lite") == 0);
    v = embed_all(e, t, N_VEC);
    compare(v, G.vecs, N_VEC, DIM, &min_cos, &max_diff);
    print_message("float32 vs TF.js: min cosine %.7f, max abs diff %.3g "
                  "over %d sentences\n",
                  min_cos, max_diff, N_VEC);
    CHECK(min_cos >= 0.999);
    CHECK(max_diff <= 1e-4);
    free(v);
    mt_embedder_close(e);
}

static void test_windows_cover_long_texts(void **state)
{
    size_t off, n;
    float v[3 * 4] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1};
    float m[4];

    (void)state;
    CHECK(mtx_embed_windows(128, 128, 32, MT_EMBED_POOL_MEAN) == 1);
    CHECK(mtx_embed_windows(300, 128, 32, MT_EMBED_POOL_FIRST) == 1);
    /* 300 tokens, stride 96: [0,128) [96,224) [172,300) */
    CHECK(mtx_embed_windows(300, 128, 32, MT_EMBED_POOL_MEAN) == 3);
    mtx_embed_window_at(300, 128, 32, 1, &off, &n);
    CHECK(off == 96 && n == 128);
    mtx_embed_window_at(300, 128, 32, 2, &off, &n);
    CHECK(off == 172 && n == 128);
    mtx_embed_window_at(20, 128, 32, 0, &off, &n);
    CHECK(off == 0 && n == 20);
    mtx_embed_pool_vectors(v, 3, 4, MT_EMBED_POOL_MEAN, m);
    CHECK(fabsf(m[0] - 0.57735f) < 1e-5f && m[2] == 0.0f);
    v[1] = 0.5f;
    mtx_embed_pool_vectors(v, 3, 4, MT_EMBED_POOL_MAX, m);
    CHECK(fabsf(m[1] - 0.57735f) < 1e-5f && m[2] == 0.0f);
}

/* A text of over 128 tokens: the embedder's mean and max vectors equal
 * the pooled forward passes of its windows, computed here from the
 * tokens; a short text is the same under every mode. */
static void test_long_text_is_pooled_over_windows(void **state)
{
    char *path = mtx_ul_find_weights(NULL);
    struct mt_ul_model *m = NULL;
    const char *s = "Metformin lowers blood glucose in type 2 diabetes. ";
    char text[4096] = "";
    struct mt_str t;
    int32_t *ids = NULL;
    size_t len, i, nw;
    int mode;

    (void)state;
    for (i = 0; i < 20; i++)
        strcat(text, s);
    t = mtx_str_from(text);
    CHECK_OK(mtx_ul_model_open(path, &m, NULL));
    CHECK_OK(mtx_ul_tokenize(m, t, &ids, &len));
    nw = mtx_embed_windows(len, MT_UL_MAX_LEN, 32, MT_EMBED_POOL_MEAN);
    CHECK(len > 2 * MT_UL_MAX_LEN && nw >= 3);
    for (mode = MT_EMBED_POOL_MEAN; mode <= MT_EMBED_POOL_FIRST; mode++) {
        struct mt_embedder_params p;
        struct mt_embedder *e = NULL;
        const int32_t *wid[8];
        size_t wl[8], off;
        float want[DIM], got[DIM], wv[8 * DIM];
        size_t k = mode == MT_EMBED_POOL_FIRST ? 1 : nw;
        mt_embedder_default_params(&p);
        p.window_pool = (enum mt_embed_pool)mode;
        setenv("MEDTRUST_UL_GEMM", "f32", 1); /* as m computes */
        CHECK_OK(mt_embedder_open("use-lite", &p, &e, NULL));
        unsetenv("MEDTRUST_UL_GEMM");
        CHECK_OK(mt_embedder_embed(e, &t, 1, got, NULL));
        for (i = 0; i < k; i++) {
            mtx_embed_window_at(len, MT_UL_MAX_LEN, 32, i, &off, &wl[i]);
            wid[i] = ids + off;
        }
        CHECK_OK(mtx_ul_forward(&m->w, wid, wl, k, wv, NULL));
        mtx_embed_pool_vectors(wv, k, DIM, (enum mt_embed_pool)mode, want);
        for (i = 0; i < DIM; i++)
            CHECK(fabsf(want[i] - got[i]) < 1e-5f);
        mt_embedder_close(e);
    }
    mt_free(ids);
    mtx_ul_model_close(m);
    mt_free(path);
}

static void test_threads_and_batch_sizes_agree(void **state)
{
    struct mt_embedder *a = open_embedder(NULL, 1, 1, 0);
    struct mt_embedder *b = open_embedder("use-lite", 3, 7, 0);
    struct mt_str t[40];
    double min_cos, max_diff;
    float *va, *vb;
    size_t i;

    (void)state;
    for (i = 0; i < 40; i++)
        t[i] = text_at(i * 5);
    va = embed_all(a, t, 40);
    vb = embed_all(b, t, 40);
    compare(va, vb, 40, DIM, &min_cos, &max_diff);
    CHECK(max_diff <= 1e-6);
    free(va);
    free(vb);
    mt_embedder_close(a);
    mt_embedder_close(b);
}

static void test_matryoshka_truncates_and_renormalises(void **state)
{
    struct mt_embedder *full = open_embedder("use-lite", 1, 0, 0);
    struct mt_embedder *cut = open_embedder("use-lite", 1, 0, 128);
    struct mt_str t[2] = {MT_STR_C("Aspirin for headache."), MT_STR_C("")};
    float *vf, *vc;
    size_t i, j;

    (void)state;
    CHECK(mt_embedder_dims(cut) == 128);
    vf = embed_all(full, t, 2);
    vc = embed_all(cut, t, 2);
    for (i = 0; i < 2; i++) {
        double ss = 0, nf = 0;
        for (j = 0; j < 128; j++) {
            double c = vc[i * 128 + j], f = vf[i * DIM + j];
            ss += c * c;
            nf += f * f;
        }
        CHECK(fabs(ss - 1.0) < 1e-5);
        for (j = 0; j < 128; j++) {
            double c = vc[i * 128 + j], f = vf[i * DIM + j];
            CHECK(fabs(c - f / sqrt(nf)) < 1e-6);
        }
    }
    free(vf);
    free(vc);
    mt_embedder_close(full);
    mt_embedder_close(cut);
}

/* ==== Bad input ==== */

struct log_seen {
    int truncated;
};

static void log_sink(enum mt_log_level level, const char *msg, void *user)
{
    struct log_seen *s = user;

    (void)level;
    if (strstr(msg, "truncated"))
        s->truncated++;
}

static int finite_unit(const float *v)
{
    double ss = 0;
    size_t j;

    for (j = 0; j < DIM; j++) {
        if (!isfinite(v[j]))
            return 0;
        ss += (double)v[j] * (double)v[j];
    }
    return fabs(ss - 1.0) < 1e-4;
}

static void test_bad_input_gives_vectors(void **state)
{
    static const char bad_utf8[] = "caf\xc3 \xff\xfe\xed\xa0\x80 ok \xf0\x9f";
    struct mt_embedder *e = open_embedder("use-lite", 2, 4, 0);
    size_t big_n = 100 * 1024, i;
    char *big = malloc(big_n);
    struct log_seen seen = {0};
    struct mt_str t[6];
    float *v;

    (void)state;
    assert_non_null(big);
    for (i = 0; i < big_n; i++)
        big[i] = "Hypertension is common. "[i % 24];
    t[0] = (struct mt_str){NULL, 0};
    t[1] = MT_STR_C("x");
    t[2] = (struct mt_str){big, big_n};
    t[3] = (struct mt_str){bad_utf8, sizeof bad_utf8 - 1};
    t[4] = (struct mt_str){"\0\0\0", 3};
    t[5] = MT_STR_C("\xe2\x96\x81");
    mt_log_set(log_sink, &seen, MT_LOG_DEBUG);
    v = embed_all(e, t, 6);
    mt_log_set(NULL, NULL, MT_LOG_INFO);
    for (i = 0; i < 6; i++)
        CHECK(finite_unit(v + i * DIM));
    CHECK(seen.truncated == 1);
    free(v);
    free(big);
    mt_embedder_close(e);
}

static void test_invalid_utf8_reads_as_replacement_chars(void **state)
{
    struct mt_ul_model *m = NULL;
    char *path = mtx_ul_find_weights(NULL);
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;

    (void)state;
    assert_non_null(path);
    CHECK_OK(mtx_ul_model_open(path, &m, NULL));
    /* Node decodes ED A0 80 (a surrogate) as three U+FFFD */
    CHECK_OK(mtx_ul_tokenize(m, MT_STR_C("a\xed\xa0\x80z \xc3"), &a, &na));
    CHECK_OK(mtx_ul_tokenize(
        m, MT_STR_C("a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz \xef\xbf\xbd"), &b,
        &nb));
    CHECK(na == nb && na > 0 && memcmp(a, b, na * sizeof *a) == 0);
    mt_free(a);
    mt_free(b);
    mt_free(path);
    mtx_ul_model_close(m);
}

/* ==== Weight file ==== */

static char *copy_weights(char *tmpl)
{
    char *path = mtx_ul_find_weights(NULL);
    FILE *in, *out;
    char buf[1 << 16];
    size_t got;
    int fd = mkstemp(tmpl);

    assert_true(path && fd >= 0);
    in = fopen(path, "rb");
    out = fdopen(fd, "wb");
    assert_true(in && out);
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
        assert_true(fwrite(buf, 1, got, out) == got);
    fclose(in);
    fclose(out);
    mt_free(path);
    return tmpl;
}

static void poke(const char *path, long off, unsigned char x)
{
    FILE *f = fopen(path, "r+b");
    int c;

    assert_non_null(f);
    fseek(f, off, SEEK_SET);
    c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ x, f);
    fclose(f);
}

static void expect_open_fails(const char *path, const char *needle)
{
    char spec[512];
    struct mt_embedder *e = NULL;
    struct mt_error err;

    snprintf(spec, sizeof spec, "use-lite:%s", path);
    CHECK(mt_embedder_open(spec, NULL, &e, &err) != MT_OK);
    CHECK(e == NULL);
    if (!strstr(err.msg, needle))
        fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_corrupted_weight_file_is_refused(void **state)
{
    char tmpl[] = "/tmp/mt-use-lite-XXXXXX";
    char *path = copy_weights(tmpl);

    (void)state;
    /* CRC-32 (IEEE)'s check value, and continuing a CRC across calls */
    CHECK(mtx_ul_crc32(0, "123456789", 9) == 0xCBF43926u);
    CHECK(mtx_ul_crc32(mtx_ul_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u);
    poke(path, 20 << 20, 0x10); /* one bit deep in the tensors */
    expect_open_fails(path, "checksum");
    poke(path, 20 << 20, 0x10);
    poke(path, 8, 0xFF); /* the version */
    expect_open_fails(path, "version");
    poke(path, 8, 0xFF);
    CHECK(truncate(path, 1 << 20) == 0);
    expect_open_fails(path, "truncated");
    CHECK(truncate(path, 10) == 0);
    expect_open_fails(path, "not a use-lite weight file");
    expect_open_fails("/nonexistent/use-lite.mtw", "No such file");
    unlink(path);
}

static void test_specs_dispatch(void **state)
{
    struct mt_embedder *e = NULL;
    struct mt_error err;

    (void)state;
    /* The gguf and openai backends are reached through the same spec
     * table; their own behaviour is tested in test_llm_*. */
    CHECK(mt_embedder_open("gguf:/nonexistent/m.gguf", NULL, &e, &err) !=
          MT_OK);
    CHECK(strstr(err.msg, "/nonexistent/m.gguf") != NULL);
    CHECK(mt_embedder_open("openai:", NULL, &e, &err) != MT_OK);
    CHECK(e == NULL);
    CHECK(mt_embedder_open("use-litex", NULL, &e, &err) == MT_EINVAL);
    CHECK(e == NULL);
}

static void test_open_survives_every_allocation_failure(void **state)
{
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    long n;

    (void)state;
    mt_embedder_default_params(&p);
    p.threads = 1;
    for (n = 0; n < 100 && !e; n++) {
        mt_alloc_fail_after(n);
        if (mt_embedder_open("use-lite", &p, &e, NULL) != MT_OK)
            CHECK(e == NULL);
        mt_alloc_fail_reset();
    }
    CHECK(e != NULL && n > 1);
    mt_embedder_close(e);
}

/* ==== int8 ==== */

static void test_int8_variant_accuracy(void **state)
{
    char out[] = "/tmp/mt-use-lite-i8-XXXXXX";
    const char *b = getenv("MEDTRUST_BUILD");
    char cmd[1024];
    char spec[64];
    struct mt_embedder *e;
    struct mt_str t[N_VEC];
    double min_cos, max_diff;
    float *v;
    size_t i;
    int fd = mkstemp(out);

    (void)state;
    if (access("third_party/use-lite/dist/model.json", R_OK) != 0)
        MISSING("third_party/use-lite/dist/model.json");
    assert_true(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd,
             "%s/tools/use_lite_convert --int8 third_party/use-lite/dist %s",
             b ? b : "build", out);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
    snprintf(spec, sizeof spec, "use-lite:%s", out);
    e = open_embedder(spec, 2, 32, 0);
    for (i = 0; i < N_VEC; i++)
        t[i] = text_at(i);
    v = embed_all(e, t, N_VEC);
    compare(v, G.vecs, N_VEC, DIM, &min_cos, &max_diff);
    print_message("int8 vs TF.js: min cosine %.5f, max abs diff %.3g\n",
                  min_cos, max_diff);
    CHECK(min_cos >= 0.99);
    free(v);
    mt_embedder_close(e);
    unlink(out);
}

/* ==== int8 GEMM ==== */

static uint32_t lcg(uint32_t *x)
{
    *x = *x * 1664525u + 1013904223u;
    return *x >> 8;
}

static float rnd(uint32_t *x)
{
    return (float)lcg(x) / (float)(1u << 24) - 0.5f; /* [-0.5, 0.5) */
}

/* Every quantised row reads back within half a step, zeros exactly, and
 * the AVX-512 path writes the same bytes as the portable one. */
static void test_quant_rows_read_back(void **state)
{
    enum { M = 5, K = 64 };
    static float a[M * K];
    uint8_t u[M * K], u2[M * K];
    float sc[M], sc2[M];
    int32_t z[M], z2[M];
    struct mt_ul_qact qa = {u, sc, z}, ref = {u2, sc2, z2};
    uint32_t seed = 7;
    size_t r, j;

    (void)state;
    for (j = 0; j < M * K; j++)
        a[j] = rnd(&seed) * 10.0f;
    for (j = 0; j < K; j++) {
        a[K + j] = fabsf(a[K + j]); /* ReLU-like: all >= 0 */
        a[2 * K + j] = 0.0f;        /* all zero */
        a[3 * K + j] = -fabsf(a[3 * K + j]);
    }
    a[4 * K + 3] = 0.0f;
    mtx_ul_quant_rows(a, M, K, &qa);
    mtx_ul_quant_rows_ref(a, M, K, &ref);
    CHECK(memcmp(u, u2, sizeof u) == 0 && memcmp(z, z2, sizeof z) == 0);
    CHECK(memcmp(sc, sc2, sizeof sc) == 0);
    for (r = 0; r < M; r++)
        for (j = 0; j < K; j++) {
            float x = a[r * K + j];
            float back = sc[r] * (float)((int32_t)u[r * K + j] - z[r]);
            CHECK(fabsf(back - x) <= 0.5f * sc[r] * 1.001f);
            if (x == 0.0f)
                CHECK(u[r * K + j] == z[r]);
        }
    CHECK(z[1] == 0 && z[3] == 255);
}

/* mtx_ul_gemm_q (VNNI here when the CPU has it) equals the portable loop
 * bit for bit, with a row tail and a panel tail, and is within the
 * quantisation error of the float32 GEMM. */
static void test_int8_gemm_paths_agree(void **state)
{
    enum { M = 13, K = 96, N = 80 };
    static float a[M * K], b[K * N], bias[N], cf[M * N], c1[M * N], c2[M * N];
    static uint8_t u[M * K];
    float sc[M];
    int32_t z[M];
    struct mt_ul_qact qa = {u, sc, z};
    struct mt_ul_qmat q;
    uint32_t seed = 42;
    double worst = 0.0, big = 0.0;
    size_t i;

    (void)state;
    for (i = 0; i < M * K; i++)
        a[i] = rnd(&seed) * 4.0f;
    for (i = 0; i < K * N; i++)
        b[i] = rnd(&seed); /* packed panels: any order is a matrix */
    for (i = 0; i < N; i++)
        bias[i] = rnd(&seed);
    CHECK(mtx_ul_qmat_init(&q, b, K, 70) == MT_EINVAL);
    CHECK_OK(mtx_ul_qmat_init(&q, b, K, N));
    mtx_ul_quant_rows(a, M, K, &qa);
    mtx_ul_gemm_q(&qa, M, &q, bias, c1);
    mtx_ul_gemm_q_ref(&qa, M, &q, bias, c2);
    mtx_ul_gemm(a, M, K, b, bias, N, cf);
    print_message("int8 GEMM on %s\n", mtx_ul_have_vnni() ? "VNNI" : "C");
    CHECK(memcmp(c1, c2, sizeof c1) == 0);
    for (i = 0; i < M * N; i++) {
        worst = fmax(worst, fabs((double)c1[i] - (double)cf[i]));
        big = fmax(big, fabs((double)cf[i]));
    }
    print_message("int8 vs float32 GEMM: max abs diff %.3g of %.3g\n", worst,
                  big);
    CHECK(worst > 0.0 && worst < 0.02 * big);
    mtx_ul_qmat_free(&q);
}

/* softmax(scale * Q K^T) V of one head in double, as the graph states
 * it: the reference both attention paths are held to. */
static void attend_double(const float *qkv, size_t ld, size_t len, size_t din,
                          size_t c0, float scale, double *out)
{
    size_t dh = din / MT_UL_HEADS, i, j, d;
    double s[MT_UL_MAX_LEN];

    for (i = 0; i < len; i++) {
        double mx = -INFINITY, sum = 0.0;
        for (j = 0; j < len; j++) {
            double dot = 0.0;
            for (d = 0; d < dh; d++)
                dot += (double)qkv[i * ld + c0 + d] *
                       (double)qkv[j * ld + din + c0 + d];
            s[j] = dot * (double)scale;
            mx = fmax(mx, s[j]);
        }
        for (j = 0; j < len; j++)
            sum += s[j] = exp(s[j] - mx);
        for (d = 0; d < dh; d++) {
            double o = 0.0;
            for (j = 0; j < len; j++)
                o += s[j] / sum * (double)qkv[j * ld + 2 * din + c0 + d];
            out[i * dh + d] = o;
        }
    }
}

/* Worst |path - reference| over one head; columns outside the head
 * must keep the sentinel. */
static double attend_error(int v8, const float *qkv, size_t len, size_t din,
                           size_t h, float *scratch, float *att, double *ref)
{
    size_t dh = din / MT_UL_HEADS, ld = 3 * din, i, d;
    float scale = 1.0f / sqrtf((float)dh);
    double worst = 0.0;

    for (i = 0; i < len * din; i++)
        att[i] = 1234.5f;
    if (v8)
        mtx_ul_attend_v8(qkv, ld, len, din, h * dh, scale, scratch, att);
    else
        mtx_ul_attend(qkv, ld, len, din, h * dh, scale, scratch, att);
    attend_double(qkv, ld, len, din, h * dh, scale, ref);
    for (i = 0; i < len; i++)
        for (d = 0; d < din; d++) {
            double got = att[i * din + d];
            if (d / dh != h)
                CHECK(got == 1234.5);
            else
                worst = fmax(worst, fabs(got - ref[i * dh + d % dh]));
        }
    return worst;
}

/* Both attention paths (AVX-512 here when the CPU has it, and the 8-lane
 * one, AVX2 when the CPU has it) match the double-precision reference
 * for every length class (one key, a partial panel, exact panels, 128),
 * both head widths, every head, and scores large enough that most
 * weights underflow (values in [-1, 1): outputs too). */
static void test_attention_matches_reference(void **state)
{
    static const size_t lens[] = {1,  2,  7,  15,  16,  17,
                                  20, 33, 64, 100, 127, 128};
    /* scores up to about 1 and up to about 100: float32 itself is then
     * off by about 1e-7 and 1e-5 of a score (the bounds' reason) */
    static const float amp[] = {2.0f, 24.0f};
    static const double bound[] = {2e-6, 1e-4};
    size_t ld = 3 * DIM, li, l, h, i;
    float *qkv = malloc(MT_UL_MAX_LEN * ld * sizeof *qkv);
    float *att = malloc(MT_UL_MAX_LEN * DIM * sizeof *att);
    float *scratch = malloc(MT_UL_ATT_SCRATCH * sizeof *scratch);
    double *ref = malloc(MT_UL_MAX_LEN * DIM * sizeof *ref);
    uint32_t seed = 11;
    int a, v8;

    (void)state;
    assert_true(qkv && att && scratch && ref);
    for (a = 0; a < 2; a++) {
        double worst[2] = {0.0, 0.0};
        for (li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (l = 0; l < 2; l++) {
                size_t din = l ? 512 : 256, len = lens[li];
                for (i = 0; i < len * 3 * din; i++) /* Q, K scaled; V not */
                    qkv[i] =
                        rnd(&seed) * (i % (3 * din) < 2 * din ? amp[a] : 2.0f);
                for (h = 0; h < MT_UL_HEADS; h++)
                    for (v8 = 0; v8 < 2; v8++)
                        worst[v8] =
                            fmax(worst[v8], attend_error(v8, qkv, len, din, h,
                                                         scratch, att, ref));
            }
        print_message("attention (q, k in [-%g, %g)) vs double: max abs diff "
                      "%.3g (default path), %.3g (8 lanes)\n",
                      (double)amp[a] / 2, (double)amp[a] / 2, worst[0],
                      worst[1]);
        CHECK(worst[0] < bound[a] && worst[1] < bound[a]);
    }
    free(qkv);
    free(att);
    free(scratch);
    free(ref);
}

/* The int8 GEMMs keep every test sentence's vector within cosine 0.999
 * of float32 (and of TF.js), and give the same vectors on any threads. */
static void test_int8_gemm_keeps_cosine(void **state)
{
    struct mt_embedder *f, *q, *q3;
    struct mt_str t[N_VEC];
    double min_cos, max_diff;
    float *vf, *vq, *vq3;
    size_t i;

    (void)state;
    setenv("MEDTRUST_UL_GEMM", "f32", 1);
    f = open_embedder("use-lite", 2, 32, 0);
    setenv("MEDTRUST_UL_GEMM", "int8", 1);
    q = open_embedder("use-lite", 2, 32, 0);
    q3 = open_embedder("use-lite", 3, 5, 0);
    unsetenv("MEDTRUST_UL_GEMM");
    for (i = 0; i < N_VEC; i++)
        t[i] = text_at(i);
    vf = embed_all(f, t, N_VEC);
    vq = embed_all(q, t, N_VEC);
    vq3 = embed_all(q3, t, N_VEC);
    compare(vq, vf, N_VEC, DIM, &min_cos, &max_diff);
    print_message("int8 GEMM vs float32: min cosine %.5f, max abs diff %.3g\n",
                  min_cos, max_diff);
    CHECK(min_cos >= 0.999 && max_diff > 0.0);
    compare(vq, G.vecs, N_VEC, DIM, &min_cos, &max_diff);
    print_message("int8 GEMM vs TF.js: min cosine %.5f\n", min_cos);
    CHECK(min_cos >= 0.999);
    CHECK(memcmp(vq, vq3, N_VEC * DIM * sizeof *vq) == 0);
    mt_embedder_close(f);
    f = NULL;
    setenv("MEDTRUST_UL_GEMM", "bf16", 1);
    CHECK(mt_embedder_open("use-lite", NULL, &f, NULL) == MT_EINVAL);
    CHECK(f == NULL);
    unsetenv("MEDTRUST_UL_GEMM");
    free(vf);
    free(vq);
    free(vq3);
    mt_embedder_close(q);
    mt_embedder_close(q3);
}

/* The CRC-32 in the header of the weights a bare "use-lite" spec finds. */
static uint32_t weights_crc(void)
{
    char *path = mtx_ul_find_weights(NULL);
    struct mt_ul_model *m = NULL;
    uint32_t crc;

    CHECK(path != NULL);
    CHECK_OK(mtx_ul_model_open(path, &m, NULL));
    crc = ((const struct mt_ul_header *)m->map)->checksum;
    mtx_ul_model_close(m);
    mt_free(path);
    return crc;
}

/* The generic embedder cache is really read: a vector planted under the
 * key of a text (shape, GEMM precision and weights, pooling, text) comes
 * back instead of a fresh embedding, and a different output size is a
 * different key. */
static void test_embedder_cache_is_read_and_keyed(void **state)
{
    char db[] = "/tmp/mt-embcache-XXXXXX";
    char key[96];
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    struct mt_cache *c = NULL;
    struct mt_str t = MT_STR_C("hello cache");
    static float v[512], planted[512], w[64];
    int fd = mkstemp(db);
    (void)state;
    CHECK(fd >= 0);
    close(fd);
    mt_embedder_default_params(&p);
    p.cache_path = db;
    setenv("MEDTRUST_UL_GEMM", "f32", 1); /* the key names it */
    CHECK_OK(mt_embedder_open("use-lite", &p, &e, NULL));
    unsetenv("MEDTRUST_UL_GEMM");
    CHECK_OK(mt_embedder_embed(e, &t, 1, v, NULL));
    planted[0] = 1.0f;
    CHECK_OK(mtx_cache_open(db, &c, NULL));
    CHECK(mtx_cache_count(c) == 1);
    snprintf(key, sizeof key, "512|1|f32 %08x|first|hello cache",
             (unsigned)weights_crc());
    CHECK_OK(mtx_cache_put(c, "use-lite", "use-lite", key, planted,
                           sizeof planted, NULL));
    mtx_cache_close(c);
    CHECK_OK(mt_embedder_embed(e, &t, 1, v, NULL));
    CHECK(v[0] == 1.0f && v[1] == 0.0f);
    mt_embedder_close(e);
    p.dims = 64;
    CHECK_OK(mt_embedder_open("use-lite", &p, &e, NULL));
    CHECK_OK(mt_embedder_embed(e, &t, 1, w, NULL));
    CHECK(w[1] != 0.0f); /* 64-d output: its own key, a real vector */
    mt_embedder_close(e);
    unlink(db);
}

/* Embeds t with MEDTRUST_UL_GEMM=gemm, through the cache at db (NULL:
 * none). */
static void embed_gemm(const char *gemm, const char *db, struct mt_str t,
                       float *v)
{
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;

    mt_embedder_default_params(&p);
    p.cache_path = db;
    setenv("MEDTRUST_UL_GEMM", gemm, 1);
    CHECK_OK(mt_embedder_open("use-lite", &p, &e, NULL));
    unsetenv("MEDTRUST_UL_GEMM");
    CHECK_OK(mt_embedder_embed(e, &t, 1, v, NULL));
    mt_embedder_close(e);
}

/* One cache shared by float32 and int8 GEMMs serves each its own vectors
 * (closing6.md: the key ignored the precision, so whichever ran first
 * was served to both). */
static void test_embedder_cache_keeps_gemm_precisions_apart(void **state)
{
    char db[] = "/tmp/mt-embcache-XXXXXX";
    struct mt_str t = MT_STR_C("aspirin for chest pain");
    static float vf[DIM], vq[DIM], ref[DIM], again[DIM];
    struct mt_cache *c = NULL;
    int fd = mkstemp(db);

    (void)state;
    CHECK(fd >= 0);
    close(fd);
    embed_gemm("f32", db, t, vf);
    embed_gemm("int8", db, t, vq);
    embed_gemm("int8", NULL, t, ref);
    CHECK(memcmp(vq, ref, sizeof vq) == 0);
    CHECK(memcmp(vq, vf, sizeof vq) != 0);
    embed_gemm("f32", NULL, t, ref);
    embed_gemm("f32", db, t, again);
    CHECK(memcmp(vf, ref, sizeof vf) == 0 && memcmp(again, vf, sizeof vf) == 0);
    CHECK_OK(mtx_cache_open(db, &c, NULL));
    CHECK(mtx_cache_count(c) == 2);
    mtx_cache_close(c);
    unlink(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedder_cache_is_read_and_keyed),
        cmocka_unit_test(test_embedder_cache_keeps_gemm_precisions_apart),
        cmocka_unit_test(test_tokenizer_matches_js_on_all_sentences),
        cmocka_unit_test(test_vectors_match_js),
        cmocka_unit_test(test_threads_and_batch_sizes_agree),
        cmocka_unit_test(test_matryoshka_truncates_and_renormalises),
        cmocka_unit_test(test_bad_input_gives_vectors),
        cmocka_unit_test(test_invalid_utf8_reads_as_replacement_chars),
        cmocka_unit_test(test_corrupted_weight_file_is_refused),
        cmocka_unit_test(test_specs_dispatch),
        cmocka_unit_test(test_open_survives_every_allocation_failure),
        cmocka_unit_test(test_int8_variant_accuracy),
        cmocka_unit_test(test_quant_rows_read_back),
        cmocka_unit_test(test_int8_gemm_paths_agree),
        cmocka_unit_test(test_attention_matches_reference),
        cmocka_unit_test(test_int8_gemm_keeps_cosine),
        cmocka_unit_test(test_windows_cover_long_texts),
        cmocka_unit_test(test_long_text_is_pooled_over_windows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
