/* Queries an HNSW file written earlier (by vec_mt, `medtrust index`, or an
 * older binary), nothing else: a fixed ef over vec_gen's queries, so an
 * instruction count (valgrind --tool=callgrind
 * --toggle-collect=mtx_hnsw_search) compares two files or two binaries on
 * one graph. With OUT it writes the graph again instead (the current
 * format: a version 2 or 3 file becomes version 4, its level 0 in
 * Elias-Fano blocks).
 * Usage: vec_query FILE DATADIR DIMS Q EF
 *        vec_query FILE --rewrite OUT
 * Prints one JSON object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "index/hnsw.h"
#include "index/vec.h"

static int rewrite(const struct mt_hnsw *h, const char *out)
{
    struct mt_error err;

    if (mtx_hnsw_write(h, out, &err) != MT_OK) {
        fprintf(stderr, "vec_query: %s\n", err.msg);
        return 1;
    }
    printf("{\"written\":\"%s\",\"file_bytes\":%llu}\n", out,
           (unsigned long long)bu_file_size(out));
    return 0;
}

static int query(const struct mt_hnsw *h, const char *dir, uint32_t d,
                 uint32_t nq, uint32_t ef)
{
    char path[4096];
    struct mt_vec_hit hits[10];
    uint32_t ids[10], qi, n, i;
    size_t sz;
    float *q;
    uint32_t *gt;
    double rec = 0.0, t0, ms;

    snprintf(path, sizeof path, "%s/query.f32", dir);
    q = bu_load(path, &sz);
    if (!q || sz < (size_t)nq * d * sizeof *q)
        return 1;
    snprintf(path, sizeof path, "%s/gt.u32", dir);
    gt = bu_load(path, &sz);
    if (!gt || sz < (size_t)nq * 10 * sizeof *gt)
        return 1;
    t0 = bu_now_ms();
    for (qi = 0; qi < nq; qi++) {
        mtx_hnsw_search(h, q + (size_t)qi * d, 10, ef, NULL, hits, &n);
        for (i = 0; i < n; i++)
            ids[i] = hits[i].id;
        rec += bu_recall10(ids, n, gt + (size_t)qi * 10);
    }
    ms = (bu_now_ms() - t0) / nq;
    printf("{\"engine\":\"medtrust\",\"clock\":\"%s\",\"ef\":%u,"
           "\"queries\":%u,\"ms\":%.4f,\"recall10\":%.4f,\"load\":\"%s\"}\n",
           bu_clock_name(), ef, nq, ms, rec / nq, bu_loadavg());
    free(q);
    free(gt);
    return 0;
}

int main(int argc, char **argv)
{
    struct mt_hnsw *h = NULL;
    struct mt_error err;
    int rc;

    if (argc < 4 || (strcmp(argv[2], "--rewrite") != 0 && argc < 6)) {
        fprintf(stderr, "usage: vec_query FILE DATADIR DIMS Q EF\n"
                        "       vec_query FILE --rewrite OUT\n");
        return 2;
    }
    if (mtx_hnsw_open(argv[1], &h, &err) != MT_OK) {
        fprintf(stderr, "vec_query: %s\n", err.msg);
        return 1;
    }
    if (strcmp(argv[2], "--rewrite") == 0)
        rc = rewrite(h, argv[3]);
    else
        rc = query(h, argv[2], (uint32_t)strtoul(argv[3], NULL, 10),
                   (uint32_t)strtoul(argv[4], NULL, 10),
                   (uint32_t)strtoul(argv[5], NULL, 10));
    if (rc == 1 && strcmp(argv[2], "--rewrite") != 0)
        fprintf(stderr, "vec_query: cannot load %s\n", argv[2]);
    mtx_hnsw_free(h);
    return rc;
}
