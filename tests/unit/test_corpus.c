/* Unit tests for src/corpus: SHA-1 against the FIPS 180 vectors, white
 * space folding (its fast path against the plain rule), the store's delete and
 * whole-chunk puts, and an import that survives every allocation failure. */
#include "check.h"

#include <unistd.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"
#include "medtrust/corpus.h"
#include "medtrust/store.h"

static char tmpl[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpl, sizeof tmpl, "/tmp/mt-corpus-XXXXXX");
    return mkdtemp(tmpl) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    return system(cmd);
}

static void test_sha1_matches_fips_vectors(void **state)
{
    char hex[41];
    char *million = malloc(1000000);
    (void)state;
    mtx_sha1_hex("abc", 3, hex);
    CHECK(strcmp(hex, "a9993e364706816aba3e25717850c26c9cd0d89d") == 0);
    mtx_sha1_hex("", 0, hex);
    CHECK(strcmp(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709") == 0);
    mtx_sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
                 hex);
    CHECK(strcmp(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1") == 0);
    memset(million, 'a', 1000000);
    mtx_sha1_hex(million, 1000000, hex);
    CHECK(strcmp(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f") == 0);
    free(million);
}

static void test_squash_folds_runs_and_trims(void **state)
{
    struct mt_buf b = MT_BUF_INIT(64);
    (void)state;
    CHECK_OK(mtx_buf_append_str(&b, "\n\t  a  b\r\n\tc  "));
    mtx_squash_space(&b);
    CHECK(strcmp(b.data, "a b c") == 0 && b.len == 5);
    mtx_buf_free(&b);
}

/* The rule, written plainly: runs of white space become one space, none
 * at either end. mtx_squash_space's fast path must give the same. */
static size_t squash_plain(const char *in, size_t n, char *out)
{
    size_t i, o = 0;
    int space = 1;

    for (i = 0; i < n; i++) {
        if (strchr(" \t\n\r", in[i]) && in[i]) {
            space = 1;
            continue;
        }
        if (space && o > 0)
            out[o++] = ' ';
        space = 0;
        out[o++] = in[i];
    }
    return o;
}

static void test_squash_matches_the_plain_rule(void **state)
{
    static const char alphabet[] = " \t\n\rab\x01\xc3";
    char in[16], want[16];
    unsigned seed = 7, k, i, n;
    (void)state;

    for (k = 0; k < 20000; k++) {
        struct mt_buf b = MT_BUF_INIT(64);
        size_t wn;

        n = k % 13;
        for (i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        wn = squash_plain(in, n, want);
        CHECK_OK(mtx_buf_append(&b, in, n));
        CHECK_OK(mtx_buf_reserve(&b, 1));
        mtx_squash_space(&b);
        CHECK(b.len == wn && memcmp(b.data, want, wn) == 0 && !b.data[wn]);
        mtx_buf_free(&b);
    }
}

static enum mt_status total_fn(const struct mt_store_counts *c, void *user)
{
    if (!c->source)
        *(struct mt_store_counts *)user = *c;
    return MT_OK;
}

static void test_store_delete_and_whole_chunk(void **state)
{
    char dir[128];
    struct mt_store *s = NULL;
    struct mt_store_counts t = {NULL, 0, 0, 0};
    struct mt_doc d = {"a", NULL, "one two three four five six", 27, NULL};
    struct mt_store_params sp;
    struct mt_put_result r;
    int64_t src = 0;
    int deleted = -1;
    (void)state;
    snprintf(dir, sizeof dir, "%s/del", tmpl);
    mt_store_default_params(&sp);
    sp.chunk_size = 10;
    sp.chunk_overlap = 2;
    CHECK_OK(mt_store_open(dir, &sp, &s, NULL));
    CHECK_OK(mt_store_source(s, "x", &src, NULL));
    CHECK_OK(mt_store_put_chunk(s, src, &d, &r, NULL));
    CHECK(r.chunks == 1);
    d.ext_id = "b";
    CHECK_OK(mt_store_put(s, src, &d, &r, NULL));
    CHECK(r.chunks > 1);
    CHECK_OK(mt_store_delete(s, src, "b", &deleted, NULL));
    CHECK(deleted == 1);
    CHECK_OK(mt_store_delete(s, src, "b", &deleted, NULL));
    CHECK(deleted == 0);
    CHECK_OK(mt_store_stats(s, total_fn, &t, NULL));
    CHECK(t.documents == 1 && t.chunks == 1); /* b's chunks went with it */
    mt_store_close(s);
}

static enum mt_status oom_import(const char *dir, const char *file)
{
    struct mt_store *s = NULL;
    struct mt_import_params p;
    const char *paths[1] = {file};
    enum mt_status st = mt_store_open(dir, NULL, &s, NULL);

    mt_import_default_params(&p);
    p.store = s;
    if (st == MT_OK)
        st = mt_import("pubmed", paths, 1, &p, NULL, NULL);
    mt_store_close(s);
    return st;
}

static void test_import_survives_every_allocation_failure(void **state)
{
    char dir[128];
    char file[512];
    struct mt_store *s = NULL;
    struct mt_store_counts t = {NULL, 0, 0, 0};
    enum mt_status st = MT_ENOMEM;
    long n;
    (void)state;
    snprintf(dir, sizeof dir, "%s/oom", tmpl);
    test_data_path(file, sizeof file, "formats/pubmed/pubmed2.xml");
    for (n = 0; n < 20000 && st != MT_OK; n += 7) {
        mt_alloc_fail_after(n);
        st = oom_import(dir, file);
        mt_alloc_fail_reset();
        CHECK(st == MT_OK || st == MT_ENOMEM || st == MT_EDB || st == MT_EIO ||
              st == MT_ELIMIT);
    }
    CHECK(st == MT_OK);
    CHECK(n > 50);
    CHECK_OK(mt_store_open(dir, NULL, &s, NULL));
    CHECK_OK(mt_store_check(s, NULL));
    CHECK_OK(mt_store_stats(s, total_fn, &t, NULL));
    CHECK(t.documents == 2);
    mt_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha1_matches_fips_vectors),
        cmocka_unit_test(test_squash_folds_runs_and_trims),
        cmocka_unit_test(test_squash_matches_the_plain_rule),
        cmocka_unit_test(test_store_delete_and_whole_chunk),
        cmocka_unit_test(test_import_survives_every_allocation_failure),
    };
    return cmocka_run_group_tests_name("corpus", tests, setup, teardown);
}
