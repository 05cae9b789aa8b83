/* The model call's settings table (mt_llm_param_table): the numeric knobs
 * of struct mt_llm_params that every verb calling a model takes (its
 * timeout, retries and context), with their CLI options and help; the
 * defaults are mt_llm_default_params'. No HTTP request sets them: the
 * server's models are configured when it starts. */
#include <stddef.h>

#include "medtrust/model.h"

#define P(member) offsetof(struct mt_llm_params, member)

static const struct mt_param llm_params[] = {
    {"timeout", NULL, P(timeout_s), MT_PARAM_F64, 0.001, 86400, 0, "S",
     "seconds per model call (MEDTRUST_LLM_TIMEOUT sets the default)", NULL},
    {"retries", NULL, P(max_retries), MT_PARAM_U32, 0, 10, 0, "N",
     "HTTP retries per model call", NULL},
    {"ctx", NULL, P(n_ctx), MT_PARAM_U32, 256, 10000000, 0, "N",
     "the LLM's context in tokens: caps a gguf: model's trained context "
     "(default: trained, capped by memory); for an openai: server, its "
     "context (default: llama-server's /props, else what its first "
     "context-length error says)",
     "the model's"},
};

static void defaults(void *p)
{
    mt_llm_default_params(p);
}

const struct mt_param_table mt_llm_param_table = {
    "mt_llm_params", llm_params, sizeof llm_params / sizeof llm_params[0],
    sizeof(struct mt_llm_params), defaults};

/* The embedder's settings table (mt_embedder_param_table): the knobs of
 * struct mt_embedder_params that `embed` takes; its --timeout is the model
 * call's (mt_llm_param_table, whose default MEDTRUST_LLM_TIMEOUT sets). */
#undef P
#define P(member) offsetof(struct mt_embedder_params, member)

static const struct mt_param embedder_params[] = {
    {"dims", NULL, P(dims), MT_PARAM_U32, 1, 65536, 0, "N",
     "truncate vectors to N dimensions (Matryoshka)", "native"},
    {"threads", NULL, P(threads), MT_PARAM_U32, 1, 1024, 0, "N",
     "threads for local models", "all CPUs"},
};

static void embedder_defaults(void *p)
{
    mt_embedder_default_params(p);
}

const struct mt_param_table mt_embedder_param_table = {
    "mt_embedder_params", embedder_params,
    sizeof embedder_params / sizeof embedder_params[0],
    sizeof(struct mt_embedder_params), embedder_defaults};
