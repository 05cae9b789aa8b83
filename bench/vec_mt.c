/* medtrust vector benchmark over vec_gen's data: int8 flat scan (latency,
 * GB/s, recall) and int8 HNSW (single-thread build time, memory, and an ef
 * sweep of latency and recall@10 against exact float).
 * Usage: vec_mt DATADIR N DIMS Q [FLAT_QUERIES]
 * Prints one JSON object; writes DATADIR/mt.hnsw (reused by hybrid_mt). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "index/hnsw.h"
#include "index/simd.h"
#include "index/vec.h"

static const uint32_t efs[] = {16,  32,  48,  64,  96,  128,
                               192, 256, 384, 512, 768, 1024};
#define NEFS (sizeof efs / sizeof efs[0])

struct data {
    float *base, *q;
    uint32_t *gt;
    size_t n;
    uint32_t d, nq;
};

static int load(struct data *dt, const char *dir)
{
    char path[4096];
    size_t sz;

    snprintf(path, sizeof path, "%s/base.f32", dir);
    dt->base = bu_load(path, &sz);
    if (!dt->base || sz != dt->n * dt->d * sizeof(float))
        return -1;
    snprintf(path, sizeof path, "%s/query.f32", dir);
    dt->q = bu_load(path, &sz);
    if (!dt->q || sz != (size_t)dt->nq * dt->d * sizeof(float))
        return -1;
    snprintf(path, sizeof path, "%s/gt.u32", dir);
    dt->gt = bu_load(path, &sz);
    return dt->gt && sz == (size_t)dt->nq * 10 * sizeof(uint32_t) ? 0 : -1;
}

/* Flat int8 scan over the first nflat queries: mean ms and recall. */
static void bench_flat(const struct mt_vecset *vs, const struct data *dt,
                       uint32_t nflat)
{
    struct mt_vec_hit hits[10];
    uint32_t ids[10], qi, n, i;
    double rec = 0.0, t0, ms;

    mt_vecset_search_flat(vs, dt->q, 10, NULL, hits, &n); /* warm-up */
    t0 = bu_now_ms();
    for (qi = 0; qi < nflat; qi++) {
        mt_vecset_search_flat(vs, dt->q + (size_t)qi * dt->d, 10, NULL, hits,
                              &n);
        for (i = 0; i < n; i++)
            ids[i] = hits[i].id;
        rec += bu_recall10(ids, n, dt->gt + qi * 10);
    }
    ms = (bu_now_ms() - t0) / nflat;
    printf("\"flat\":{\"queries\":%u,\"ms\":%.4f,\"gbps\":%.3f,"
           "\"recall10\":%.4f,\"kernel\":\"%s\"},",
           nflat, ms, (double)dt->n * dt->d / (ms * 1e6), rec / nflat,
           mt_simd_get()->name);
}

static void bench_ef(const struct mt_hnsw *h, const struct data *dt,
                     uint32_t ef, int last)
{
    struct mt_vec_hit hits[10];
    uint32_t ids[10], qi, n, i;
    double rec = 0.0, t0, ms;

    t0 = bu_now_ms();
    for (qi = 0; qi < dt->nq; qi++) {
        mt_hnsw_search(h, dt->q + (size_t)qi * dt->d, 10, ef, NULL, hits, &n);
        for (i = 0; i < n; i++)
            ids[i] = hits[i].id;
        rec += bu_recall10(ids, n, dt->gt + qi * 10);
    }
    ms = (bu_now_ms() - t0) / dt->nq;
    printf("{\"ef\":%u,\"ms\":%.4f,\"recall10\":%.4f}%s", ef, ms, rec / dt->nq,
           last ? "" : ",");
}

int main(int argc, char **argv)
{
    struct data dt = {0};
    struct mt_vecset *vs = NULL;
    struct mt_hnsw *h = NULL;
    struct mt_hnsw_params hp = mt_hnsw_default_params();
    char path[4096];
    uint64_t rss0, rss1, rss2;
    uint32_t nflat, i;
    size_t j;
    double t0, build_s;

    if (argc < 5) {
        fprintf(stderr, "usage: vec_mt DATADIR N DIMS Q [FLAT_QUERIES]\n");
        return 2;
    }
    dt.n = strtoull(argv[2], NULL, 10);
    dt.d = (uint32_t)strtoul(argv[3], NULL, 10);
    dt.nq = (uint32_t)strtoul(argv[4], NULL, 10);
    nflat = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 200;
    if (nflat > dt.nq)
        nflat = dt.nq;
    if (load(&dt, argv[1]) != 0) {
        fprintf(stderr, "vec_mt: cannot load %s\n", argv[1]);
        return 1;
    }
    rss0 = bu_rss();
    if (mt_vecset_new(dt.d, NULL, &vs) != MT_OK)
        return 1;
    for (j = 0; j < dt.n; j++)
        if (mt_vecset_add(vs, dt.base + j * dt.d, NULL) != MT_OK)
            return 1;
    rss1 = bu_rss();
    printf("{\"engine\":\"medtrust\",\"clock\":\"%s\",\"n\":%zu,\"dims\":%u,"
           "\"queries\":%u,",
           bu_clock_name(), dt.n, dt.d, dt.nq);
    bench_flat(vs, &dt, nflat);
    hp.M = 16;
    hp.ef_construction = 200;
    t0 = bu_now_ms();
    if (mt_hnsw_build(vs, &hp, &h) != MT_OK)
        return 1;
    build_s = (bu_now_ms() - t0) / 1e3;
    rss2 = bu_rss();
    snprintf(path, sizeof path, "%s/mt.hnsw", argv[1]);
    if (mt_hnsw_write(h, path, NULL) != MT_OK)
        return 1;
    printf("\"hnsw\":{\"M\":%u,\"ef_construction\":%u,\"build_s\":%.2f,"
           "\"vecset_rss\":%llu,\"graph_rss\":%llu,\"file_bytes\":%llu,"
           "\"sweep\":[",
           hp.M, hp.ef_construction, build_s, (unsigned long long)(rss1 - rss0),
           (unsigned long long)(rss2 - rss1),
           (unsigned long long)bu_file_size(path));
    for (i = 0; i < 100 && i < dt.nq; i++) { /* warm-up */
        struct mt_vec_hit hits[10];
        uint32_t n;
        mt_hnsw_search(h, dt.q + (size_t)i * dt.d, 10, 128, NULL, hits, &n);
    }
    for (i = 0; i < NEFS; i++)
        bench_ef(h, &dt, efs[i], i + 1 == NEFS);
    printf("]}}\n");
    mt_hnsw_free(h);
    mt_vecset_free(vs);
    return 0;
}
