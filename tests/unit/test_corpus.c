/* Unit tests for src/corpus: SHA-1 against the FIPS 180 vectors, white
 * space folding (its fast path against the plain rule), metadata written
 * directly against jansson's dump of the same object, gzip input (members
 * ending at every edge of a read, garbage after them, damage) against
 * zlib's, the store's delete
 * and whole-chunk puts, and an import that survives every allocation
 * failure. */
#include "check.h"

#include <unistd.h>
#include <zlib.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"
#include "medtrust/corpus.h"
#include "medtrust/store.h"

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("mt-corpus");
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

/* The metadata the importers built with jansson before mtx_meta: a
 * json_t object and json_dumps(JSON_COMPACT | JSON_PRESERVE_ORDER). */
static int jansson_str(json_t *o, const char *key, const char *val)
{
    if (!val || !*val)
        return 0;
    return json_object_set_new(o, key, json_string(val));
}

static int jansson_push(json_t *o, const char *key, const char *val)
{
    json_t *a = json_object_get(o, key);

    if (!a) {
        a = json_array();
        if (!a || json_object_set_new(o, key, a) != 0)
            return -1;
    }
    return json_array_append_new(a, json_string(val));
}

/* Random sets and pushes (keys set again, arrays turned into strings,
 * empty and NULL values, quotes, non-ASCII, bad UTF-8) give jansson's
 * bytes, record after record through one reset mtx_meta; a call jansson
 * refuses, mtx_meta refuses. */
static void test_meta_matches_jansson_dump(void **state)
{
    static const char *const keys[] = {"journal", "year", "authors",
                                       "mesh",    "doi",  "a\"b"};
    static const char *const vals[] = {NULL,          "",           "x",
                                       "Smith J",     "say \"hi\"", "C:\\dir",
                                       "caf\xc3\xa9", "tab\there",  "\xe2\x82",
                                       "1998"};
    struct mtx_meta m;
    char want[4096];
    unsigned seed = 5, rec, op;
    (void)state;

    memset(&m, 0, sizeof m);
    for (rec = 0; rec < 3000; rec++) {
        json_t *o = json_object();
        struct mt_buf got = MT_BUF_INIT(1 << 16);
        size_t wn;

        mtx_meta_reset(&m);
        for (op = 0; op < rec % 12; op++) {
            const char *key, *val;
            int push, jr;
            enum mt_status st;

            seed = seed * 1103515245u + 12345u;
            key = keys[(seed >> 8) % 6];
            val = vals[(seed >> 16) % 10];
            push = (seed >> 24) & 1;
            if (push && !val)
                val = "";
            jr = push ? jansson_push(o, key, val) : jansson_str(o, key, val);
            st =
                push ? mtx_meta_push(&m, key, val) : mtx_meta_str(&m, key, val);
            CHECK((jr == 0) == (st == MT_OK));
            if (jr != 0)
                break; /* the importers give up the record there */
        }
        wn = json_dumpb(o, want, sizeof want,
                        JSON_COMPACT | JSON_PRESERVE_ORDER);
        CHECK_OK(mtx_buf_putc(&got, '{'));
        CHECK_OK(mtx_meta_members(&m, &got));
        CHECK_OK(mtx_buf_putc(&got, '}'));
        if (op == rec % 12) { /* every call succeeded */
            CHECK(wn > 0 && wn < sizeof want);
            CHECK(got.len == wn && memcmp(got.data, want, wn) == 0);
        }
        mtx_buf_free(&got);
        json_decref(o);
    }
    mtx_meta_free(&m);
}

static void test_meta_author_names(void **state)
{
    struct mtx_meta m;
    struct mt_buf given = MT_BUF_INIT(1024), family = MT_BUF_INIT(1024);
    struct mt_buf group = MT_BUF_INIT(64), out = MT_BUF_INIT(2048);
    (void)state;
    memset(&m, 0, sizeof m);
    CHECK_OK(mtx_buf_append_str(&given, " Jane  Q "));
    CHECK_OK(mtx_buf_append_str(&family, "O\"Neil"));
    CHECK_OK(mtx_meta_author(&m, &given, &family, &group));
    mtx_buf_reset(&given);
    CHECK_OK(mtx_meta_author(&m, &given, &family, &group));
    CHECK_OK(mtx_buf_append_str(&group, "The Group"));
    CHECK_OK(mtx_meta_author(&m, &given, &family, &group));
    mtx_buf_reset(&family);
    mtx_buf_reset(&group);
    CHECK_OK(mtx_meta_author(&m, &given, &family, &group)); /* nothing */
    CHECK_OK(mtx_meta_members(&m, &out));
    CHECK(strcmp(out.data, "\"authors\":[\"Jane Q O\\\"Neil\",\"O\\\"Neil\","
                           "\"The Group\"]") == 0);
    CHECK(mtx_meta_has(&m, "authors") && !mtx_meta_has(&m, "mesh"));
    { /* a name over 511 bytes is cut there, as snprintf into 512 cut it */
        char want[700], name[600];
        static const char as[] = "\"authors\":[";

        mtx_meta_reset(&m);
        mtx_buf_reset(&out);
        memset(name, 'a', 300);
        name[300] = '\0';
        CHECK_OK(mtx_buf_append_str(&given, name));
        memset(name, 'b', 300);
        CHECK_OK(mtx_buf_append_str(&family, name));
        CHECK_OK(mtx_meta_author(&m, &given, &family, &group));
        CHECK_OK(mtx_meta_members(&m, &out));
        snprintf(name, 512, "%s %s", given.data, family.data);
        snprintf(want, sizeof want, "%s\"%s\"]", as, name);
        CHECK(strlen(name) == 511 && strcmp(out.data, want) == 0);
    }
    mtx_buf_free(&given);
    mtx_buf_free(&family);
    mtx_buf_free(&group);
    mtx_buf_free(&out);
    mtx_meta_free(&m);
}

/* One gzip member of p[0..n) at 'level', appended to out (zlib). */
static size_t gz_member(const unsigned char *p, size_t n, int level,
                        unsigned char *out)
{
    z_stream z;
    size_t len;

    memset(&z, 0, sizeof z);
    CHECK(deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) ==
          Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)p;
    z.avail_in = (unsigned)n;
    z.next_out = out;
    z.avail_out = (unsigned)(n + n / 8 + 1024);
    CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
    len = z.total_out;
    deflateEnd(&z);
    return len;
}

/* Reads all of 'path' through mtx_gz in reads of 'step' bytes. */
static enum mt_status gz_slurp(const char *path, size_t step,
                               unsigned char *out, size_t cap, size_t *n,
                               struct mt_error *err)
{
    struct mtx_gz *g = NULL;
    enum mt_status st = mtx_gz_open(path, &g, err);
    size_t got = 1;

    *n = 0;
    while (st == MT_OK && got > 0) {
        CHECK(*n + step <= cap);
        st = mtx_gz_read(g, (char *)out + *n, step, &got, err);
        *n += got;
    }
    mtx_gz_close(g);
    return st;
}

static void write_file(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");

    CHECK(f && fwrite(p, 1, n, f) == n && fclose(f) == 0);
}

/* A stored (level 0) first member is its data plus a fixed overhead, so
 * its length can be set to end anywhere around gz.c's 256 KiB reads: at
 * each, two members (and what follows them) read as zlib's gzread reads
 * them. */
static void test_gz_members_at_read_edges(void **state)
{
    size_t cap = (size_t)1 << 20, i, n, len, want;
    unsigned char *data = malloc(cap), *file = malloc(2 * cap);
    unsigned char *got = malloc(2 * cap);
    char path[160];
    struct mt_error err;
    long edge;
    unsigned seed = 3;
    (void)state;
    snprintf(path, sizeof path, "%s/m.gz", tmpl);
    for (i = 0; i < cap; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (unsigned char)(seed >> 16);
    }
    for (edge = -3; edge <= 3; edge++) {
        size_t first = 0, target = (size_t)(262144 + edge);

        for (n = target - 40; n < target; n++) /* stored: + a fixed sum */
            if (gz_member(data, n, 0, file) == target)
                first = n;
        CHECK(first > 0);
        len = gz_member(data, first, 0, file);
        len += gz_member(data + first, 5000, 6, file + len);
        want = first + 5000;
        for (i = 0; i < 3; i++) {
            size_t extra = i == 0 ? 0 : i == 1 ? 1 : 7; /* garbage after */

            memcpy(file + len, "\x1fGARBAGE", extra);
            write_file(path, file, len + extra);
            CHECK_OK(gz_slurp(path, 65536, got, 2 * cap, &n, &err));
            CHECK(n == want && memcmp(got, data, want) == 0);
        }
    }
    /* cut short anywhere, or one bit flipped in the data or the trailer */
    len = gz_member(data, 100000, 6, file);
    for (i = 0; i < 6; i++) {
        static const size_t cut[] = {3, 10, 5000, 0, 0, 0};
        enum mt_status st;

        memcpy(got, file, len);
        if (i == 3)
            got[len / 2] ^= 0x10;
        if (i == 4)
            got[len - 8] ^= 1; /* CRC-32 */
        if (i == 5)
            got[len - 1] ^= 1; /* length */
        write_file(path, got, cut[i] ? len - cut[i] : len);
        st = gz_slurp(path, 4096, got, 2 * cap, &n, &err);
        CHECK(st == MT_EPARSE);
        CHECK(strstr(err.msg, i < 3 ? "ends early" : "corrupt") != NULL);
    }
    free(data);
    free(file);
    free(got);
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

/* ==== Skipping what cannot be read ==== */

struct skips {
    char first[MT_ERROR_MSG_MAX];
    int n;
};

static void on_skip(const char *what, void *user)
{
    struct skips *k = user;

    if (k->n++ == 0)
        snprintf(k->first, sizeof k->first, "%s", what);
}

static enum mt_status skip_import(const char *bad, const char *out, int strict,
                                  struct skips *k, struct mt_import_result *r,
                                  struct mt_error *err)
{
    char a[512];
    char b[512];
    const char *paths[3] = {a, bad, b};
    struct mt_import_params p;

    test_data_path(a, sizeof a, "formats/pubmed/pubmed1.xml");
    test_data_path(b, sizeof b, "formats/pubmed/pubmed4.xml");
    mt_import_default_params(&p);
    p.jsonl_out = out;
    p.threads = 2;
    p.strict = strict;
    p.on_skip = on_skip;
    p.skip_user = k;
    memset(k, 0, sizeof *k);
    memset(r, 0, sizeof *r);
    return mt_import("pubmed", paths, 3, &p, r, err);
}

/* A malformed file between two good ones is skipped, named by FILE:LINE
 * through on_skip and counted; the good ones are written. Under strict
 * it is the import's error and no output appears. */
static void test_import_skips_a_bad_file_unless_strict(void **state)
{
    char bad[256];
    char out[256];
    char want[300];
    struct skips k;
    struct mt_import_result r;
    struct mt_error err = {MT_OK, ""};
    FILE *f;
    (void)state;
    snprintf(bad, sizeof bad, "%s/bad.xml", tmpl);
    snprintf(out, sizeof out, "%s/skip.jsonl", tmpl);
    f = fopen(bad, "w");
    CHECK(f != NULL);
    fputs("<?xml version=\"1.0\"?>\n<PubmedArticleSet>\n<Oops></Nope>\n", f);
    CHECK(fclose(f) == 0);
    CHECK_OK(skip_import(bad, out, 0, &k, &r, &err));
    CHECK(r.files == 2 && r.bad_files == 1 && r.bad_records == 0);
    CHECK(r.documents > 0 && k.n == 1);
    snprintf(want, sizeof want, "%s:3: malformed XML", bad);
    CHECK(strncmp(k.first, want, strlen(want)) == 0);
    CHECK(access(out, F_OK) == 0);
    unlink(out);
    CHECK(skip_import(bad, out, 1, &k, &r, &err) == MT_EPARSE);
    CHECK(strncmp(err.msg, want, strlen(want)) == 0);
    CHECK(k.n == 0 && access(out, F_OK) != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha1_matches_fips_vectors),
        cmocka_unit_test(test_squash_folds_runs_and_trims),
        cmocka_unit_test(test_squash_matches_the_plain_rule),
        cmocka_unit_test(test_meta_matches_jansson_dump),
        cmocka_unit_test(test_meta_author_names),
        cmocka_unit_test(test_gz_members_at_read_edges),
        cmocka_unit_test(test_store_delete_and_whole_chunk),
        cmocka_unit_test(test_import_survives_every_allocation_failure),
        cmocka_unit_test(test_import_skips_a_bad_file_unless_strict),
    };
    return cmocka_run_group_tests_name("corpus", tests, setup, teardown);
}
