/* The configured models and a check that each loads (`medtrust models`):
 * which LLM, per-role LLMs, embedder, reranker and NLI model the options
 * and the environment name, and opening each (an LLM must also answer a
 * one-token chat). Names: mtx_ (docs/architecture.md). */
#ifndef MT_MODEL_PROBE_H
#define MT_MODEL_PROBE_H

#include <stddef.h>

#include "medtrust/model.h"

/* The specs given explicitly (NULL: not given, the environment's or the
 * default is taken). */
struct mtx_model_specs {
    const char *llm;            /* else MEDTRUST_LLM */
    const char *embedder;       /* else MEDTRUST_EMBEDDER, else use-lite;
                                   "none": no embedder */
    const char *query_embedder; /* listed only when given */
    const char *reranker;       /* else MEDTRUST_RERANKER */
    const char *nli;            /* else MEDTRUST_NLI */
};

/* Calls fn once for each configured model, in this order: "llm", an
 * "llm[ROLE]" for each MEDTRUST_LLM_<ROLE> in the environment,
 * "embedder", "query-embedder" (when given), "reranker" and "nli"; spec
 * is NULL for one that is not configured. */
void mtx_models_each(const struct mtx_model_specs *given,
                     void (*fn)(void *user, const char *kind, const char *spec),
                     void *user);

/* Opens the model 'spec' of 'kind' (as mtx_models_each names it) with
 * lp's timeout (and, for an LLM, its context, one retry) and, for an
 * LLM, asks a one-token chat. On MT_OK 'detail' (n bytes) says what it
 * found: an LLM's backend, model, context, answer time and server
 * profile, an embedder's dimensions, an NLI model's labels (else it is
 * empty); on failure 'err' says why. */
enum mt_status mtx_model_probe(const char *kind, const char *spec,
                               const struct mt_llm_params *lp, char *detail,
                               size_t n, struct mt_error *err);

#endif
