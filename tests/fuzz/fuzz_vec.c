/* libFuzzer harness for the vector-set and HNSW file readers: each input
 * is written to a file and opened both ways; whatever opens is searched,
 * flat and through the graph, so the validated sections are used and the
 * links, which the open leaves to mtx_hnsw_check, are read defensively
 * (hnsw.c, read_links); then the check runs. Built by `make fuzz` (mk/fuzz.mk);
 * run from the repository root:
 *   FUZZ_VEC_SEED=CORPUS_DIR build/fuzz/fuzzers/fuzz_vec -max_len=65536 \
 *     CORPUS_DIR
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION skips the file checksums so
 * mutations reach the structural checks behind it. Seed the corpus with
 * small files from mtx_vecset_write and mtx_hnsw_write (fuzz_vec_seed
 * below writes some when FUZZ_VEC_SEED names a folder). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/hnsw.h"
#include "index/vec.h"
#include "medtrust/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char path[64];

static void search_all(const struct mt_vecset *vs, const struct mt_hnsw *h)
{
    float q[64];
    struct mt_vec_hit hits[8];
    uint32_t n;
    uint32_t d = mtx_vecset_dims(vs);
    uint32_t i;

    if (d > 64)
        return;
    for (i = 0; i < d; i++)
        q[i] = (float)((i * 7) % 5) - 2.0f + 0.5f;
    mtx_vecset_search_flat(vs, q, 8, NULL, hits, &n);
    if (h)
        mtx_hnsw_search(h, q, 8, 16, NULL, hits, &n);
}

/* Writes seed files: small sets with and without residuals (4-bit, and
 * 2-bit for variant 4) and floats, and their graphs. */
static void seed(const char *dir)
{
    uint32_t variant;

    for (variant = 0; variant < 5; variant++) {
        struct mt_vecset_params p = mtx_vecset_default_params();
        struct mt_vecset *vs;
        struct mt_hnsw *h;
        struct mt_hnsw_params hp = mtx_hnsw_default_params();
        char out[4096];
        float v[16];
        uint32_t i;
        uint32_t j;

        p.refine = (variant & 1) != 0 || variant == 4;
        p.keep_float = (variant & 2) != 0;
        p.refine_bits = variant == 4 ? 2 : 4;
        if (mtx_vecset_new(16, &p, &vs) != MT_OK)
            return;
        for (i = 0; i < 40; i++) {
            for (j = 0; j < 16; j++)
                v[j] = (float)(((i + 3) * (j + 5)) % 11) - 5.0f + 0.25f;
            mtx_vecset_add(vs, v, NULL);
        }
        snprintf(out, sizeof out, "%s/set%u.vec", dir, variant);
        mtx_vecset_write(vs, out, NULL);
        hp.M = 4;
        if (mtx_hnsw_build(vs, &hp, &h) == MT_OK) {
            snprintf(out, sizeof out, "%s/graph%u.hnsw", dir, variant);
            mtx_hnsw_write(h, out, NULL);
            mtx_hnsw_free(h);
        }
        mtx_vecset_free(vs);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("FUZZ_VEC_SEED");

    (void)argc;
    (void)argv;
    snprintf(path, sizeof path, "/tmp/fuzz_vec_%d", (int)getpid());
    if (dir)
        seed(dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    struct mt_vecset *vs = NULL;
    struct mt_hnsw *h = NULL;

    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    if (mtx_vecset_open(path, &vs, NULL) == MT_OK) {
        search_all(vs, NULL);
        mtx_vecset_free(vs);
    }
    if (mtx_hnsw_open(path, &h, NULL) == MT_OK) {
        search_all(mtx_hnsw_vecset(h), h);
        mtx_hnsw_check(h, NULL, NULL, NULL);
        mtx_hnsw_free(h);
    }
    return 0;
}
