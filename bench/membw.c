/* Memory bandwidth probe: streams a 1 GiB buffer (far past the caches)
 * summing 64-bit words, with 1 and with 2 threads; prints the best of 5
 * runs in GB/s (10^9 bytes/s) as one JSON object. Built -O3 -march=native
 * so the loop is vectorised: the number is what a read-only scan can get.
 * Usage: membw [MiB] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

struct job {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
};

static void *scan(void *arg)
{
    struct job *j = arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i;

    for (i = 0; i + 4 <= j->n; i += 4) {
        s0 += j->p[i];
        s1 += j->p[i + 1];
        s2 += j->p[i + 2];
        s3 += j->p[i + 3];
    }
    j->sum = s0 + s1 + s2 + s3;
    return NULL;
}

static double best_gbps(const uint64_t *buf, size_t words, int threads)
{
    double best = 0.0;
    int r, t;

    for (r = 0; r < 5; r++) {
        struct job jobs[2];
        pthread_t th[2];
        double t0 = bu_now_ms(), ms;
        for (t = 0; t < threads; t++) {
            jobs[t].p = buf + words / (size_t)threads * (size_t)t;
            jobs[t].n = words / (size_t)threads;
            pthread_create(&th[t], NULL, scan, &jobs[t]);
        }
        for (t = 0; t < threads; t++)
            pthread_join(th[t], NULL);
        ms = bu_now_ms() - t0;
        if (jobs[0].sum == 42) /* keep the sum alive */
            fputc(' ', stderr);
        if (words * 8.0 / (ms * 1e6) > best)
            best = words * 8.0 / (ms * 1e6);
    }
    return best;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
    size_t words = mib * 1024 * 1024 / 8;
    uint64_t *buf = malloc(words * 8);

    if (!buf) {
        fprintf(stderr, "membw: out of memory\n");
        return 1;
    }
    memset(buf, 1, words * 8);
    printf("{\"mib\":%zu,\"read_gbps_1t\":%.2f,\"read_gbps_2t\":%.2f}\n", mib,
           best_gbps(buf, words, 1), best_gbps(buf, words, 2));
    free(buf);
    return 0;
}
