/* Model runtime benchmarks: embedding sentences/s and rerank pairs/s of
 * llama.cpp BERT models through medtrust, and generation tokens/s of a
 * chat model through medtrust vs a bare llama.cpp loop.
 *   model_bench embed|rerank|gen MODEL.gguf [THREADS [SENTENCES]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llama.h>

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/embed.h"
#include "model/llama_rt.h"
#include "model/rerank.h"

#define GEN_TOKENS 64

static const char *words[] = {
    "patient", "aspirin", "fever",   "chronic",  "renal",     "dose",
    "mg",      "daily",   "history", "of",       "presented", "with",
    "acute",   "chest",   "pain",    "and",      "the",       "was",
    "treated", "insulin", "blood",   "pressure", "elevated",  "diabetes",
    "therapy", "after"};

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ~95-byte pseudo-clinical sentences, deterministic. */
static char *sentence(unsigned i)
{
    char *s = malloc(160);
    size_t n = 0;
    unsigned r = i * 2654435761u + 1;

    s[0] = '\0';
    while (n < 90) {
        r = r * 1103515245u + 12345u;
        n += (size_t)snprintf(
            s + n, 160 - n, "%s ",
            words[(r >> 16) % (sizeof words / sizeof words[0])]);
    }
    return s;
}

static int bench_embed(const char *path, uint32_t threads, unsigned N_SENT)
{
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    struct mt_error err;
    struct mt_str t[32];
    char spec[4200];
    char **s = malloc(N_SENT * sizeof *s);
    float *v;
    double t0;
    unsigned i;
    unsigned k;

    mt_embedder_default_params(&p);
    p.threads = threads;
    snprintf(spec, sizeof spec, "gguf:%s", path);
    if (mt_embedder_open(spec, &p, &e, &err) != MT_OK)
        return fprintf(stderr, "%s\n", err.msg), 1;
    v = malloc(32 * mt_embedder_dims(e) * sizeof *v);
    for (i = 0; i < N_SENT; i++)
        s[i] = sentence(i);
    t0 = now();
    for (i = 0; i < N_SENT; i += 32) {
        for (k = 0; k < 32 && i + k < N_SENT; k++)
            t[k] = mtx_str_from(s[i + k]);
        mt_embedder_embed(e, t, k, v, &err);
    }
    printf("embed: %u sentences in %.2f s = %.1f sentences/s\n", N_SENT,
           now() - t0, N_SENT / (now() - t0));
    for (i = 0; i < N_SENT; i++)
        free(s[i]);
    free(s);
    free(v);
    mt_embedder_close(e);
    return 0;
}

static int bench_rerank(const char *path, uint32_t threads)
{
    struct mt_reranker_params p;
    struct mt_reranker *r = NULL;
    struct mt_error err;
    struct mt_str d[50];
    char *s[50];
    float sc[50];
    double t0;
    unsigned q;
    unsigned i;
    char spec[1024];

    mt_reranker_default_params(&p);
    p.threads = threads;
    snprintf(spec, sizeof spec, "gguf:%s", path);
    if (mt_reranker_open(spec, &p, &r, &err) != MT_OK)
        return fprintf(stderr, "%s\n", err.msg), 1;
    for (i = 0; i < 50; i++) {
        s[i] = sentence(i);
        d[i] = mtx_str_from(s[i]);
    }
    t0 = now();
    for (q = 0; q < 10; q++)
        mt_reranker_score(r, "aspirin dose in chronic renal disease", d, 50, sc,
                          &err);
    printf("rerank: 10 queries x 50 candidates in %.2f s = %.1f pairs/s\n",
           now() - t0, 500 / (now() - t0));
    for (i = 0; i < 50; i++)
        free(s[i]);
    mt_reranker_close(r);
    return 0;
}

static const struct llama_chat_message direct_msg[] = {
    {"user", "Summarise the patient's history of chronic renal disease."}};

/* The same work as the gguf chat backend, without medtrust around it. */
static double direct_gen(struct llama_model *m, struct llama_context *c,
                         int *ntok)
{
    const struct llama_vocab *v = llama_model_get_vocab(m);
    char buf[4096];
    llama_token t[1024];
    double t0 = now();
    int32_t len =
        llama_chat_apply_template(llama_model_chat_template(m, NULL),
                                  direct_msg, 1, true, buf, sizeof buf);
    int32_t np = llama_tokenize(v, buf, len, t, 1024, true, true);
    struct llama_sampler *s = llama_sampler_init_greedy();
    llama_token tok;
    int k;

    llama_memory_clear(llama_get_memory(c), true);
    llama_decode(c, llama_batch_get_one(t, np - 1));
    tok = t[np - 1];
    for (k = 0; k < GEN_TOKENS; k++) {
        char piece[256];
        llama_decode(c, llama_batch_get_one(&tok, 1));
        tok = llama_sampler_sample(s, c, -1);
        if (llama_vocab_is_eog(v, tok))
            break;
        llama_token_to_piece(v, tok, piece, sizeof piece, 0, false);
    }
    *ntok = k;
    llama_sampler_free(s);
    return now() - t0;
}

static int bench_gen(const char *path, uint32_t threads)
{
    struct mt_llm_params p;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_llm *l = NULL;
    struct mt_error err;
    struct llama_context_params lp = llama_context_default_params();
    struct llama_model *m = NULL;
    struct llama_context *c;
    struct mt_llm_message msg = {"user", direct_msg[0].content};
    char spec[1024];
    double best_mt = 1e9;
    double best_ll = 1e9;
    int n_mt = 0;
    int n_ll = 0;
    int i;

    mt_llm_default_params(&p);
    p.threads = threads;
    p.n_ctx = 1024;
    mt_chat_default_params(&cp);
    cp.max_tokens = GEN_TOKENS;
    snprintf(spec, sizeof spec, "gguf:%s", path);
    if (mt_llm_open(spec, &p, &l, &err) != MT_OK)
        return fprintf(stderr, "%s\n", err.msg), 1;
    mtx_llama_load(path, MT_LLAMA_CHAT, "bench", &m, &err);
    lp.n_ctx = lp.n_batch = 1024;
    lp.n_seq_max = 1;
    lp.n_threads = lp.n_threads_batch = (int32_t)threads;
    lp.no_perf = true;
    c = llama_init_from_model(m, lp);
    for (i = 0; i < 4; i++) { /* alternate, keep the best of each */
        double t0 = now();
        int n;
        double d;
        mt_llm_chat(l, &msg, 1, &cp, &r, &err);
        d = now() - t0;
        if (d < best_mt) {
            best_mt = d;
            n_mt = (int)r.completion_tokens;
        }
        mt_chat_result_free(&r);
        d = direct_gen(m, c, &n);
        if (d < best_ll) {
            best_ll = d;
            n_ll = n;
        }
    }
    printf("gen: medtrust %d tokens in %.3f s = %.2f tokens/s; llama.cpp "
           "%d tokens in %.3f s = %.2f tokens/s; overhead %+.2f%%\n",
           n_mt, best_mt, n_mt / best_mt, n_ll, best_ll, n_ll / best_ll,
           100.0 * ((n_ll / best_ll) / (n_mt / best_mt) - 1.0));
    llama_free(c);
    mt_llm_close(l);
    mtx_llama_release(m);
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t th = argc > 3 ? (uint32_t)atoi(argv[3]) : 0;

    if (argc < 3)
        return fprintf(stderr, "usage: model_bench embed|rerank|gen "
                               "MODEL.gguf [THREADS]\n"),
               2;
    if (strcmp(argv[1], "embed") == 0)
        return bench_embed(argv[2], th,
                           argc > 4 ? (unsigned)atoi(argv[4]) : 1000);
    if (strcmp(argv[1], "rerank") == 0)
        return bench_rerank(argv[2], th);
    return bench_gen(argv[2], th ? th : 2);
}
