/* medtrust pieces shared by bm25_mt, hybrid_mt and index_recall: the BM25
 * core (one mmapped segment, the store's analyzer, a reusable search
 * context) and a failure exit. */
#ifndef MT_BENCH_MT_H
#define MT_BENCH_MT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "core/arena.h"
#include "index/bm25.h"
#include "medtrust/status.h"
#include "text/analyzer.h"

static inline void die(const char *what, const struct mt_error *err)
{
    fprintf(stderr, "bench: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

struct core {
    struct mt_bm25 *bm;
    struct mt_analyzer *an;
    struct mt_bm25_ctx *ctx;
    struct mt_arena arena;
};

/* Opens the segment the MANIFEST lists last (after a rebuild, the only
 * one) of the store in 'dir'. */
static inline void core_open(struct core *c, const char *dir,
                             const char *analyzer)
{
    char path[4096], name[256] = "";
    size_t n = 0;
    char *m, *p;

    snprintf(path, sizeof path, "%s/index/MANIFEST", dir);
    m = bu_load(path, &n);
    for (p = m; p && (p = strstr(p, "\"name\": \"")) != NULL; p++)
        sscanf(p + 9, "%255[^\"]", name);
    free(m);
    snprintf(path, sizeof path, "%s/index/%s.bm25", dir, name);
    if (mtx_bm25_open(path, &c->bm, NULL) != MT_OK ||
        mtx_analyzer_new(analyzer, &c->an, NULL) != MT_OK ||
        mtx_bm25_ctx_new(&c->ctx) != MT_OK)
        die(path, NULL);
    c->arena = MT_ARENA_INIT(16 * 1024);
}

/* Analyses q and finds its top k (k <= 64) on the segment. */
static inline size_t core_query(struct core *c, const char *q,
                                struct mt_bm25_hit *hits, size_t k)
{
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_str terms[4096];
    struct mt_token *toks = NULL;
    size_t nt = 0, nh = 0, j;

    sp.ctx = c->ctx;
    if (mtx_analyzer_collect(c->an, q, strlen(q), &c->arena, &toks, &nt,
                             NULL) != MT_OK)
        die("analyse", NULL);
    for (j = 0; j < nt && j < 4096; j++) {
        terms[j].p = toks[j].p;
        terms[j].n = toks[j].n;
    }
    if (mtx_bm25_search(c->bm, terms, j, &sp, hits, k, &nh, NULL) != MT_OK)
        die("bm25 search", NULL);
    mtx_arena_reset(&c->arena);
    return nh;
}

static inline void core_close(struct core *c)
{
    mtx_arena_free(&c->arena);
    mtx_bm25_ctx_free(c->ctx);
    mtx_analyzer_free(c->an);
    mtx_bm25_close(c->bm);
}

#endif
