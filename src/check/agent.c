/* The checker handle: parameters, per-role models, prompts, few-shot
 * examples; strategy dispatch for one note. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "check/agent_int.h"
#include "check/strategy.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "medtrust/retrieve.h"
#include "medtrust/store.h"

/* Role names for MEDTRUST_LLM_<ROLE>. */
static const char *const route_names[ROLE_COUNT] = {
    "react", "eval", "reflect", "parser", "guard", "single",
};

void mt_agent_default_params(struct mt_agent_params *p)
{
    memset(p, 0, sizeof *p);
    p->strategy = MT_STRATEGY_REACT_REFLEX;
    mt_llm_default_params(&p->llm);
    p->max_steps = 4;
    p->max_rounds = 5;
    p->n_evals = 5;
    p->accept_mean = 3.8;
    p->accept_min = 3;
    p->eval_quorum = 3;
    for (int i = 0; i < MT_AGENT_ROLE_COUNT; i++) {
        p->role_temperature[i] = -1;
        p->role_max_tokens[i] = 0;
    }
    p->on_exhausted = MT_EXHAUSTED_NO_ERROR;
    p->retrieve_k = 50;
    p->rerank_k = 20;
    p->w_lex = 0.7f;
    p->w_sem = 0.3f;
    p->chunk_chars = 1200;
    p->temperature = 0;
    p->eval_temperature = 1.0f;
    p->max_tokens = 1024;
    p->grammar = 1;
    p->seed = 42;
    p->max_note_bytes = (size_t)256 << 10;
    p->max_few_shot = 3;
    p->evidence_tokens = 12000;
    p->hit_chars = 360;
    p->search_mode = MT_AGENT_SEARCH_AUTO;
}

/* Copies the strings of p into a->strs and points a->p at them. */
static enum mt_status copy_params(struct mt_agent *a,
                                  const struct mt_agent_params *p)
{
    const char **fields[AGENT_NSTRS];
    size_t i;

    a->p = *p;
    fields[0] = &a->p.llm_spec;
    fields[1] = &a->p.prompts_dir;
    fields[2] = &a->p.few_shot_path;
    fields[3] = &a->p.db_dir;
    fields[4] = &a->p.reranker_spec;
    fields[5] = &a->p.llm.cache_path;
    fields[6] = &a->p.examples_path;
    fields[7] = &a->p.embedder_spec;
    for (i = 0; i < AGENT_NSTRS; i++) {
        if (!*fields[i])
            continue;
        a->strs[i] = mt_strdup(*fields[i]);
        if (!a->strs[i])
            return MT_ENOMEM;
        *fields[i] = a->strs[i];
    }
    for (i = 0; i < p->n_sources; i++)
        if (!(a->sources[i] = mt_strdup(p->sources[i])))
            return MT_ENOMEM;
    a->p.sources = (const char *const *)a->sources;
    return MT_OK;
}

static int role_used(enum mt_strategy s, int role)
{
    return mtx_strategy_calls(s, route_names[role]);
}

/* Opens each model role 's' calls once per distinct spec, sharing the
 * handle of a role opened before (by this strategy or another). */
static enum mt_status open_models(struct mt_agent *a, enum mt_strategy s,
                                  struct mt_error *err)
{
    const char *spec[ROLE_COUNT];
    int i;
    int j;

    for (i = 0; i < ROLE_COUNT; i++)
        spec[i] = mt_llm_role_spec(route_names[i], a->p.llm_spec);
    for (i = 0; i < ROLE_COUNT; i++) {
        enum mt_status st;

        if (!role_used(s, i) || a->llm[i])
            continue;
        for (j = 0; j < ROLE_COUNT && !a->llm[i]; j++)
            if (j != i && a->llm[j] && spec[j] && spec[i] &&
                strcmp(spec[i], spec[j]) == 0)
                a->llm[i] = a->llm[j];
        if (a->llm[i])
            continue;
        st = mt_llm_open(spec[i], &a->p.llm, &a->llm[i], err);
        if (st != MT_OK)
            return mt_error_prefix(err, "role %s", route_names[i]);
        a->llm_owner[i] = 1;
    }
    return MT_OK;
}

/* The search of react-reflex and the embedder of `single`'s kNN
 * examples: the caller's retriever, else one over db_dir opened now, so a
 * bad --db, --embedder or --dims fails at start-up. An explicit bm25
 * search opens no query embedder. */
static enum mt_status open_retriever(struct mt_agent *a, struct mt_error *err)
{
    struct mt_retriever_params rp;
    int embeds = a->p.search_mode != MT_SEARCH_BM25 || a->p.examples_path;

    if (a->ret)
        return MT_OK;
    if (a->p.retriever) {
        a->ret = a->p.retriever;
        return MT_OK;
    }
    if (!a->p.db_dir && !a->p.reranker_spec && !a->p.examples_path)
        return MT_OK;
    mt_retriever_default_params(&rp);
    rp.db_dir = a->p.db_dir;
    rp.embedder_spec = embeds ? a->p.embedder_spec : "none";
    rp.dims = a->p.dims;
    rp.reranker_spec = a->p.reranker_spec;
    a->ret_owned = 1;
    return mt_retriever_open(&rp, &a->ret, err);
}

/* An explicit dense or hybrid search needs vectors the query embedder
 * matches; --dims only truncates those queries. (auto is decided per
 * search, so a server's index that gains vectors switches to hybrid.) */
enum mt_status mtx_agent_search_mode_check(struct mt_agent *a, int m,
                                           struct mt_error *err)
{
    if (m == MT_SEARCH_BM25 && a->p.dims)
        return mt_fail(err, MT_EINVAL,
                       "--dims truncates the query vectors of dense and "
                       "hybrid search, not bm25");
    if (m == MT_AGENT_SEARCH_AUTO || m == MT_SEARCH_BM25 || !a->p.db_dir)
        return MT_OK;
    if (mt_retriever_has_vectors(a->ret))
        return MT_OK;
    return mt_fail(err, MT_EINVAL,
                   "--search-mode %s needs vectors in the index of %s that "
                   "the query embedder (%u dimensions) matches, and it has "
                   "none: build them with 'medtrust index --db %s "
                   "--embedder SPEC', or use --search-mode bm25",
                   mt_search_mode_str((enum mt_search_mode)m), a->p.db_dir,
                   mt_retriever_dims(a->ret), a->p.db_dir);
}

/* Every --source must name a corpus of the store: a misspelt name would
 * otherwise make each search find nothing. */
static enum mt_status check_sources(struct mt_agent *a, struct mt_error *err)
{
    struct mt_store_params sp;
    struct mt_store *s = NULL;
    int64_t sid;
    size_t i;
    enum mt_status st;

    if (a->p.n_sources == 0)
        return MT_OK;
    mt_store_default_params(&sp);
    sp.create = 0;
    sp.read_only = 1;
    st = mt_store_open(a->p.db_dir, &sp, &s, err);
    for (i = 0; st == MT_OK && i < a->p.n_sources; i++) {
        st = mt_store_source_find(s, a->p.sources[i], &sid, err);
        if (st == MT_ENOTFOUND)
            mt_fail(err, MT_EINVAL,
                    "--source %s: no source of that name in %s ('medtrust "
                    "stats --db %s' lists them)",
                    a->p.sources[i], a->p.db_dir, a->p.db_dir);
        if (st == MT_ENOTFOUND)
            st = MT_EINVAL;
    }
    mt_store_close(s);
    return st;
}

/* Without a corpus MedReAct's search finds nothing, which is not
 * MedReAct'N'MedReFlex as the paper runs it (semantic search over
 * ClinicalCorp, section 3): no silent degradation. Only an explicit
 * no_retrieval runs it so, and the trace says so. */
static int react_without_corpus(const struct mt_agent_params *p,
                                enum mt_strategy s)
{
    return mt_strategy_get(s) && mt_strategy_get(s)->needs_retriever &&
           !p->db_dir && !p->retriever && !p->no_retrieval;
}

static enum mt_status no_corpus(enum mt_strategy s, struct mt_error *err)
{
    return mt_fail(err, MT_EINVAL,
                   "%s searches a medical corpus: give --db "
                   "DIR (a store built with 'medtrust index'), or "
                   "--no-retrieval to run MedReAct without one",
                   mt_strategy_str(s));
}

/* Opens strategy s's parts (a->mu held): its models, the corpus search
 * of a strategy that searches, the few-shot examples of one that shows
 * them (whose kNN selection embeds through the retriever). */
static enum mt_status prepare_locked(struct mt_agent *a, enum mt_strategy s,
                                     struct mt_error *err)
{
    const struct mt_strategy_info *in = mt_strategy_get(s);
    enum mt_status st;

    if (a->ready & (1u << s))
        return MT_OK;
    if (react_without_corpus(&a->p, s))
        return no_corpus(s, err);
    st = open_models(a, s, err);
    if (st == MT_OK &&
        (in->needs_retriever || (in->needs_examples && a->p.examples_path)))
        st = open_retriever(a, err);
    if (st == MT_OK && in->needs_retriever)
        st = mtx_agent_search_mode_check(a, a->p.search_mode, err);
    if (st == MT_OK && in->needs_examples && !a->examples && !a->knn)
        st = mtx_agent_examples_load(a, err);
    if (st == MT_OK && a->p.db_dir && in->needs_retriever)
        st = check_sources(a, err);
    if (st == MT_OK)
        a->ready |= 1u << s;
    return st;
}

enum mt_status mt_agent_prepare(struct mt_agent *a, enum mt_strategy s,
                                struct mt_error *err)
{
    enum mt_status st;

    if (!mt_strategy_get(s))
        return mt_fail(err, MT_EINVAL, "checker: no strategy %d", (int)s);
    pthread_mutex_lock(&a->mu);
    st = prepare_locked(a, s, err);
    pthread_mutex_unlock(&a->mu);
    return st;
}

static enum mt_status open_parts(struct mt_agent *a, struct mt_error *err)
{
    enum mt_status st = mtx_prompts_load(a->p.prompts_dir, &a->prompts, err);

    if (st == MT_OK)
        st = prepare_locked(a, a->p.strategy, err);
    return st;
}

enum mt_status mt_agent_open(const struct mt_agent_params *params,
                             struct mt_agent **out, struct mt_error *err)
{
    struct mt_agent *a;
    enum mt_status st;

    if (!params)
        return mt_fail(err, MT_EINVAL, "checker: no settings given");
    /* the CLI's bounds for every caller (a library's, Python's) */
    st = mt_param_check(&mt_agent_param_table, params, 0, err);
    if (st != MT_OK)
        return st;
    if (params->retrieve_k < params->rerank_k ||
        params->n_sources > MT_AGENT_MAX_SOURCES ||
        !mt_strategy_get(params->strategy))
        return mt_fail(err, MT_EINVAL,
                       "checker: retrieve-k must be >= rerank-k, at most %d "
                       "sources given and the strategy one of the table's",
                       MT_AGENT_MAX_SOURCES);
    if (react_without_corpus(params, params->strategy))
        return no_corpus(params->strategy, err);
    mtx_jsonl_init_alloc(); /* JSON values through mt_malloc */
    a = mt_calloc(1, sizeof *a);
    if (!a)
        return mt_fail(err, MT_ENOMEM, "checker: out of memory");
    pthread_mutex_init(&a->mu, NULL);
    st = copy_params(a, params);
    if (st != MT_OK)
        mt_fail(err, st, "checker: out of memory");
    else
        st = open_parts(a, err);
    if (st != MT_OK) {
        mt_agent_close(a);
        return st;
    }
    *out = a;
    return MT_OK;
}

void mt_agent_close(struct mt_agent *a)
{
    size_t i;

    if (!a)
        return;
    for (i = 0; i < ROLE_COUNT; i++)
        if (a->llm_owner[i])
            mt_llm_close(a->llm[i]);
    if (a->ret_owned)
        mt_retriever_close(a->ret);
    mtx_prompts_free(a->prompts);
    mt_free(a->examples);
    mtx_agent_examples_free(a->knn);
    for (i = 0; i < AGENT_NSTRS; i++)
        mt_free(a->strs[i]);
    for (i = 0; i < MT_AGENT_MAX_SOURCES; i++)
        mt_free(a->sources[i]);
    pthread_mutex_destroy(&a->mu);
    mt_free(a);
}
