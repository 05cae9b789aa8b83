/* Unit tests for src/text: UTF-8 validation, NFKC + case folding, JSON
 * string literals against jansson's, and the english/arabic/cjk/simple
 * analyzers, with OOM loops. */
#include "check.h"

#include "core/arena.h"
#include "medtrust/core.h"
#include "text/analyzer.h"
#include "text/json_str.h"
#include "text/utf8.h"

#include <jansson.h>

static void test_utf8_validate_rejects_bad_forms(void **state)
{
    size_t bad = 99;
    (void)state;
    CHECK_OK(mtx_utf8_validate("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                               13, &bad));
    /* overlong '/' (2 and 3 bytes) */
    CHECK(mtx_utf8_validate("ab\xc0\xaf", 4, &bad) == MT_EPARSE);
    CHECK(bad == 2);
    CHECK(mtx_utf8_validate("\xe0\x80\xaf", 3, &bad) == MT_EPARSE);
    CHECK(bad == 0);
    /* surrogate U+D800 */
    CHECK(mtx_utf8_validate("x\xed\xa0\x80", 4, &bad) == MT_EPARSE);
    CHECK(bad == 1);
    /* truncated 3-byte sequence at the end */
    CHECK(mtx_utf8_validate("abc\xe2\x82", 5, &bad) == MT_EPARSE);
    CHECK(bad == 3);
    /* above U+10FFFF and a stray continuation byte */
    CHECK(mtx_utf8_validate("\xf4\x90\x80\x80", 4, &bad) == MT_EPARSE);
    CHECK(mtx_utf8_validate("a\x80", 2, &bad) == MT_EPARSE && bad == 1);
    CHECK(mtx_utf8_count("a\xc3\xa9\xe2\x82\xac\x80", 7) == 4);
}

static void test_utf8_decode_and_encode(void **state)
{
    int32_t cp = 0;
    char out[4];
    (void)state;
    CHECK(mtx_utf8_decode("\xe2\x82\xac", 3, &cp) == 3 && cp == 0x20AC);
    CHECK(mtx_utf8_decode("\xe2\x82", 2, &cp) == 1 && cp == -1);
    CHECK(mtx_utf8_decode("", 0, &cp) == 0);
    CHECK(mtx_utf8_encode(0x1F600, out) == 4);
    CHECK(memcmp(out, "\xf0\x9f\x98\x80", 4) == 0);
    CHECK(mtx_utf8_encode(0xD800, out) == 0);
}

/* ==== mtx_utf8_step against an oracle built from the encoder ====
 * A sequence is well-formed exactly when it is the encoding of a Unicode
 * scalar value (mtx_utf8_encode, through utf8proc), and cut short exactly
 * when it is a proper prefix of one; the decoder must agree on every
 * 1..3-byte input and every 4-byte input after F0..F4. */

static unsigned char *short_prefix[4]; /* bitmaps by prefix length 1..3 */

static int bit(const unsigned char *map, uint32_t i)
{
    return (map[i >> 3] >> (i & 7)) & 1;
}

static uint32_t prefix_key(const unsigned char *b, size_t n)
{
    uint32_t k = 0;
    size_t i;

    for (i = 0; i < n; i++)
        k = (k << 8) | b[i];
    return k;
}

static void build_prefixes(void)
{
    char enc[4];
    int32_t cp;
    size_t len, m;

    for (m = 1; m < 4; m++)
        short_prefix[m] = calloc((size_t)1 << (8 * m - 3), 1);
    for (cp = 0; cp <= 0x10FFFF; cp++) {
        len = mtx_utf8_encode(cp, enc);
        for (m = 1; m < len; m++) {
            uint32_t k = prefix_key((const unsigned char *)enc, m);

            short_prefix[m][k >> 3] |= (unsigned char)(1u << (k & 7));
        }
    }
}

/* The oracle: the length of the encoding b starts with, else -1 when
 * b[0..n) is a proper prefix of one, else 0. */
static int oracle_step(const unsigned char *b, size_t n, int32_t *cp)
{
    static const unsigned char lead_bits[] = {0, 0x80, 0xE0, 0xF0, 0xF8};
    char enc[4];
    size_t len, i;

    for (len = 1; len <= 4 && len <= n; len++) {
        int32_t v = b[0] & (len == 1 ? 0x7F : 0x7F >> len);

        if ((b[0] & lead_bits[len]) != (unsigned char)(lead_bits[len] << 1))
            continue;
        for (i = 1; i < len; i++)
            v = (v << 6) | (b[i] & 0x3F);
        if (mtx_utf8_encode(v, enc) == len && memcmp(enc, b, len) == 0) {
            *cp = v;
            return (int)len;
        }
    }
    if (n == 0 || (n < 4 && bit(short_prefix[n], prefix_key(b, n))))
        return MTX_UTF8_SHORT;
    return 0;
}

static int agrees(const unsigned char *b, size_t n)
{
    int32_t want = -7, got = -7;
    int k = oracle_step(b, n, &want);

    return mtx_utf8_step((const char *)b, n, &got) == k &&
           (k <= 0 || got == want);
}

static void test_utf8_step_matches_the_encoder(void **state)
{
    static const unsigned char last[] = {0x00, 0x3F, 0x7F, 0x80, 0x81,
                                         0x8F, 0x90, 0x9F, 0xA0, 0xBE,
                                         0xBF, 0xC0, 0xFF};
    unsigned char b[4];
    uint32_t i, lead, bad = 0;
    (void)state;
    build_prefixes();
    CHECK(agrees(b, 0));
    for (i = 0; i < (1u << 24); i++) {
        b[0] = (unsigned char)(i >> 16);
        b[1] = (unsigned char)(i >> 8);
        b[2] = (unsigned char)i;
        bad += !agrees(b, 3);
        if ((i & 0xFFFF) == 0)
            bad += !agrees(b, 1);
        if ((i & 0xFF) == 0)
            bad += !agrees(b, 2);
    }
    /* 4 bytes: every second and third byte, the last at the edges of
     * the ranges Table 3-7 uses */
    for (lead = 0xF0; lead <= 0xF4; lead++)
        for (i = 0; i < (1u << 16) * sizeof last; i++) {
            b[0] = (unsigned char)lead;
            b[1] = (unsigned char)(i >> 8 & 0xFF);
            b[2] = (unsigned char)i;
            b[3] = last[i >> 16];
            bad += !agrees(b, 4);
        }
    CHECK(bad == 0);
    /* the folded answer: anything but a length is one bad byte */
    CHECK(mtx_utf8_step("\xe2\x82", 2, &(int32_t){0}) == MTX_UTF8_SHORT);
    CHECK(mtx_utf8_step("\xe2\x28", 2, &(int32_t){0}) == 0);
    for (i = 1; i < 4; i++)
        free(short_prefix[i]);
}

static void check_fold(const char *in, const char *want)
{
    char *out = NULL;
    size_t n = 0;

    CHECK_OK(mtx_text_fold(in, strlen(in), &out, &n, NULL));
    CHECK(n == strlen(want));
    CHECK(strcmp(out, want) == 0);
    mt_free(out);
}

static void test_fold_nfkc_and_case(void **state)
{
    struct mt_error err;
    char *out = NULL;
    size_t n;
    (void)state;
    check_fold("\xef\xac\x81", "fi"); /* fi ligature */
    check_fold("Stra\xc3\x9f"
               "e",
               "strasse");                        /* sharp s */
    check_fold("\xef\xbc\x91\xef\xbc\x92", "12"); /* full-width digits */
    check_fold("CAF\xc3\x89", "caf\xc3\xa9");     /* stays composed */
    check_fold("Cafe\xcc\x81", "caf\xc3\xa9");    /* composes */
    check_fold("", "");
    CHECK(mtx_text_fold("ok\xff", 3, &out, &n, &err) == MT_EPARSE);
    CHECK(out == NULL);
    CHECK(strstr(err.msg, "byte 2") != NULL);
}

static void test_fold_oom_loop(void **state)
{
    long k;
    (void)state;
    for (k = 0; k < 10; k++) {
        char *out = NULL;
        size_t n;
        enum mt_status st;

        mt_alloc_fail_after(k);
        st = mtx_text_fold("Stra\xc3\x9f"
                           "e",
                           7, &out, &n, NULL);
        mt_alloc_fail_reset();
        if (st == MT_OK) {
            CHECK(strcmp(out, "strasse") == 0);
            mt_free(out);
            return;
        }
        CHECK(st == MT_ENOMEM && out == NULL);
    }
    CHECK(0);
}

/* Runs analyzer 'name' on 'text' and joins "tok@pos" with spaces. */
static void analyze(const char *name, const char *text, size_t n, char *buf,
                    size_t cap)
{
    struct mt_analyzer *a = NULL;
    struct mt_arena ar = MT_ARENA_INIT(4096);
    struct mt_token *t = NULL;
    size_t count = 0;
    size_t i;
    size_t used = 0;

    CHECK_OK(mtx_analyzer_new(name, &a, NULL));
    CHECK(strcmp(mtx_analyzer_name(a), name) == 0);
    CHECK_OK(mtx_analyzer_collect(a, text, n, &ar, &t, &count, NULL));
    buf[0] = '\0';
    for (i = 0; i < count; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s@%u",
                                 i ? " " : "", t[i].p, t[i].position);
    mtx_arena_free(&ar);
    mtx_analyzer_free(a);
}

#define ANALYZE(name, lit, buf)                                                \
    analyze(name, lit, sizeof(lit) - 1, buf, sizeof buf)

static void test_english_stops_and_stems(void **state)
{
    char got[512];
    (void)state;
    ANALYZE("english", "The patient is running; the patient's dogs.", got);
    CHECK(strcmp(got, "patient@1 run@3 patient@5 dog@6") == 0);
    ANALYZE("english", "Diabetes and diabetic Neuropathy", got);
    CHECK(strcmp(got, "diabet@0 diabet@2 neuropathi@3") == 0);
    ANALYZE("english",
            "T 38.5, BP 120/80 \xef\xac\x81"
            "brosis",
            got);
    CHECK(strcmp(got, "t@0 38.5@1 bp@2 120@3 80@4 fibrosi@5") == 0);
    ANALYZE("english", "", got);
    CHECK(strcmp(got, "") == 0);
}

static void test_simple_folds_without_stemming(void **state)
{
    char got[512];
    (void)state;
    ANALYZE("simple",
            "The RUNNING Stra\xc3\x9f"
            "e-\xef\xbc\x91",
            got);
    CHECK(strcmp(got, "the@0 running@1 strasse@2 1@3") == 0);
}

static void test_arabic_stems_and_drops_stops(void **state)
{
    char got[512];
    (void)state;
    /* "in the hospital and the patients" : "في" is a stop word */
    ANALYZE("arabic",
            "\xd9\x81\xd9\x8a \xd8\xa7\xd9\x84\xd9\x85\xd8\xb3"
            "\xd8\xaa\xd8\xb4\xd9\x81\xd9\x89",
            got);
    CHECK(strncmp(got, "\xd9\x85\xd8\xb3\xd8\xaa\xd8\xb4\xd9\x81", 10) == 0);
    CHECK(strstr(got, "@1") != NULL);
    CHECK(strstr(got, "@0") == NULL);
}

static void test_cjk_bigrams_and_mixed(void **state)
{
    char got[512];
    (void)state;
    ANALYZE("cjk", "\xe7\xb3\x96\xe5\xb0\xbf\xe7\x97\x85", got); /* 糖尿病 */
    CHECK(strcmp(got, "\xe7\xb3\x96\xe5\xb0\xbf@0 "
                      "\xe5\xb0\xbf\xe7\x97\x85@1") == 0);
    /* 男，50岁 BP 110mmHg: a lone Han character is a unigram */
    ANALYZE("cjk",
            "\xe7\x94\xb7\xef\xbc\x8c"
            "50\xe5\xb2\x81 BP 110mmHg",
            got);
    CHECK(strcmp(got, "\xe7\x94\xb7@0 50@1 \xe5\xb2\x81@2 bp@3 "
                      "110mmhg@4") == 0);
    /* half-width katakana folds to full width: ｶﾀ -> カタ */
    ANALYZE("cjk", "\xef\xbd\xb6\xef\xbe\x80", got);
    CHECK(strcmp(got, "\xe3\x82\xab\xe3\x82\xbf@0") == 0);
}

static void test_invalid_utf8_is_skipped(void **state)
{
    char got[512];
    (void)state;
    ANALYZE("english",
            "bad\xff\xfe"
            "bytes \xc0\xaf ok\xe2\x82",
            got);
    CHECK(strcmp(got, "bad@0 byte@1 ok@2") == 0);
    ANALYZE("cjk",
            "\xe7\xb3\x96\xe7\xb3"
            "x",
            got);
    CHECK(strcmp(got, "\xe7\xb3\x96@0 x@1") == 0);
}

static void test_unknown_analyzer_lists_names(void **state)
{
    struct mt_analyzer *a = NULL;
    struct mt_error err;
    (void)state;
    CHECK(mtx_analyzer_new("klingon", &a, &err) == MT_EINVAL);
    CHECK(a == NULL);
    CHECK(strstr(err.msg, "english") && strstr(err.msg, "cjk"));
}

static enum mt_status stop_after_two(const char *tok, size_t n, uint32_t pos,
                                     void *user)
{
    (void)tok;
    (void)n;
    *(int *)user += 1;
    return pos >= 1 ? MT_ECANCELED : MT_OK;
}

static void test_callback_status_stops_run(void **state)
{
    struct mt_analyzer *a = NULL;
    int calls = 0;
    (void)state;
    CHECK_OK(mtx_analyzer_new("simple", &a, NULL));
    CHECK(mtx_analyzer_run(a, "a b c d", 7, stop_after_two, &calls, NULL) ==
          MT_ECANCELED);
    CHECK(calls == 2);
    mtx_analyzer_free(a);
}

static enum mt_status oom_once(long k, const char *name)
{
    static const char text[] =
        "Patients with diabetes \xc3\xa9tudes \xe7\xb3\x96\xe5\xb0\xbf "
        "\xd9\x81\xd9\x8a \xd8\xa7\xd9\x84\xd9\x85\xd8\xb1\xd9\x8a\xd8\xb6";
    struct mt_analyzer *a = NULL;
    struct mt_arena ar = MT_ARENA_INIT(64);
    struct mt_token *t = NULL;
    size_t count = 0;
    enum mt_status st;

    mt_alloc_fail_after(k);
    st = mtx_analyzer_new(name, &a, NULL);
    if (st == MT_OK)
        st = mtx_analyzer_collect(a, text, sizeof text - 1, &ar, &t, &count,
                                  NULL);
    mt_alloc_fail_reset();
    if (st == MT_OK)
        CHECK(count >= 4);
    mtx_analyzer_free(a);
    mtx_arena_free(&ar);
    return st;
}

static void test_analyzer_oom_loop(void **state)
{
    static const char *const names[] = {"english", "arabic", "cjk", "simple"};
    size_t i;
    (void)state;
    for (i = 0; i < 4; i++) {
        long k;
        enum mt_status st = MT_ENOMEM;

        for (k = 0; k < 200 && st == MT_ENOMEM; k++) {
            st = oom_once(k, names[i]);
            CHECK(st == MT_OK || st == MT_ENOMEM);
        }
        CHECK(st == MT_OK);
        CHECK(k > 1);
    }
}

/* Concatenates every token, '|'-separated, into out. */
static void tokens_of(struct mt_analyzer *a, const char *text, char *out,
                      size_t cap)
{
    struct mt_arena arena = MT_ARENA_INIT(4096);
    struct mt_token *t = NULL;
    size_t n = 0, i, len = 0;

    CHECK_OK(mtx_analyzer_collect(a, text, strlen(text), &arena, &t, &n, NULL));
    out[0] = '\0';
    for (i = 0; i < n && len + t[i].n + 2 < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s|", t[i].p);
    mtx_arena_free(&arena);
}

/* The stem cache must never change a stem: the same text through a warm
 * analyzer, a cold one, and with thousands of colliding words between. */
static void test_analyzer_stem_cache_is_transparent(void **state)
{
    static char text[200000], warm[200000], cold[200000], noise[120000];
    struct mt_analyzer *a = NULL;
    struct mt_analyzer *b = NULL;
    size_t i, len = 0;
    (void)state;
    for (i = 0; i < 8000 && len < sizeof noise - 32; i++)
        len += (size_t)snprintf(noise + len, sizeof noise - len, "w%zurunning ",
                                i * 7919);
    snprintf(text, sizeof text,
             "running runners ran easily diabetic "
             "diabetes hospitalizations hospitalized nationalization "
             "generously");
    CHECK_OK(mtx_analyzer_new("english", &a, NULL));
    CHECK_OK(mtx_analyzer_new("english", &b, NULL));
    tokens_of(a, text, warm, sizeof warm);  /* fills the cache */
    tokens_of(a, noise, cold, sizeof cold); /* evicts many slots */
    tokens_of(a, text, warm, sizeof warm);
    tokens_of(b, text, cold, sizeof cold);
    CHECK(strcmp(warm, cold) == 0);
    CHECK(strstr(warm, "run|runner|ran|easili|diabet|diabet|") != NULL);
    mtx_analyzer_free(a);
    mtx_analyzer_free(b);
}

/* mtx_json_str writes what jansson's json_dumps writes for the same
 * string, and refuses what json_stringn refuses (not UTF-8): random
 * strings over escapes, controls, DEL, NUL, multi-byte and broken
 * sequences. */
static void test_json_str_matches_jansson(void **state)
{
    static const char *const parts[] = {"a",
                                        "Zq ",
                                        "\"",
                                        "\\",
                                        "/",
                                        "\n",
                                        "\t",
                                        "\r",
                                        "\b",
                                        "\f",
                                        "\x01",
                                        "\x1f",
                                        "\x7f",
                                        "\0",
                                        "\xc3\xa9",
                                        "\xe2\x82\xac",
                                        "\xf0\x9f\x98\x80",
                                        "\x80",
                                        "\xc0\xaf",
                                        "\xed\xa0\x80",
                                        "\xe2\x82",
                                        "\xf4\x90\x80\x80",
                                        "<&>"};
    char in[256], want[2048];
    unsigned seed = 11, k, i;
    (void)state;

    for (k = 0; k < 20000; k++) {
        struct mt_buf b = MT_BUF_INIT(4096);
        size_t n = 0, wn = 0;
        json_t *j;
        enum mt_status st;

        CHECK_OK(mtx_buf_append(&b, "x", 1));
        for (i = 0; i < k % 24; i++) {
            const char *p;
            size_t pn;

            seed = seed * 1103515245u + 12345u;
            p = parts[(seed >> 16) % (sizeof parts / sizeof parts[0])];
            pn = p[0] ? strlen(p) : 1; /* "\0" is one NUL byte */
            memcpy(in + n, p, pn);
            n += pn;
        }
        j = json_stringn(in, n);
        if (j)
            wn = json_dumpb(j, want, sizeof want, JSON_ENCODE_ANY);
        st = mtx_json_str(&b, in, n);
        if (!j) {
            CHECK(st == MT_EPARSE);
            CHECK(b.len == 1 && b.data[1] == '\0'); /* as it was */
        } else {
            CHECK_OK(st);
            CHECK(wn > 0 && wn < sizeof want);
            CHECK(b.len == wn + 1 && memcmp(b.data + 1, want, wn) == 0);
        }
        json_decref(j);
        mtx_buf_free(&b);
    }
}

static void test_json_str_limit_leaves_buffer(void **state)
{
    struct mt_buf b = MT_BUF_INIT(8);
    (void)state;
    CHECK_OK(mtx_json_str(&b, "ab", 2));
    CHECK(strcmp(b.data, "\"ab\"") == 0);
    CHECK(mtx_json_str(&b, "\n\n", 2) == MT_ELIMIT);
    CHECK(b.len == 4 && strcmp(b.data, "\"ab\"") == 0);
    mtx_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analyzer_stem_cache_is_transparent),
        cmocka_unit_test(test_utf8_validate_rejects_bad_forms),
        cmocka_unit_test(test_utf8_decode_and_encode),
        cmocka_unit_test(test_utf8_step_matches_the_encoder),
        cmocka_unit_test(test_fold_nfkc_and_case),
        cmocka_unit_test(test_fold_oom_loop),
        cmocka_unit_test(test_english_stops_and_stems),
        cmocka_unit_test(test_simple_folds_without_stemming),
        cmocka_unit_test(test_arabic_stems_and_drops_stops),
        cmocka_unit_test(test_cjk_bigrams_and_mixed),
        cmocka_unit_test(test_invalid_utf8_is_skipped),
        cmocka_unit_test(test_unknown_analyzer_lists_names),
        cmocka_unit_test(test_callback_status_stops_run),
        cmocka_unit_test(test_analyzer_oom_loop),
        cmocka_unit_test(test_json_str_matches_jansson),
        cmocka_unit_test(test_json_str_limit_leaves_buffer),
    };
    return cmocka_run_group_tests_name("text", tests, NULL, NULL);
}
