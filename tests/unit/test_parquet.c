/* Unit tests for the Parquet reader's delta and split decoders
 * (src/corpus/pq_delta.c) on the worked examples of parquet-format's
 * Encodings.md (DELTA_BINARY_PACKED examples 1 and 2, the
 * DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY examples), encoded by hand
 * as the text says, and on input cut short or out of bounds. Whole files
 * of two independent writers are tested in
 * tests/integration/test_import_parquet.sh. */
#include "check.h"

#include "core/buf.h"
#include "corpus/parquet.h"
#include "medtrust/core.h"

/* Example 1: 1, 2, 3, 4, 5. Block of 128 values in 4 miniblocks; the
 * deltas are all 1, so the min delta is 1 and every width 0. */
static const uint8_t ex1[] = {0x80, 0x01, 0x04, 0x05, 0x02, /* header */
                              0x02, 0x00, 0x00, 0x00, 0x00};

/* Example 2: 7, 5, 3, 1, 2, 3, 4, 5. Deltas -2 -2 -2 1 1 1 1: min delta
 * -2 (zigzag 3), relative 0 0 0 3 3 3 3 at width 2 in the first
 * miniblock (32 values, 8 bytes), the other widths 0 with no data. */
static const uint8_t ex2[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03,
                              0x02, 0x00, 0x00, 0x00, 0xc0, 0x3f,
                              0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

static void test_parquet_delta_ints_decode_the_spec_examples(void **state)
{
    (void)state;
    int64_t v[8];
    size_t used = 0;
    static const int64_t want2[] = {7, 5, 3, 1, 2, 3, 4, 5};
    int i;

    CHECK(mtx_pq_delta_ints(ex1, sizeof ex1, 0, v, 5, &used) == 0);
    for (i = 0; i < 5; i++)
        assert_int_equal(v[i], i + 1);
    assert_int_equal(used, sizeof ex1);
    CHECK(mtx_pq_delta_ints(ex2, sizeof ex2, 1, v, 8, &used) == 0);
    for (i = 0; i < 8; i++)
        assert_int_equal(v[i], want2[i]);
    assert_int_equal(used, sizeof ex2);
}

static void test_parquet_delta_ints_refuse_bad_input(void **state)
{
    (void)state;
    int64_t v[8];
    size_t used = 0, n;
    uint8_t bad[sizeof ex2];

    /* every cut of the input is refused, never read past */
    for (n = 0; n < sizeof ex2; n++)
        CHECK(mtx_pq_delta_ints(ex2, n, 1, v, 8, &used) != 0);
    /* the count must be the page's values */
    CHECK(mtx_pq_delta_ints(ex2, sizeof ex2, 1, v, 7, &used) != 0);
    /* a width past 64 bits */
    memcpy(bad, ex2, sizeof bad);
    bad[6] = 65;
    CHECK(mtx_pq_delta_ints(bad, sizeof bad, 0, v, 8, &used) != 0);
    /* a block size that is not a multiple of 128 */
    memcpy(bad, ex2, sizeof bad);
    bad[0] = 0x81;
    CHECK(mtx_pq_delta_ints(bad, sizeof bad, 0, v, 8, &used) != 0);
}

/* Lengths 5 5 6 6 as DELTA_BINARY_PACKED (first 5, deltas 0 1 0: min 0,
 * width 1), then the bytes. */
static const uint8_t dlba[] = {
    0x80, 0x01, 0x04, 0x04, 0x0a, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00,
    0x00, 0x00, 'H',  'e',  'l',  'l',  'o',  'W',  'o',  'r',  'l',  'd',
    'F',  'o',  'o',  'b',  'a',  'r',  'A',  'B',  'C',  'D',  'E',  'F'};

static void check_strings(const struct mtx_pq_val *v, const struct mt_buf *h,
                          const char *const *want, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        assert_int_equal(v[i].len, strlen(want[i]));
        CHECK(memcmp(h->data + v[i].u.off, want[i], v[i].len) == 0);
    }
}

static void test_parquet_delta_strings_decode_the_spec_examples(void **state)
{
    (void)state;
    static const char *const w1[] = {"Hello", "World", "Foobar", "ABCDEF"};
    static const char *const w2[] = {"axis", "axle", "babble", "babyhood"};
    /* prefixes 0 2 0 3 (first 0, deltas 2 -2 3: min -2, relative 4 0 5 at
     * width 3), suffix lengths 4 2 6 5 (first 4, deltas -2 4 -1: min -2,
     * relative 0 6 1 at width 3), then "axislebabbleyhood" */
    static const uint8_t dba[] = {
        /* prefixes: header, min delta, widths, 12 bytes of 3-bit values */
        0x80, 0x01, 0x04, 0x04, 0x00, 0x03, 0x03, 0x00, 0x00, 0x00, 0x44, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        /* suffix lengths, the same way */
        0x80, 0x01, 0x04, 0x04, 0x08, 0x03, 0x03, 0x00, 0x00, 0x00, 0x70, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 'a', 'x',
        'i', 's', 'l', 'e', 'b', 'a', 'b', 'b', 'l', 'e', 'y', 'h', 'o', 'o',
        'd'};
    struct mtx_pq_val v[4];
    struct mt_buf h = MT_BUF_INIT(1 << 20);

    CHECK_OK(mtx_pq_delta_strings(dlba, sizeof dlba, 0, v, 4, &h));
    check_strings(v, &h, w1, 4);
    mtx_buf_free(&h);
    h = MT_BUF_INIT(1 << 20);
    CHECK_OK(mtx_pq_delta_strings(dba, sizeof dba, 1, v, 4, &h));
    check_strings(v, &h, w2, 4);
    /* the strings' bytes cut short, and a length past them */
    CHECK(mtx_pq_delta_strings(dlba, sizeof dlba - 1, 0, v, 4, &h) ==
          MT_EPARSE);
    CHECK(mtx_pq_delta_strings(dba, sizeof dba - 3, 1, v, 4, &h) == MT_EPARSE);
    mtx_buf_free(&h);
}

static void test_parquet_split_reassembles_the_streams(void **state)
{
    (void)state;
    /* 1.0f = 00 00 80 3f, -2.5f = 00 00 20 c0: byte j of each in stream j */
    static const uint8_t f[] = {0x00, 0x00, 0x00, 0x00, 0x80, 0x20, 0x3f, 0xc0};
    struct mtx_pq_val v[2];

    CHECK(mtx_pq_split(f, sizeof f, MTX_PQ_FLOAT, v, 2) == 0);
    CHECK(v[0].u.d == 1.0 && v[1].u.d == -2.5);
    CHECK(mtx_pq_split(f, sizeof f, MTX_PQ_INT32, v, 2) == 0);
    assert_int_equal(v[0].u.i, 0x3f800000);
    CHECK(mtx_pq_split(f, sizeof f - 1, MTX_PQ_FLOAT, v, 2) != 0);
    CHECK(mtx_pq_split(f, sizeof f, MTX_PQ_BYTE_ARRAY, v, 2) != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parquet_delta_ints_decode_the_spec_examples),
        cmocka_unit_test(test_parquet_delta_ints_refuse_bad_input),
        cmocka_unit_test(test_parquet_delta_strings_decode_the_spec_examples),
        cmocka_unit_test(test_parquet_split_reassembles_the_streams),
    };
    return cmocka_run_group_tests_name("parquet", tests, NULL, NULL);
}
