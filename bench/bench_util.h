/* Small helpers shared by the retrieval benchmark programs (C and C++):
 * a monotonic clock, resident memory from /proc, whole-file loading, the
 * query list, recall@10 against vec_gen's ground truth and medians. */
#ifndef MT_BENCH_UTIL_H
#define MT_BENCH_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The clock every timing uses: wall time (CLOCK_MONOTONIC) by default, or
 * the process's CPU time (user + system, CLOCK_PROCESS_CPUTIME_ID) when
 * MEDTRUST_BENCH_CLOCK=cpu, which keeps single-threaded timings honest on
 * a machine shared with other jobs (time spent waiting for a core or a
 * disk is not counted). */
static inline const char *bu_clock_name(void)
{
    const char *e = getenv("MEDTRUST_BENCH_CLOCK");

    return e && strcmp(e, "cpu") == 0 ? "cpu" : "wall";
}

static inline double bu_now_ms(void)
{
    static int cpu = -1;
    struct timespec ts;

    if (cpu < 0)
        cpu = strcmp(bu_clock_name(), "cpu") == 0;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Wall-clock milliseconds (CLOCK_MONOTONIC) whatever the bench clock is:
 * what a parallel build is timed by. */
static inline double bu_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Reads "VmRSS:" or "VmHWM:" (key) from /proc/self/status, in bytes. */
static inline uint64_t bu_proc_kb(const char *key)
{
    char line[256];
    uint64_t kb = 0;
    FILE *f = fopen("/proc/self/status", "r");

    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            kb = strtoull(line + strlen(key), NULL, 10);
    fclose(f);
    return kb * 1024u;
}

static inline uint64_t bu_rss(void)
{
    return bu_proc_kb("VmRSS:");
}

/* Loads a whole file; *n gets its size. NULL on failure (printed). */
static inline void *bu_load(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    long sz;
    void *p;

    if (!f || fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0) {
        perror(path);
        if (f)
            fclose(f);
        return NULL;
    }
    rewind(f);
    p = malloc((size_t)sz + 1);
    if (!p || fread(p, 1, (size_t)sz, f) != (size_t)sz) {
        perror(path);
        fclose(f);
        free(p);
        return NULL;
    }
    fclose(f);
    ((char *)p)[sz] = '\0';
    *n = (size_t)sz;
    return p;
}

/* Splits a text file into lines in place: returns an array of *n
 * NUL-terminated lines (empty lines dropped). */
static inline char **bu_lines(const char *path, size_t *n)
{
    size_t sz = 0, cap = 1024, i;
    char *buf = (char *)bu_load(path, &sz);
    char **v = (char **)malloc(cap * sizeof *v);
    char *p;

    *n = 0;
    if (!buf || !v)
        return NULL;
    for (p = buf; p < buf + sz;) {
        char *e = strchr(p, '\n');
        if (!e)
            e = buf + sz;
        *e = '\0';
        if (e > p) {
            if (*n == cap) {
                cap *= 2;
                v = (char **)realloc(v, cap * sizeof *v);
            }
            v[(*n)++] = p;
        }
        p = e + 1;
    }
    for (i = 0; i < *n; i++)
        if (!v[i])
            return NULL;
    return v;
}

/* recall@10: |found ∩ truth| / 10 for one query. */
static inline double bu_recall10(const uint32_t *found, uint32_t nfound,
                                 const uint32_t *truth)
{
    uint32_t i, j, hit = 0;

    for (i = 0; i < nfound && i < 10; i++)
        for (j = 0; j < 10; j++)
            if (found[i] == truth[j]) {
                hit++;
                break;
            }
    return hit / 10.0;
}

static inline int bu_dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
/* Milliseconds the calling thread has waited runnable for a core
 * (/proc/thread-self/schedstat's second field); 0 where the kernel has
 * none. */
static inline double bu_runq_ms(void)
{
    unsigned long long run = 0, wait = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");

    if (!f)
        return 0.0;
    if (fscanf(f, "%llu %llu", &run, &wait) != 2)
        wait = 0;
    fclose(f);
    return (double)wait / 1e6;
}

static inline double bu_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, bu_dcmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* The p-quantile of v[0..n) by nearest rank (sorts v); n > 0. */
static inline double bu_percentile(double *v, size_t n, double p)
{
    size_t i;

    bu_median(v, n); /* sorts */
    i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static inline uint64_t bu_file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    long sz;

    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fclose(f);
    return sz < 0 ? 0 : (uint64_t)sz;
}

/* The 1, 5 and 15 minute load averages from /proc/loadavg ("?" when it
 * cannot be read), in a static buffer: timings on a shared machine are
 * printed with the load they were taken at. */
static inline const char *bu_loadavg(void)
{
    static char buf[64];
    FILE *f = fopen("/proc/loadavg", "r");
    double a = 0, b = 0, c = 0;

    if (!f || fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3)
        snprintf(buf, sizeof buf, "?");
    else
        snprintf(buf, sizeof buf, "%.2f %.2f %.2f", a, b, c);
    if (f)
        fclose(f);
    return buf;
}

/* ==== Per-document ranking quality, as medtrust retrieval-eval does ==== */

/* nDCG@10 with binary gains: rel[i] is 1 when the document at rank i+1 is
 * relevant; nrel relevant documents exist in all. */
static inline double bu_ndcg10(const int *rel, size_t n, size_t nrel)
{
    double dcg = 0.0, ideal = 0.0;
    size_t i;

    for (i = 0; i < n && i < 10; i++)
        if (rel[i])
            dcg += 1.0 / log2((double)i + 2.0);
    for (i = 0; i < nrel && i < 10; i++)
        ideal += 1.0 / log2((double)i + 2.0);
    return ideal > 0.0 ? dcg / ideal : 0.0;
}

static inline double bu_mrr10(const int *rel, size_t n)
{
    size_t i;

    for (i = 0; i < n && i < 10; i++)
        if (rel[i])
            return 1.0 / (double)(i + 1);
    return 0.0;
}

/* A relevance-judged query: "QUERY<TAB>ID ID ..." split in place. */
struct bu_qrel {
    char *query;
    char *rel[16];
    size_t nrel;
};

static inline void bu_qrel_parse(char *line, struct bu_qrel *q)
{
    char *t = strchr(line, '\t'), *save = NULL, *tok;

    q->query = line;
    q->nrel = 0;
    if (!t)
        return;
    *t = '\0';
    for (tok = strtok_r(t + 1, " ", &save); tok && q->nrel < 16;
         tok = strtok_r(NULL, " ", &save))
        q->rel[q->nrel++] = tok;
}

/* Whether doc id 'id' is among the query's relevant ones. */
static inline int bu_is_rel(const struct bu_qrel *q, const char *id)
{
    size_t i;

    for (i = 0; i < q->nrel; i++)
        if (strcmp(q->rel[i], id) == 0)
            return 1;
    return 0;
}

#endif
