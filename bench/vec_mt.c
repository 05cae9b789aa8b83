/* medtrust vector benchmark over vec_gen's data: int8 flat scan (latency,
 * GB/s, recall) and int8 HNSW (build time, memory, and an ef sweep of
 * latency and recall@10 against exact float; queries on one thread).
 * Usage: vec_mt DATADIR N DIMS Q [FLAT_QUERIES [THREADS,... [VARIANTS,...]]]
 * THREADS: a comma list of build thread counts, one graph each, built
 * one after the other in this process over the same vectors (default
 * "1": the serial, deterministic build; 0 is one thread a core). The
 * first is "hnsw" in the JSON and is written to DATADIR/mt.hnsw (reused
 * by hybrid_mt); the others follow in "hnsw_more". Every build is timed
 * by the wall clock (build_wall_s) as well as by the bench clock
 * (build_s): the CPU clock adds up every thread's time, so only the wall
 * clock can show a parallel build's speed-up. On a shared machine the
 * wall clock also counts the time the build's threads sat ready for a core
 * that another job held: build_runq_s is that time for this thread (from
 * /proc/thread-self/schedstat; it runs build work too, and the workers
 * share one queue of nodes, so they finish together), and
 * build_ready_wall_s = build_wall_s - build_runq_s estimates the wall time
 * the build would take with the cores to itself.
 * VARIANTS: how the vector set keeps its vectors, each variant built with
 * every thread count (default "r4"):
 *   r4   int8 codes + 4-bit residual (the default set, what `index` writes)
 *   r2   int8 codes + 2-bit residual (`index --vectors int8r2`)
 *   i8   int8 codes only (refine 0): the vector bytes of USearch's i8, the
 *        recall capped by the codes
 *   f32  int8 codes + float32 copies (keep_float): exact re-scoring, the
 *        recall ceiling of a float index, at 5 bytes a component
 * r4 fills "hnsw" / "hnsw_more" as before (the first r4 graph is the one
 * kept as mt.hnsw); every other variant's builds follow in
 * "hnsw_variants". Each build names its "variant"; every graph is
 * written (file_bytes) and the sweep searches it as mtx_hnsw_open maps
 * it from that file (the links in the file's encoding, as `query` and
 * `serve` search them); all files but mt.hnsw are then removed.
 * MEDTRUST_BENCH_HNSW_M and MEDTRUST_BENCH_HNSW_EFC override M (16) and
 * ef_construction (200) for every build.
 * Prints one JSON object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "index/hnsw.h"
#include "index/simd.h"
#include "index/vec.h"

static const uint32_t efs[] = {16,  32,  48,  64,  96,  128,
                               192, 256, 384, 512, 768, 1024};
#define NEFS (sizeof efs / sizeof efs[0])
#define MAX_BUILDS 8

struct variant {
    const char *name;
    int refine;
    int keep_float;
    uint32_t refine_bits;
};

static const struct variant variants[] = {
    {"r4", 1, 0, 4}, {"i8", 0, 0, 4}, {"f32", 0, 1, 4}, {"r2", 1, 0, 2}};
#define NVARIANTS (sizeof variants / sizeof variants[0])

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

    mtx_vecset_search_flat(vs, dt->q, 10, NULL, hits, &n); /* warm-up */
    t0 = bu_now_ms();
    for (qi = 0; qi < nflat; qi++) {
        mtx_vecset_search_flat(vs, dt->q + (size_t)qi * dt->d, 10, NULL, hits,
                               &n);
        for (i = 0; i < n; i++)
            ids[i] = hits[i].id;
        rec += bu_recall10(ids, n, dt->gt + qi * 10);
    }
    ms = (bu_now_ms() - t0) / nflat;
    printf("\"flat\":{\"queries\":%u,\"ms\":%.4f,\"gbps\":%.3f,"
           "\"recall10\":%.4f,\"kernel\":\"%s\"},",
           nflat, ms, (double)dt->n * dt->d / (ms * 1e6), rec / nflat,
           mtx_simd_get()->name);
}

static void bench_ef(const struct mt_hnsw *h, const struct data *dt,
                     uint32_t ef, int last)
{
    struct mt_vec_hit hits[10];
    uint32_t ids[10], qi, n, i;
    double rec = 0.0, t0, ms;

    t0 = bu_now_ms();
    for (qi = 0; qi < dt->nq; qi++) {
        mtx_hnsw_search(h, dt->q + (size_t)qi * dt->d, 10, ef, NULL, hits, &n);
        for (i = 0; i < n; i++)
            ids[i] = hits[i].id;
        rec += bu_recall10(ids, n, dt->gt + qi * 10);
    }
    ms = (bu_now_ms() - t0) / dt->nq;
    printf("{\"ef\":%u,\"ms\":%.4f,\"recall10\":%.4f}%s", ef, ms, rec / dt->nq,
           last ? "" : ",");
}

/* A positive integer from the environment, else 'dflt'. */
static uint32_t env_u32(const char *name, uint32_t dflt)
{
    const char *v = getenv(name);
    unsigned long x = v ? strtoul(v, NULL, 10) : 0;

    return x > 0 ? (uint32_t)x : dflt;
}

/* Builds one graph on 'threads' threads, prints its JSON object (build
 * times, memory, sweep); writes it to 'path', kept when 'keep'. */
static int bench_build(const struct mt_vecset *vs, const struct data *dt,
                       uint32_t threads, const char *path, int keep,
                       const char *variant, uint64_t vec_rss)
{
    struct mt_hnsw_params hp = mtx_hnsw_default_params();
    struct mt_hnsw *h = NULL;
    uint64_t rss1, rss2, bytes = 0;
    double t0, w0, q0, build_ms, wall, runq;
    uint32_t i;

    hp.M = env_u32("MEDTRUST_BENCH_HNSW_M", 16);
    hp.ef_construction = env_u32("MEDTRUST_BENCH_HNSW_EFC", 200);
    hp.threads = threads;
    rss1 = bu_rss();
    t0 = bu_now_ms();
    w0 = bu_wall_ms();
    q0 = (bu_runq_ms() / 1e3);
    if (mtx_hnsw_build(vs, &hp, &h) != MT_OK)
        return -1;
    runq = (bu_runq_ms() / 1e3) - q0;
    wall = bu_wall_ms() - w0;
    build_ms = bu_now_ms() - t0;
    rss2 = bu_rss();
    if (mtx_hnsw_write(h, path, NULL) != MT_OK)
        return -1;
    bytes = bu_file_size(path);
    mtx_hnsw_free(h);
    h = NULL; /* the sweep searches the graph as a search opens it */
    if (mtx_hnsw_open(path, &h, NULL) != MT_OK)
        return -1;
    if (!keep)
        remove(path);
    printf("{\"variant\":\"%s\",\"M\":%u,\"ef_construction\":%u,\"threads\":%u,"
           "\"build_s\":%.2f,\"build_wall_s\":%.2f,\"build_runq_s\":%.2f,"
           "\"build_ready_wall_s\":%.2f,\"load\":\"%s\",\"vecset_rss\":%llu,"
           "\"graph_rss\":%llu,\"file_bytes\":%llu,\"sweep\":[",
           variant, hp.M, hp.ef_construction, threads, build_ms / 1e3,
           wall / 1e3, runq, wall / 1e3 - runq, bu_loadavg(),
           (unsigned long long)vec_rss, (unsigned long long)(rss2 - rss1),
           (unsigned long long)bytes);
    for (i = 0; i < 100 && i < dt->nq; i++) { /* warm-up */
        struct mt_vec_hit hits[10];
        uint32_t n;
        mtx_hnsw_search(h, dt->q + (size_t)i * dt->d, 10, 128, NULL, hits, &n);
    }
    for (i = 0; i < NEFS; i++)
        bench_ef(h, dt, efs[i], i + 1 == NEFS);
    printf("]}");
    mtx_hnsw_free(h);
    return 0;
}

/* Parses "1,2" into up to MAX_BUILDS thread counts; returns how many. */
static uint32_t parse_threads(const char *s, uint32_t *out)
{
    uint32_t n = 0;
    char *end;

    while (n < MAX_BUILDS && *s) {
        out[n++] = (uint32_t)strtoul(s, &end, 10);
        if (end == s)
            return 0;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Parses "r4,i8" into a bit set of variants; 0 for an unknown name. */
static unsigned parse_variants(const char *s)
{
    unsigned set = 0;
    size_t i, len;

    while (*s) {
        len = strcspn(s, ",");
        for (i = 0; i < NVARIANTS; i++)
            if (strlen(variants[i].name) == len &&
                strncmp(s, variants[i].name, len) == 0)
                break;
        if (i == NVARIANTS)
            return 0;
        set |= 1u << i;
        s += len + (s[len] == ',');
    }
    return set;
}

/* The set of one variant over every base vector; NULL on failure. */
static struct mt_vecset *make_set(const struct data *dt,
                                  const struct variant *v, uint64_t *rss)
{
    struct mt_vecset_params vp = mtx_vecset_default_params();
    struct mt_vecset *vs = NULL;
    uint64_t rss0 = bu_rss();
    size_t j;

    vp.refine = v->refine;
    vp.keep_float = v->keep_float;
    vp.refine_bits = v->refine_bits;
    if (mtx_vecset_new(dt->d, &vp, &vs) != MT_OK)
        return NULL;
    for (j = 0; j < dt->n; j++)
        if (mtx_vecset_add(vs, dt->base + j * dt->d, NULL) != MT_OK) {
            mtx_vecset_free(vs);
            return NULL;
        }
    *rss = bu_rss() - rss0;
    return vs;
}

/* Every build of one variant over 'vs' (NULL: made here; freed here);
 * r4's first graph is kept as DATADIR/mt.hnsw. */
static int bench_variant(const struct data *dt, const char *dir, uint32_t vi,
                         struct mt_vecset *vs, uint64_t rss,
                         const uint32_t *threads, uint32_t nbuild, int *first)
{
    const struct variant *v = &variants[vi];
    char path[4096];
    uint32_t i;

    if (!vs)
        vs = make_set(dt, v, &rss);
    if (!vs)
        return -1;
    for (i = 0; i < nbuild; i++) {
        int keep = vi == 0 && i == 0;
        if (vi == 0)
            printf(i == 0 ? "\"hnsw\":" : i == 1 ? ",\"hnsw_more\":[" : ",");
        else
            printf(*first ? ",\"hnsw_variants\":[" : ",");
        *first = vi == 0 ? *first : 0;
        snprintf(path, sizeof path, keep ? "%s/mt.hnsw" : "%s/mt-%s.hnsw", dir,
                 v->name);
        if (bench_build(vs, dt, threads[i], path, keep, v->name, rss) != 0) {
            mtx_vecset_free(vs);
            return -1;
        }
        fflush(stdout);
    }
    if (vi == 0 && nbuild > 1)
        printf("]");
    mtx_vecset_free(vs);
    return 0;
}

int main(int argc, char **argv)
{
    struct data dt = {0};
    struct mt_vecset *vs = NULL;
    uint32_t nflat, threads[MAX_BUILDS], nbuild, vi;
    unsigned vset;
    uint64_t rss;
    int first = 1;

    if (argc < 5) {
        fprintf(stderr, "usage: vec_mt DATADIR N DIMS Q [FLAT_QUERIES "
                        "[THREADS,... [VARIANTS,...]]]\n");
        return 2;
    }
    dt.n = strtoull(argv[2], NULL, 10);
    dt.d = (uint32_t)strtoul(argv[3], NULL, 10);
    dt.nq = (uint32_t)strtoul(argv[4], NULL, 10);
    nflat = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 200;
    if (nflat > dt.nq)
        nflat = dt.nq;
    nbuild = parse_threads(argc > 6 ? argv[6] : "1", threads);
    vset = parse_variants(argc > 7 ? argv[7] : "r4");
    if (nbuild == 0 || !(vset & 1u)) {
        fprintf(stderr,
                "vec_mt: bad THREADS '%s' or VARIANTS '%s' (r4 "
                "first, then any of i8, f32, r2)\n",
                argc > 6 ? argv[6] : "", argc > 7 ? argv[7] : "");
        return 2;
    }
    if (load(&dt, argv[1]) != 0) {
        fprintf(stderr, "vec_mt: cannot load %s\n", argv[1]);
        return 1;
    }
    printf("{\"engine\":\"medtrust\",\"clock\":\"%s\",\"n\":%zu,\"dims\":%u,"
           "\"queries\":%u,\"load\":\"%s\",",
           bu_clock_name(), dt.n, dt.d, dt.nq, bu_loadavg());
    vs = make_set(&dt, &variants[0], &rss);
    if (!vs)
        return 1;
    bench_flat(vs, &dt, nflat);
    for (vi = 0; vi < NVARIANTS; vi++)
        if ((vset & (1u << vi)) &&
            bench_variant(&dt, argv[1], vi, vi == 0 ? vs : NULL, rss, threads,
                          nbuild, &first) != 0)
            return 1;
    printf("%s,\"load_end\":\"%s\"}\n", first ? "" : "]", bu_loadavg());
    return 0;
}
