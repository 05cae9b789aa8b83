/* medtrust hybrid query timing: BM25 top-50 on the store's (rebuilt,
 * single-segment) index, HNSW top-50 over vec_mt's int8 graph, and linear
 * fusion (mtx_fuse_linear, 0.7 / 0.3), one thread. The vectors are
 * clustered synthetic ones (vec_gen), not embeddings of the chunks: vector
 * id v stands for BM25 document v mod N; only the timing means anything.
 * Usage: hybrid_mt STORE_DIR QUERIES.txt VECDIR DIMS EF
 * Prints one JSON object: latency p50 / p95 / mean, RSS, sizes on disk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mt.h"
#include "bench_util.h"
#include "index/fusion.h"
#include "index/hnsw.h"
#include "medtrust/index.h"

#define DEPTH 50

int main(int argc, char **argv)
{
    struct mt_bm25_hit bh[DEPTH];
    struct mt_vec_hit vh[DEPTH];
    struct mt_scored lex[DEPTH], sem[DEPTH], fused[2 * DEPTH];
    struct mtx_bm25_stats bs;
    struct mt_index *idx = NULL;
    struct mt_index_stats st;
    struct mt_hnsw *h = NULL;
    struct mt_error err = {0};
    struct core c = {0};
    char path[4096];
    double *lat, sum = 0.0, p50, p95;
    float *qv;
    size_t nq = 0, nqv, sz = 0, i, j;
    uint32_t dims, ef, nv;
    char **q;

    if (argc < 6) {
        fprintf(stderr, "usage: hybrid_mt STORE_DIR QUERIES.txt VECDIR "
                        "DIMS EF\n");
        return 2;
    }
    q = bu_lines(argv[2], &nq);
    dims = (uint32_t)strtoul(argv[4], NULL, 10);
    ef = (uint32_t)strtoul(argv[5], NULL, 10);
    snprintf(path, sizeof path, "%s/query.f32", argv[3]);
    qv = bu_load(path, &sz);
    nqv = sz / (dims * sizeof(float));
    lat = malloc(nq * sizeof *lat);
    if (!q || !qv || !nqv || !lat)
        return 1;
    if (mt_index_open(argv[1], &idx, &err) != MT_OK)
        die(argv[1], &err);
    mt_index_stats(idx, &st);
    core_open(&c, argv[1], st.analyzer);
    mtx_bm25_stats(c.bm, &bs);
    snprintf(path, sizeof path, "%s/mt.hnsw", argv[3]);
    if (mtx_hnsw_open(path, &h, &err) != MT_OK)
        die(path, &err);
    for (i = 0; i < nq + 100; i++) { /* 100 warm-up queries first */
        size_t k = i < 100 ? i % nq : i - 100;
        double t0 = bu_now_ms();
        size_t nl = core_query(&c, q[k], bh, DEPTH);
        uint32_t ns = 0;
        mtx_hnsw_search(h, qv + (k % nqv) * dims, DEPTH, ef, NULL, vh, &ns);
        for (j = 0; j < nl; j++)
            lex[j] = (struct mt_scored){bh[j].doc, bh[j].score};
        for (j = 0; j < ns; j++)
            sem[j] = (struct mt_scored){vh[j].id % bs.docs, vh[j].score};
        mtx_fuse_linear(lex, nl, sem, ns, 0.7, 0.3, fused);
        if (i >= 100)
            lat[k] = bu_now_ms() - t0;
    }
    for (i = 0; i < nq; i++)
        sum += lat[i];
    p50 = bu_percentile(lat, nq, 0.5);
    p95 = bu_percentile(lat, nq, 0.95);
    nv = mtx_hnsw_count(h);
    printf(
        "{\"engine\":\"medtrust\",\"clock\":\"%s\",\"chunks\":%u,"
        "\"vectors\":%u,\"dims\":%u,\"ef\":%u,\"queries\":%zu,"
        "\"p50_ms\":%.4f,\"p95_ms\":%.4f,\"mean_ms\":%.4f,"
        "\"rss\":%llu,\"rss_peak\":%llu,\"bm25_bytes\":%llu,"
        "\"hnsw_bytes\":%llu}\n",
        bu_clock_name(), bs.docs, nv, dims, ef, nq, p50, p95, sum / (double)nq,
        (unsigned long long)bu_rss(), (unsigned long long)bu_proc_kb("VmHWM:"),
        (unsigned long long)st.bytes, (unsigned long long)bu_file_size(path));
    mtx_hnsw_free(h);
    core_close(&c);
    mt_index_close(idx);
    free(lat);
    return 0;
}
