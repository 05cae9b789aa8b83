/* use-lite throughput: embeds N sentences split from a JSONL corpus, or all
 * its chunks, and prints texts/s; bench/use_lite.sh runs it beside TF.js.
 * Usage: see parse() or run it without arguments. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/embed.h"
#include "model/use_lite.h"
#include "text/chunk.h"
#include "text/sentence.h"

struct opts {
    uint32_t threads, batch;
    size_t sentences;
    const char *dump, *corpus;
    int chunks, attention;
};

struct texts {
    struct mt_str *v;
    size_t n, cap;
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void push(struct texts *t, const char *p, size_t n)
{
    char *copy;

    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->v = realloc(t->v, t->cap * sizeof *t->v);
        if (!t->v)
            exit(2);
    }
    copy = malloc(n + 1);
    if (!copy)
        exit(2);
    memcpy(copy, p, n);
    copy[n] = '\0';
    t->v[t->n].p = copy;
    t->v[t->n++].n = n;
}

/* Sentences of 20..300 bytes on one line, as a sentence embedder sees. */
static void add_sentences(struct texts *t, const char *s, size_t n, size_t max)
{
    struct mt_span *sp = NULL;
    size_t c = 0, i;

    if (mtx_sentences_split(s, n, &sp, &c, NULL) != MT_OK)
        return;
    for (i = 0; i < c && t->n < max; i++) {
        size_t len = sp[i].end - sp[i].start;
        if (len >= 20 && len <= 300 && !memchr(s + sp[i].start, '\n', len))
            push(t, s + sp[i].start, len);
    }
    mt_free(sp);
}

static void add_chunks(struct texts *t, const char *s, size_t n)
{
    struct mt_chunk_params p;
    struct mt_chunk *ch = NULL;
    size_t c = 0, i;

    mtx_chunk_default_params(&p);
    if (mtx_chunk_text(s, n, &p, &ch, &c, NULL) != MT_OK)
        return;
    for (i = 0; i < c; i++)
        push(t, s + ch[i].start, ch[i].end - ch[i].start);
    mt_free(ch);
}

static int load(const struct opts *o, struct texts *t)
{
    struct mt_jsonl *r = NULL;
    struct mt_error err;
    json_t *obj;

    if (mtx_jsonl_open(o->corpus, NULL, &r, &err) != MT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    while (mtx_jsonl_next(r, &obj, &err) == MT_OK && obj) {
        json_t *text = json_object_get(obj, "text");
        const char *s = json_string_value(text);
        if (!s)
            continue;
        if (o->chunks)
            add_chunks(t, s, json_string_length(text));
        else if (t->n < o->sentences)
            add_sentences(t, s, json_string_length(text), o->sentences);
    }
    mtx_jsonl_close(r);
    return 0;
}

static int dump(const char *path, const struct texts *t)
{
    FILE *f = fopen(path, "w");
    size_t i;

    if (!f)
        return -1;
    for (i = 0; i < t->n; i++)
        fprintf(f, "%s\n", t->v[i].p);
    return fclose(f);
}

static int parse(int argc, char **argv, struct opts *o)
{
    int i;

    memset(o, 0, sizeof *o);
    o->threads = 1;
    o->sentences = 1000;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            o->threads = (uint32_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            o->batch = (uint32_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--sentences") == 0 && i + 1 < argc)
            o->sentences = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
            o->dump = argv[++i];
        else if (strcmp(argv[i], "--chunks") == 0)
            o->chunks = 1;
        else if (strcmp(argv[i], "--attention") == 0)
            o->attention = 1;
        else if (argv[i][0] != '-' && !o->corpus)
            o->corpus = argv[i];
        else
            return -1;
    }
    return o->corpus || o->attention ? 0 : -1;
}

/* ==== --attention: the attention kernel alone ==== */

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Peak of one core, assumed: 2.1 GHz x 2 FMA ports x 16 lanes x 2. */
#define PEAK_GFLOPS 134.4

/* All heads of one text of 'len' tokens at width din, 'reps' times, on
 * random Q/K/V in [-2, 2) (fixed seed); prints CPU time a text, GFLOP/s
 * of the useful work (QK^T and PV: 4 * len^2 * dh a head) and the
 * fraction of PEAK_GFLOPS. */
static void bench_attention_at(size_t din, size_t len, size_t reps)
{
    size_t ld = 3 * din, dh = din / MT_UL_HEADS, i, r, h;
    float *qkv = malloc(len * ld * sizeof *qkv);
    float *att = malloc(len * din * sizeof *att);
    float *scratch = malloc(MT_UL_ATT_SCRATCH * sizeof *scratch);
    float scale = 1.0f / sqrtf((float)dh), sink = 0.0f;
    uint32_t x = 12345u;
    double t0, s, flop;

    if (!qkv || !att || !scratch)
        exit(2);
    for (i = 0; i < len * ld; i++) {
        x = x * 1664525u + 1013904223u;
        qkv[i] = (float)(x >> 8) / 4194304.0f - 2.0f;
    }
    t0 = cpu_now();
    for (r = 0; r < reps; r++) {
        for (h = 0; h < MT_UL_HEADS; h++)
            mtx_ul_attend(qkv, ld, len, din, h * dh, scale, scratch, att);
        sink += att[r % (len * din)];
    }
    s = (cpu_now() - t0) / (double)reps;
    flop = 4.0 * (double)len * (double)len * (double)dh * MT_UL_HEADS;
    printf("attention din %zu len %3zu: %8.2f us a text (CPU), %6.2f "
           "GFLOP/s, %5.1f%% of %.1f (sink %g)\n",
           din, len, s * 1e6, flop / s / 1e9,
           100.0 * flop / s / 1e9 / PEAK_GFLOPS, PEAK_GFLOPS, (double)sink);
    free(qkv);
    free(att);
    free(scratch);
}

/* Layer 0 (width 256) and layer 1 (512) at a chunk's 128 tokens and at
 * sentence lengths. */
static void bench_attention(void)
{
    static const size_t lens[] = {128, 64, 20, 7};
    size_t i, l;

    for (l = 0; l < 2; l++)
        for (i = 0; i < sizeof lens / sizeof lens[0]; i++)
            bench_attention_at(l ? 512 : 256, lens[i],
                               2000000 / (lens[i] * lens[i]) + 200);
}

/* Embeds all texts in calls of 'per_call'; returns seconds. */
static double run(struct mt_embedder *e, const struct texts *t, size_t per_call,
                  float *out)
{
    struct mt_error err;
    double t0 = now();
    size_t i;

    for (i = 0; i < t->n; i += per_call) {
        size_t k = t->n - i < per_call ? t->n - i : per_call;
        if (mt_embedder_embed(e, t->v + i, k, out, &err) != MT_OK) {
            fprintf(stderr, "embed: %s\n", err.msg);
            exit(2);
        }
    }
    return now() - t0;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct texts t = {NULL, 0, 0}, warm;
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    struct mt_error err;
    double best = 1e30, load_s;
    float *out;
    int rep, reps;

    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr,
                "usage: %s [--threads T] [--batch B] [--sentences "
                "N] [--dump FILE] [--chunks] CORPUS.jsonl\n"
                "       %s --attention\n",
                argv[0], argv[0]);
        return 1;
    }
    if (o.attention) {
        bench_attention();
        return 0;
    }
    if (load(&o, &t) != 0 || t.n == 0 || (o.dump && dump(o.dump, &t)))
        return 1;
    mt_embedder_default_params(&p);
    p.threads = o.threads;
    p.batch_size = o.batch;
    load_s = now();
    if (mt_embedder_open("use-lite", &p, &e, &err) != MT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    load_s = now() - load_s;
    out = malloc(1024 * 512 * sizeof *out);
    if (!out)
        return 2;
    reps = o.chunks ? 1 : 5;
    warm = t;
    warm.n = t.n < 64 ? t.n : 64;
    run(e, &warm, 64, out); /* warm-up: page in the weights */
    for (rep = 0; rep < reps; rep++) {
        double s = run(e, &t, 1024, out);
        best = s < best ? s : best;
    }
    printf("use-lite C: %zu %s, threads %u: %.3f s, %.1f texts/s "
           "(best of %d; open %.3f s)\n",
           t.n, o.chunks ? "chunks" : "sentences", o.threads, best,
           (double)t.n / best, reps, load_s);
    mt_embedder_close(e);
    free(out);
    while (t.n--)
        free((void *)(uintptr_t)t.v[t.n].p);
    free(t.v);
    return 0;
}
