/* medtrust BM25 speed over an ingested store: index build throughput
 * (mt_index_build with rebuild, reading every chunk from the store and
 * writing one segment) and single-thread top-10 latency over a query list,
 * both through the public API (mt_index_search: analysis, search, and the
 * hits' chunk text fetched from the store) and for the core alone
 * (analyzer + mtx_bm25_search on the mmapped segment, ids and scores).
 * Usage: bm25_mt STORE_DIR QUERIES.txt [REPS [NORMS]]
 * NORMS: float (default: float lengths, BM25 format 1) or byte (format 2,
 * one-byte lengths), for an A/B of the two.
 * Prints one JSON object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mt.h"
#include "bench_util.h"
#include "medtrust/index.h"
#include "medtrust/store.h"

#define MAX_REPS 16

static double build(const char *dir, int float_norms, uint64_t *chunks)
{
    struct mt_store_params sp;
    struct mt_index_build_params bp;
    struct mt_index_build_result res;
    struct mt_store *s = NULL;
    struct mt_error err = {0};
    double t0 = bu_now_ms();

    mt_store_default_params(&sp);
    sp.create = 0;
    if (mt_store_open(dir, &sp, &s, &err) != MT_OK)
        die(dir, &err);
    mt_index_default_build_params(&bp);
    bp.rebuild = 1;
    bp.bm25_float_norms = float_norms;
    if (mt_index_build(s, &bp, &res, &err) != MT_OK)
        die("build", &err);
    mt_store_close(s);
    *chunks = res.chunks_added;
    return (bu_now_ms() - t0) / 1e3;
}

static double api_pass(struct mt_index *idx, char **q, size_t nq)
{
    struct mt_search_params p;
    struct mt_error err = {0};
    double t0 = bu_now_ms();
    size_t i;

    mt_search_default_params(&p);
    p.k = 10;
    for (i = 0; i < nq; i++) {
        struct mt_search_result *r = NULL;
        if (mt_index_search(idx, q[i], &p, &r, &err) != MT_OK)
            die("search", &err);
        mt_search_result_free(r);
    }
    return (bu_now_ms() - t0) / (double)nq;
}

static double core_pass(struct core *c, char **q, size_t nq)
{
    struct mt_bm25_hit hits[10];
    double t0 = bu_now_ms();
    size_t i;

    for (i = 0; i < nq; i++)
        core_query(c, q[i], hits, 10);
    return (bu_now_ms() - t0) / (double)nq;
}

int main(int argc, char **argv)
{
    struct mt_index *idx = NULL;
    struct mt_index_stats st;
    struct mt_error err = {0};
    struct core c = {0};
    double api[MAX_REPS], core_ms[MAX_REPS], secs;
    uint64_t chunks = 0, rss0;
    size_t nq = 0;
    char **q;
    int reps, r, fl;

    if (argc < 3) {
        fprintf(stderr,
                "usage: bm25_mt STORE_DIR QUERIES.txt [REPS [byte|float]]\n");
        return 2;
    }
    q = bu_lines(argv[2], &nq);
    reps = argc > 3 ? atoi(argv[3]) : 3;
    fl = !(argc > 4 && strcmp(argv[4], "byte") == 0);
    if (!q || nq == 0 || reps < 1 || reps > MAX_REPS)
        return 2;
    secs = build(argv[1], fl, &chunks);
    rss0 = bu_rss();
    if (mt_index_open(argv[1], &idx, &err) != MT_OK)
        die(argv[1], &err);
    mt_index_stats(idx, &st);
    api_pass(idx, q, nq < 100 ? nq : 100); /* warm-up */
    for (r = 0; r < reps; r++)
        api[r] = api_pass(idx, q, nq);
    core_open(&c, argv[1], st.analyzer);
    core_pass(&c, q, nq < 100 ? nq : 100);
    for (r = 0; r < reps; r++)
        core_ms[r] = core_pass(&c, q, nq);
    printf("{\"engine\":\"medtrust\",\"clock\":\"%s\",\"norms\":\"%s\","
           "\"load\":\"%s\",\"chunks\":%llu,\"build_s\":%.2f,"
           "\"chunks_per_s\":%.0f,\"index_bytes\":%llu,\"postings\":%llu,"
           "\"queries\":%zu,\"reps\":%d,\"ms_per_query\":%.4f,"
           "\"core_ms_per_query\":%.4f,\"rss_search\":%llu,\"rss\":%llu}\n",
           bu_clock_name(), fl ? "float" : "byte", bu_loadavg(),
           (unsigned long long)chunks, secs, (double)chunks / secs,
           (unsigned long long)st.bytes, (unsigned long long)st.postings, nq,
           reps, bu_median(api, (size_t)reps), bu_median(core_ms, (size_t)reps),
           (unsigned long long)(bu_rss() - rss0), (unsigned long long)bu_rss());
    core_close(&c);
    mt_index_close(idx);
    return 0;
}
