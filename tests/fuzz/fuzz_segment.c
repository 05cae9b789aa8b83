/* libFuzzer harness for the segment reader and the BM25 index on top of
 * it. Built by `make fuzz` (mk/fuzz.mk); run from the repository root:
 *   FUZZ_SEGMENT_SEED=CORPUS_DIR build/fuzz/fuzzers/fuzz_segment \
 *     -max_len=65536 CORPUS_DIR
 * make fuzz defines FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which skips
 * the BM25 section CRCs, so mutations reach the structural checks behind
 * them. Seed the corpus with small segments from
 * mtx_bm25_builder_write(): seed() below writes some when FUZZ_SEGMENT_SEED
 * names a folder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/bm25.h"
#include "index/segment.h"
#include "medtrust/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Writes seed files: BM25 segments of one to three short documents, and a
 * bare segment with the section the harness looks up. */
static void seed(const char *dir)
{
    static const struct mt_str doc[3][3] = {
        {MT_STR_C("chest"), MT_STR_C("pain"), MT_STR_C("w1")},
        {MT_STR_C("pain"), MT_STR_C("fever"), MT_STR_C("pain")},
        {MT_STR_C("w1"), MT_STR_C("cough"), MT_STR_C("chest")},
    };
    struct mt_seg_writer *w;
    char out[4096];
    uint32_t n;

    for (n = 1; n <= 3; n++) {
        struct mt_bm25_builder *b;
        uint32_t d;
        if (mtx_bm25_builder_new(NULL, &b, NULL) != MT_OK)
            return;
        for (d = 0; d < n; d++) {
            mtx_bm25_builder_add(b, d, MT_BM25_FIELD_TEXT, doc[d], 3, NULL);
            mtx_bm25_builder_add(b, d, MT_BM25_FIELD_TITLE, doc[d], 1, NULL);
        }
        snprintf(out, sizeof out, "%s/bm25_%u.seg", dir, n);
        mtx_bm25_builder_write(b, out, NULL);
        mtx_bm25_builder_free(b);
    }
    snprintf(out, sizeof out, "%s/test.seg", dir);
    if (mtx_seg_writer_open(out, "TESTSEG\0", 1, &w, NULL) != MT_OK)
        return;
    if (mtx_seg_writer_begin(w, MT_SEG_ID('A', 'A', 'A', 'A'), NULL) != MT_OK ||
        mtx_seg_writer_write(w, "abcdefghijklmnopq", 17, NULL) != MT_OK) {
        mtx_seg_writer_abort(w);
        return;
    }
    mtx_seg_writer_commit(w, NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("FUZZ_SEGMENT_SEED");

    (void)argc;
    (void)argv;
    if (dir)
        seed(dir);
    return 0;
}

/* Opens the input as a BM25 segment and, when it validates, runs a few
 * queries through both search paths, which must agree. */
static void fuzz_bm25(const void *buf, size_t size)
{
    static const struct mt_str q[3] = {MT_STR_C("chest"), MT_STR_C("pain"),
                                       MT_STR_C("w1")};
    struct mt_bm25 *idx = NULL;
    struct mt_bm25_hit a[8];
    struct mt_bm25_hit b[8];
    size_t na = 0;
    size_t nb = 0;

    if (mtx_bm25_open_mem(buf, size, "fuzz", &idx, NULL) != MT_OK)
        return;
    mtx_bm25_search(idx, q, 3, NULL, a, 8, &na, NULL);
    mtx_bm25_search_exhaustive(idx, q, 3, NULL, b, 8, &nb, NULL);
    mtx_bm25_close(idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mt_seg *s = NULL;
    void *buf = aligned_alloc(16, (size + 15) / 16 * 16 + 16);
    const void *p;
    size_t n;

    if (!buf)
        return 0;
    memcpy(buf, data, size); /* sections need 16-byte alignment */
    if (mtx_seg_open_mem(buf, size, "fuzz", "TESTSEG\0", 0, &s, NULL) ==
        MT_OK) {
        mtx_seg_section(s, MT_SEG_ID('A', 'A', 'A', 'A'), &p, &n, NULL);
        mtx_seg_close(s);
    }
    fuzz_bm25(buf, size);
    free(buf);
    return 0;
}
