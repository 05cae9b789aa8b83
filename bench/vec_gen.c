/* Clustered synthetic vectors for the vector benchmarks: N base and Q query
 * unit vectors (C Gaussian clusters, noise of norm about 0.8 around unit
 * centres, as in tests/unit/test_hnsw.c) and the exact float top-10 of each
 * query. Usage: vec_gen OUTDIR N DIMS Q [CLUSTERS] [SEED]
 * Writes OUTDIR/base.f32, query.f32 (row-major float32) and gt.u32 (10 ids
 * a query), which every engine's benchmark program reads. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GT_K 10
#define BLOCK 4096u

static uint64_t rng_state = 12345;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(void) /* (0, 1] */
{
    return (double)((rng_next() >> 11) + 1) * 0x1p-53;
}

static float rng_gauss(void)
{
    double u = rng_uniform();
    double v = rng_uniform();

    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static void normalize(float *v, uint32_t d)
{
    double s = 0.0;
    uint32_t j;

    for (j = 0; j < d; j++)
        s += (double)v[j] * (double)v[j];
    s = 1.0 / sqrt(s);
    for (j = 0; j < d; j++)
        v[j] = (float)(v[j] * s);
}

static void clustered(float *out, size_t n, uint32_t d, const float *centres,
                      uint32_t nc, float sigma)
{
    size_t i;
    uint32_t j;

    for (i = 0; i < n; i++) {
        const float *c = centres + (rng_next() % nc) * d;
        for (j = 0; j < d; j++)
            out[i * d + j] = c[j] + sigma * rng_gauss();
        normalize(out + i * d, d);
    }
}

/* ==== Exact top-10, blocked over the base so a block stays in cache ==== */

struct gt_job {
    const float *base, *q;
    size_t n;
    uint32_t d, q0, q1;
    uint32_t *ids;
    float *sc;
};

static void push(uint32_t *ids, float *sc, uint32_t id, float s)
{
    int i = GT_K - 1;

    /* sorted best first; ties by lower id, which arrives first */
    if (s <= sc[i])
        return;
    while (i > 0 && s > sc[i - 1]) {
        sc[i] = sc[i - 1];
        ids[i] = ids[i - 1];
        i--;
    }
    sc[i] = s;
    ids[i] = id;
}

static void *gt_run(void *arg)
{
    struct gt_job *g = arg;
    size_t b0, i;
    uint32_t qi, j, k;

    for (qi = g->q0; qi < g->q1; qi++)
        for (j = 0; j < GT_K; j++) {
            g->ids[qi * GT_K + j] = UINT32_MAX;
            g->sc[qi * GT_K + j] = -INFINITY;
        }
    for (b0 = 0; b0 < g->n; b0 += BLOCK) {
        size_t b1 = b0 + BLOCK < g->n ? b0 + BLOCK : g->n;
        for (qi = g->q0; qi < g->q1; qi++) {
            const float *q = g->q + (size_t)qi * g->d;
            for (i = b0; i < b1; i++) {
                const float *v = g->base + i * g->d;
                float acc[16] = {0}, s = 0.0f;
                /* 16 independent sums so the loop vectorises */
                for (j = 0; j + 16 <= g->d; j += 16)
                    for (k = 0; k < 16; k++)
                        acc[k] += q[j + k] * v[j + k];
                for (; j < g->d; j++)
                    s += q[j] * v[j];
                for (k = 0; k < 16; k++)
                    s += acc[k];
                push(g->ids + qi * GT_K, g->sc + qi * GT_K, (uint32_t)i, s);
            }
        }
    }
    return NULL;
}

static int write_file(const char *dir, const char *name, const void *p,
                      size_t n)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    enum { THREADS = 2 };
    struct gt_job jobs[THREADS];
    pthread_t th[THREADS];
    size_t n;
    uint32_t d, nq, nc = 100, t, i;
    float *centres, *base, *q, *sc;
    uint32_t *ids;

    if (argc < 5) {
        fprintf(stderr, "usage: vec_gen OUTDIR N DIMS Q [CLUSTERS] [SEED]\n");
        return 2;
    }
    n = strtoull(argv[2], NULL, 10);
    d = (uint32_t)strtoul(argv[3], NULL, 10);
    nq = (uint32_t)strtoul(argv[4], NULL, 10);
    if (argc > 5)
        nc = (uint32_t)strtoul(argv[5], NULL, 10);
    if (argc > 6)
        rng_state = strtoull(argv[6], NULL, 10);
    centres = malloc(sizeof(float) * nc * d);
    base = malloc(sizeof(float) * n * d);
    q = malloc(sizeof(float) * nq * d);
    ids = malloc(sizeof(uint32_t) * nq * GT_K);
    sc = malloc(sizeof(float) * nq * GT_K);
    if (!centres || !base || !q || !ids || !sc || !n || !d || !nq || !nc) {
        fprintf(stderr, "vec_gen: bad arguments or out of memory\n");
        return 2;
    }
    for (i = 0; i < nc * d; i++)
        centres[i] = rng_gauss();
    for (i = 0; i < nc; i++)
        normalize(centres + (size_t)i * d, d);
    /* noise of norm ~0.8: sigma = 0.8 / sqrt(d) */
    clustered(base, n, d, centres, nc, (float)(0.8 / sqrt((double)d)));
    clustered(q, nq, d, centres, nc, (float)(0.8 / sqrt((double)d)));
    for (t = 0; t < THREADS; t++) {
        jobs[t] = (struct gt_job){
            base, q, n, d, nq * t / THREADS, nq * (t + 1) / THREADS, ids, sc};
        pthread_create(&th[t], NULL, gt_run, &jobs[t]);
    }
    for (t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    if (write_file(argv[1], "base.f32", base, sizeof(float) * n * d) ||
        write_file(argv[1], "query.f32", q, sizeof(float) * nq * d) ||
        write_file(argv[1], "gt.u32", ids, sizeof(uint32_t) * nq * GT_K))
        return 1;
    fprintf(stderr, "vec_gen: %zu x %u base, %u queries, %u clusters\n", n, d,
            nq, nc);
    return 0;
}
