/* Dense recall@10 of a whole index (every segment's graph, merged as
 * `search --mode dense` merges them) against exact top-10 lists made
 * elsewhere: at 25M, bench/pubmed_recall.py's float32 scan over the
 * generated vectors of bench/pubmed_hybrid.sh. One mt_index_search a
 * query (MT_SEARCH_DENSE, k 10, the query vector as given), each ef of
 * the list (0 = the segments' defaults), wall clock a query.
 * Usage: index_recall DB QUERIES.f32 GT.u32 DIMS EF[,EF...] [THREADS]
 * QUERIES.f32: n x DIMS float32; GT.u32: n x 10 chunk ids (uint32), each
 * query's exact top 10. THREADS: search_threads (default 1).
 * Prints one JSON object per ef. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mt.h"
#include "bench_util.h"
#include "medtrust/index.h"

/* One pass over the queries at one ef: mean recall@10, latencies in lat. */
static double run_ef(struct mt_index *idx, const float *q, const uint32_t *gt,
                     size_t nq, uint32_t dims, uint32_t ef, uint32_t threads,
                     double *lat)
{
    struct mt_search_params p;
    struct mt_search_result *r = NULL;
    struct mt_error err = {0};
    uint32_t ids[10], n, i;
    double rec = 0.0, t0;
    size_t qi;

    mt_search_default_params(&p);
    p.mode = MT_SEARCH_DENSE;
    p.k = 10;
    p.query_dims = dims;
    p.ef = ef;
    p.search_threads = threads;
    for (qi = 0; qi < nq; qi++) {
        p.query_vec = q + qi * dims;
        t0 = bu_wall_ms();
        if (mt_index_search(idx, "", &p, &r, &err) != MT_OK)
            die("dense search", &err);
        lat[qi] = bu_wall_ms() - t0;
        for (n = 0, i = 0; i < r->n && i < 10; i++)
            ids[n++] = (uint32_t)r->hits[i].chunk_id;
        rec += bu_recall10(ids, n, gt + qi * 10);
        mt_search_result_free(r);
    }
    return rec / (double)nq;
}

int main(int argc, char **argv)
{
    struct mt_index *idx = NULL;
    struct mt_error err = {0};
    size_t szq = 0, szg = 0, nq;
    uint32_t dims, threads;
    double *lat, rec, sum;
    const char *e;
    uint32_t *gt;
    float *q;
    size_t i;

    if (argc < 6) {
        fprintf(stderr, "usage: index_recall DB QUERIES.f32 GT.u32 DIMS "
                        "EF[,EF...] [THREADS]\n");
        return 2;
    }
    dims = (uint32_t)strtoul(argv[4], NULL, 10);
    threads = argc > 6 ? (uint32_t)strtoul(argv[6], NULL, 10) : 1;
    q = bu_load(argv[2], &szq);
    gt = bu_load(argv[3], &szg);
    if (!q || !gt || !dims)
        die("index_recall: the query or exact-list file", NULL);
    nq = szq / (dims * sizeof *q);
    if (!nq || szg < nq * 10 * sizeof *gt) {
        fprintf(stderr,
                "index_recall: %zu queries of %u floats, but %s "
                "holds %zu lists of 10\n",
                nq, dims, argv[3], szg / (10 * sizeof *gt));
        return 1;
    }
    lat = malloc(nq * sizeof *lat);
    if (!lat || mt_index_open(argv[1], &idx, &err) != MT_OK)
        die(argv[1], &err);
    for (e = argv[5]; *e; e += *e == ',') {
        char *end;
        uint32_t ef = (uint32_t)strtoul(e, &end, 10);

        if (end == e)
            die("index_recall: EF must be numbers separated by commas", NULL);
        e = end;
        rec = run_ef(idx, q, gt, nq, dims, ef, threads, lat);
        for (sum = 0.0, i = 0; i < nq; i++)
            sum += lat[i];
        printf("{\"ef\":%u,\"threads\":%u,\"queries\":%zu,\"recall10\":%.4f,"
               "\"mean_ms\":%.3f,\"p50_ms\":%.3f,\"p95_ms\":%.3f,"
               "\"rss\":%llu,\"load\":\"%s\"}\n",
               ef, threads, nq, rec, sum / (double)nq,
               bu_percentile(lat, nq, 0.5), bu_percentile(lat, nq, 0.95),
               (unsigned long long)bu_rss(), bu_loadavg());
        fflush(stdout);
    }
    mt_index_close(idx);
    free(lat);
    free(q);
    free(gt);
    return 0;
}
