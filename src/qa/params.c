/* The answerer's settings table (mt_qa_param_table): every numeric knob
 * of struct mt_qa_params with its CLI option (`ask`, `qa-eval`), its
 * POST /v1/ask member, bounds and help; the defaults are
 * mt_qa_default_params'. */
#include <stddef.h>

#include "medtrust/qa.h"
#include "medtrust/verify.h"

#define P(member) offsetof(struct mt_qa_params, member)

/* The server's lower caps: an answer runs on a shared job worker, so it
 * gives the model at most 100 documents, and the hybrid weights of a
 * request are fractions (0..1) where the CLI takes any scale. */
static const struct mt_param qa_params[] = {
    {"rerank", NULL, P(rerank_depth), MT_PARAM_U32, 1, 10000, 0, "N",
     "documents reranked", NULL},
    {"top-k", "k", P(k), MT_PARAM_U32, 1, 1000, 100, "N",
     "documents given to the model", NULL},
    {"w-lex", "w_lex", P(w_lex), MT_PARAM_F32, 0, 1000, 1, "X",
     "hybrid weight of BM25", NULL},
    {"w-sem", "w_sem", P(w_sem), MT_PARAM_F32, 0, 1000, 1, "X",
     "hybrid weight of vectors", NULL},
    {"fusion-depth", NULL, P(fusion_depth), MT_PARAM_U32, 1, 100000, 0, "N",
     "hybrid: fuse only the first N chunks of each list (VerifAI fuses "
     "10 abstracts)",
     "the whole first stage"},
    {"year-from", "year_from", P(year_from), MT_PARAM_I32, 1, 99999, 0, "Y",
     "first publication year", "any"},
    {"year-to", "year_to", P(year_to), MT_PARAM_I32, 1, 99999, 0, "Y",
     "last publication year", "any"},
    {"max-tokens", NULL, P(max_tokens), MT_PARAM_U32, 16, 65536, 0, "N",
     "answer length budget", NULL},
    {"temperature", NULL, P(temperature), MT_PARAM_F32, 0, 2, 0, "X",
     "answer temperature", NULL},
    {"doc-chars", NULL, P(doc_chars), MT_PARAM_U32, 64, 1000000, 0, "N",
     "bytes of each document shown", NULL},
    {"max-question", NULL, P(max_question_bytes), MT_PARAM_SIZE, 1, 1 << 24, 0,
     "N", "longest question in bytes", NULL},
};

static void defaults(void *p)
{
    mt_qa_default_params(p);
}

const struct mt_param_table mt_qa_param_table = {
    "mt_qa_params", qa_params, sizeof qa_params / sizeof qa_params[0],
    sizeof(struct mt_qa_params), defaults};

/* The verifier's settings table (mt_verify_param_table): struct
 * mt_verify_params' numeric knobs with their `verify` options and POST
 * /v1/verify members; the defaults are mt_verify_default_params'. The
 * search weights, years and filters of a verification are the
 * answerer's (mt_qa_param_table). The server searches at most 100
 * documents per claim (each one a verifier call on a shared worker). */
#undef P
#define P(member) offsetof(struct mt_verify_params, member)

static const struct mt_param verify_params[] = {
    {"top-k", "k", P(k), MT_PARAM_U32, 1, 1000, 100, "N",
     "documents searched per claim", NULL},
    {"support-min", "support_min", P(support_min), MT_PARAM_F32, 0, 1, 0, "X",
     "a SUPPORT judgement counts from this score", NULL},
    {"contradict-min", "contradict_min", P(contradict_min), MT_PARAM_F32, 0, 1,
     0, "X", "a CONTRADICT judgement counts from this score", NULL},
    {"min-words", NULL, P(min_words), MT_PARAM_U32, 1, 100, 0, "N",
     "shorter sentences are NOT_A_CLAIM", NULL},
    {"max-text", NULL, P(max_text_bytes), MT_PARAM_SIZE, 1, 16 << 20, 0, "N",
     "longest text in bytes", NULL},
};

static void verify_defaults(void *p)
{
    mt_verify_default_params(NULL, p);
}

const struct mt_param_table mt_verify_param_table = {
    "mt_verify_params", verify_params,
    sizeof verify_params / sizeof verify_params[0],
    sizeof(struct mt_verify_params), verify_defaults};
