/* The checker's settings table (mt_agent_param_table): every numeric
 * knob of struct mt_agent_params with its CLI option, its POST /v1/check
 * member, bounds and help; the defaults are mt_agent_default_params'. */
#include <stddef.h>

#include "medtrust/check.h"

#define P(member) offsetof(struct mt_agent_params, member)

/* The server's lower caps: a check runs on a shared job worker, so the
 * rounds and steps it may take (each a model call) and the passages given
 * to the model (20 of 1,200 bytes already fill much of a small model's
 * context) are bounded tighter than a command run by its owner. */
static const struct mt_param agent_params[] = {
    {"evidence-tokens", NULL, P(evidence_tokens), MT_PARAM_U32, 100, 1e7, 0,
     "N",
     "most tokens of the trajectory and passages shown to MedEval and "
     "MedReFlex, less when the model's context leaves less; the oldest "
     "search's lowest-ranked passages are dropped first",
     NULL},
    {"shots", NULL, P(max_few_shot), MT_PARAM_U32, 1, 64, 0, "K",
     "examples per note for single", NULL},
    {"dims", NULL, P(dims), MT_PARAM_U32, 1, 65536, 0, "N",
     "truncate query vectors to N dimensions (Matryoshka; the paper: 256), "
     "which must be the index's",
     "the index's"},
    {"steps", "max_steps", P(max_steps), MT_PARAM_U32, 1, 32, 12, "N",
     "MedReAct steps (searches) per round, N", NULL},
    {"rounds", "max_rounds", P(max_rounds), MT_PARAM_U32, 1, 32, 10, "M",
     "MedReFlex rounds, M", NULL},
    {"evaluators", NULL, P(n_evals), MT_PARAM_U32, 1, 64, 0, "N",
     "MedEval samples", NULL},
    {"accept-mean", "accept_mean", P(accept_mean), MT_PARAM_F64, 1, 5, 0, "X",
     "MedEval: accept when the mean final score reaches this", NULL},
    {"accept-min", "accept_min", P(accept_min), MT_PARAM_F64, 1, 5, 0, "X",
     "MedEval: ... and the lowest final score reaches this", NULL},
    {"passages-last", "passages_last", P(passages_last), MT_PARAM_U32, 0, 1, 0,
     "0|1",
     "1: each search's passages are shown most relevant last, with their "
     "source and score (IryoNLP's published code); 0: most relevant first "
     "(the paper's figures)",
     NULL},
    {"allow-fallbacks", "allow_fallbacks", P(allow_fallbacks), MT_PARAM_U32, 0,
     1, 0, NULL,
     "accept a verdict that is only the strategy's fallback (no usable "
     "reply of the model's decided it): shown as \"fallback: no model "
     "answer\", never as no error, instead of a failed check",
     NULL},
    {"eval-quorum", NULL, P(eval_quorum), MT_PARAM_U32, 1, 64, 0, "N",
     "usable MedEval reviews a round needs to be accepted (at most "
     "--evaluators)",
     NULL},
    {"retrieve-k", "retrieve_k", P(retrieve_k), MT_PARAM_U32, 1, 10000, 200,
     "N", "MedReAct: first-stage hits of a search", NULL},
    {"rerank-k", "rerank_k", P(rerank_k), MT_PARAM_U32, 1, 10000, 50, "N",
     "MedReAct: hits given to the model (after reranking), at most "
     "retrieve_k",
     NULL},
    {NULL, "w_lex", P(w_lex), MT_PARAM_F32, 0, 1, 0, "X",
     "hybrid weight of BM25", NULL},
    {NULL, "w_sem", P(w_sem), MT_PARAM_F32, 0, 1, 0, "X",
     "hybrid weight of vectors", NULL},
    {"temperature", NULL, P(temperature), MT_PARAM_F32, 0, 2, 0, "X",
     "agents' temperature", NULL},
    {"seed", NULL, P(seed), MT_PARAM_U64, 0, 0x7fffffff, 0, "N",
     "sampling seed of the model calls", NULL},
    {"eval-temperature", NULL, P(eval_temperature), MT_PARAM_F32, 0, 2, 0, "X",
     "MedEval temperature", NULL},
    {"max-tokens", NULL, P(max_tokens), MT_PARAM_U32, 1, 1e6, 0, "N",
     "completion budget per call", NULL},
};

static void defaults(void *p)
{
    mt_agent_default_params(p);
}

const struct mt_param_table mt_agent_param_table = {
    "mt_agent_params", agent_params,
    sizeof agent_params / sizeof agent_params[0],
    sizeof(struct mt_agent_params), defaults};
