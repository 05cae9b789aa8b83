/* medtrust BM25 speed over an ingested store: index build throughput
 * (mt_index_build with rebuild, reading every chunk from the store and
 * writing one segment) and single-thread top-10 latency over a query list,
 * both through the public API (mt_index_search: analysis, search, and the
 * hits' chunk text fetched from the store) and for the core alone
 * (analyzer + mtx_bm25_search on the mmapped segment, ids and scores).
 * Usage: bm25_mt STORE_DIR QUERIES.txt [REPS [NORMS]]
 * NORMS: float (default: float lengths, BM25 format 1) or byte (format 2,
 * one-byte lengths), for an A/B of the two; or keep: no build, the index
 * as it is (for callgrind and perf stat of the queries alone).
 * Prints one JSON object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_mt.h"
#include "core/buf.h"
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

/* The top 10 of query q through the public API (the caller frees it). */
static struct mt_search_result *api_top10(struct mt_index *idx, const char *q)
{
    struct mt_search_params p;
    struct mt_error err = {0};
    struct mt_search_result *r = NULL;

    mt_search_default_params(&p);
    p.k = 10;
    if (mt_index_search(idx, q, &p, &r, &err) != MT_OK)
        die("search", &err);
    return r;
}

/* Not inlined, so callgrind's --toggle-collect=api_pass and core_pass
 * count the two paths' instructions apart. */
__attribute__((noinline)) static double api_pass(struct mt_index *idx, char **q,
                                                 size_t nq)
{
    double t0 = bu_now_ms();
    size_t i;

    for (i = 0; i < nq; i++)
        mt_search_result_free(api_top10(idx, q[i]));
    return (bu_now_ms() - t0) / (double)nq;
}

/* Both clocks and the kernel's counts over the timed passes of one path,
 * in one process: where the wall clock runs ahead of the CPU clock, the
 * faults and context switches say whether the process waited on a disk
 * or for a core. */
struct span {
    double wall, cpu, runq, steal;
    long majflt, minflt, vcsw, ivcsw;
};

static double cpu_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Milliseconds of steal time over all CPUs (/proc/stat's 8th "cpu"
 * field, in USER_HZ ticks: 10 ms): the whole machine's, not ours. */
static double steal_ms(void)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");

    if (!f)
        return 0.0;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
               &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
        v[7] = 0;
    fclose(f);
    return (double)v[7] * 1e3 / (double)sysconf(_SC_CLK_TCK);
}

/* sign -1 at the start of the span, +1 at its end: the deltas. */
static void span_mark(struct span *s, int sign)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    s->wall += sign * bu_wall_ms();
    s->cpu += sign * cpu_ms();
    s->runq += sign * bu_runq_ms();
    s->steal += sign * steal_ms();
    s->majflt += sign * ru.ru_majflt;
    s->minflt += sign * ru.ru_minflt;
    s->vcsw += sign * ru.ru_nvcsw;
    s->ivcsw += sign * ru.ru_nivcsw;
}

/* Prints the span's fields as JSON, the clocks per query. What the wall
 * clock has beyond CPU time and the run-queue wait, with no voluntary
 * switch (no sleep on a disk or a lock), is time the hypervisor gave the
 * vCPU to others (steal; the kernel's task clock leaves it out). */
static void span_print(const char *name, const struct span *s, size_t queries)
{
    double q = (double)queries;

    printf("\"%s_wall_ms\":%.4f,\"%s_cpu_ms\":%.4f,\"%s_runq_ms\":%.4f,"
           "\"%s_majflt\":%ld,\"%s_minflt\":%ld,\"%s_vcsw\":%ld,"
           "\"%s_ivcsw\":%ld,\"%s_steal_ms_total\":%.0f,",
           name, s->wall / q, name, s->cpu / q, name, s->runq / q, name,
           s->majflt, name, s->minflt, name, s->vcsw, name, s->ivcsw, name,
           s->steal);
}

static void fnv_str(uint64_t *h, const char *s)
{
    if (s)
        *h = mtx_fnv1a(*h, s, strlen(s) + 1);
}

/* FNV-1a over every hit's chunk id, score, document id, title, text and
 * source, untimed: two builds returned the same hits when the sums of
 * their check passes agree. */
static uint64_t check_pass(struct mt_index *idx, char **q, size_t nq)
{
    uint64_t h = MTX_FNV1A_INIT;
    size_t i, j;

    for (i = 0; i < nq; i++) {
        struct mt_search_result *r = api_top10(idx, q[i]);
        h = mtx_fnv1a(h, &r->n, sizeof r->n);
        for (j = 0; j < r->n; j++) {
            const struct mt_search_hit *x = &r->hits[j];
            h = mtx_fnv1a(h, &x->chunk_id, sizeof x->chunk_id);
            h = mtx_fnv1a(h, &x->score, sizeof x->score);
            fnv_str(&h, x->doc_id);
            fnv_str(&h, x->title);
            fnv_str(&h, x->text);
            fnv_str(&h, x->source);
        }
        mt_search_result_free(r);
    }
    return h;
}

__attribute__((noinline)) static double core_pass(struct core *c, char **q,
                                                  size_t nq)
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
    struct span sa = {0}, sc = {0};
    double api[MAX_REPS], core_ms[MAX_REPS], secs;
    uint64_t chunks = 0, rss0, sum = 0;
    size_t nq = 0;
    char **q;
    int reps, r, fl, keep;

    if (argc < 3) {
        fprintf(
            stderr,
            "usage: bm25_mt STORE_DIR QUERIES.txt [REPS [byte|float|keep]]\n");
        return 2;
    }
    q = bu_lines(argv[2], &nq);
    reps = argc > 3 ? atoi(argv[3]) : 3;
    fl = !(argc > 4 && strcmp(argv[4], "byte") == 0);
    keep = argc > 4 && strcmp(argv[4], "keep") == 0;
    if (!q || nq == 0 || reps < 1 || reps > MAX_REPS)
        return 2;
    secs = keep ? 0.0 : build(argv[1], fl, &chunks);
    rss0 = bu_rss();
    if (mt_index_open(argv[1], &idx, &err) != MT_OK)
        die(argv[1], &err);
    mt_index_stats(idx, &st);
    api_pass(idx, q, nq < 100 ? nq : 100); /* warm-up */
    span_mark(&sa, -1);
    for (r = 0; r < reps; r++)
        api[r] = api_pass(idx, q, nq);
    span_mark(&sa, 1);
    sum = check_pass(idx, q, nq);
    core_open(&c, argv[1], st.analyzer);
    core_pass(&c, q, nq < 100 ? nq : 100);
    span_mark(&sc, -1);
    for (r = 0; r < reps; r++)
        core_ms[r] = core_pass(&c, q, nq);
    span_mark(&sc, 1);
    printf("{");
    span_print("api", &sa, nq * (size_t)reps);
    span_print("core", &sc, nq * (size_t)reps);
    printf("\"engine\":\"medtrust\",\"clock\":\"%s\",\"norms\":\"%s\","
           "\"load\":\"%s\",\"chunks\":%llu,\"build_s\":%.2f,"
           "\"chunks_per_s\":%.0f,\"index_bytes\":%llu,\"postings\":%llu,"
           "\"queries\":%zu,\"reps\":%d,\"ms_per_query\":%.4f,"
           "\"core_ms_per_query\":%.4f,\"hits_fnv\":\"%016llx\","
           "\"rss_search\":%llu,\"rss\":%llu}\n",
           bu_clock_name(),
           keep ? "kept"
           : fl ? "float"
                : "byte",
           bu_loadavg(), (unsigned long long)chunks, secs,
           secs > 0.0 ? (double)chunks / secs : 0.0,
           (unsigned long long)st.bytes, (unsigned long long)st.postings, nq,
           reps, bu_median(api, (size_t)reps), bu_median(core_ms, (size_t)reps),
           (unsigned long long)sum, (unsigned long long)(bu_rss() - rss0),
           (unsigned long long)bu_rss());
    core_close(&c);
    mt_index_close(idx);
    return 0;
}
