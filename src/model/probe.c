/* The configured models and a check that each loads (model/probe.h):
 * what `medtrust models` lists and checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/embed.h"
#include "model/llm.h"
#include "model/nli.h"
#include "model/probe.h"
#include "model/rerank.h"

extern char **environ;

/* "context N tokens" and where it came from, or that it is unknown. */
static void context_detail(struct mt_llm *l, char *buf, size_t n)
{
    uint32_t c = mt_llm_n_ctx(l);
    int gguf = strcmp(mt_llm_backend(l), "gguf") == 0;

    if (c)
        snprintf(buf, n, "context %u tokens%s", (unsigned)c,
                 gguf ? "" : " (a slot's, or --ctx)");
    else
        snprintf(buf, n,
                 "context unknown (the server does not say: set "
                 "--ctx, or it is read from its first "
                 "context-length error)");
}

static enum mt_status probe_llm(const char *spec,
                                const struct mt_llm_params *lp, char *detail,
                                size_t n, struct mt_error *err)
{
    char cx[160];
    static const struct mt_llm_message ping[] = {{"user", "ping"}};
    struct mt_llm_params p = *lp;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_llm *l = NULL;
    enum mt_status st;

    p.max_retries = 1;
    mt_chat_default_params(&cp);
    cp.max_tokens = 1;
    st = mt_llm_open(spec, &p, &l, err);
    if (st == MT_OK)
        st = mt_llm_chat(l, ping, 1, &cp, &r, err);
    if (st == MT_ELIMIT && strstr(err->msg, "on reasoning")) {
        /* a reasoning model thinks past a 1-token ping: it answered */
        st = MT_OK;
        memset(&r, 0, sizeof r);
    }
    if (st == MT_OK) {
        const char *prof = mt_llm_profile(l);
        context_detail(l, cx, sizeof cx);
        snprintf(detail, n, "%s model %s, %s, answered in %.2f s%s%s",
                 mt_llm_backend(l), mt_llm_model(l), cx, r.seconds,
                 prof ? "; server profile: " : "", prof ? prof : "");
        mt_chat_result_free(&r);
    }
    mt_llm_close(l);
    return st;
}

static enum mt_status probe_other(const char *kind, const char *spec,
                                  double timeout, char *detail, size_t n,
                                  struct mt_error *err)
{
    struct mt_embedder_params ep;
    struct mt_reranker_params rp;
    struct mt_embedder *e = NULL;
    struct mt_reranker *r = NULL;
    struct mt_nli *nli = NULL;
    enum mt_status st;

    mt_embedder_default_params(&ep);
    mt_reranker_default_params(&rp);
    ep.timeout_s = rp.timeout_s = timeout;
    if (strncmp(kind, "embedder", 8) == 0 ||
        strcmp(kind, "query-embedder") == 0) {
        st = mt_embedder_open(spec, &ep, &e, err);
        if (st == MT_OK)
            snprintf(detail, n, "%u dimensions", mt_embedder_dims(e));
    } else if (strcmp(kind, "reranker") == 0) {
        st = mt_reranker_open(spec, &rp, &r, err);
    } else {
        st = mt_nli_open(spec, &rp, &nli, err);
        if (st == MT_OK && mt_nli_describe(nli))
            snprintf(detail, n, "%s", mt_nli_describe(nli));
    }
    mt_embedder_close(e);
    mt_reranker_close(r);
    mt_nli_close(nli);
    return st;
}

enum mt_status mtx_model_probe(const char *kind, const char *spec,
                               const struct mt_llm_params *lp, char *detail,
                               size_t n, struct mt_error *err)
{
    if (n)
        detail[0] = '\0';
    if (strncmp(kind, "llm", 3) == 0)
        return probe_llm(spec, lp, detail, n, err);
    return probe_other(kind, spec, lp->timeout_s, detail, n, err);
}

/* 'given', else the environment variable env, else dflt; an empty value
 * counts as none. */
static const char *given_or_env(const char *given, const char *env,
                                const char *dflt)
{
    const char *v = given ? given : getenv(env);

    return v && *v ? v : dflt;
}

/* Every MEDTRUST_LLM_<ROLE>=SPEC in the environment (a ROLE of up to 37
 * characters). */
static void each_role(void (*fn)(void *, const char *, const char *),
                      void *user)
{
    char role[38], kind[64];
    const char *spec;
    char **e;

    for (e = environ; *e; e++) {
        if (!(spec = mtx_llm_env_role(*e, role, sizeof role)))
            continue;
        snprintf(kind, sizeof kind, "llm[%s]", role);
        fn(user, kind, spec);
    }
}

void mtx_models_each(const struct mtx_model_specs *given,
                     void (*fn)(void *user, const char *kind, const char *spec),
                     void *user)
{
    const char *emb =
        given_or_env(given->embedder, "MEDTRUST_EMBEDDER", "use-lite");

    fn(user, "llm", given_or_env(given->llm, "MEDTRUST_LLM", NULL));
    each_role(fn, user);
    /* "none" means an index without vectors: no embedder to check */
    fn(user, "embedder", strcmp(emb, "none") == 0 ? NULL : emb);
    if (given->query_embedder)
        fn(user, "query-embedder", given->query_embedder);
    fn(user, "reranker",
       given_or_env(given->reranker, "MEDTRUST_RERANKER", NULL));
    fn(user, "nli", given_or_env(given->nli, "MEDTRUST_NLI", NULL));
}
