/* Verified question answering (VerifAI): the answerer handle, the model
 * calls, and one question from retrieval to verified claims. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qa/qa_int.h"
#include "llmcall/llmcall.h"
#include "llmcall/reply.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/nli.h"
#include "medtrust/retrieve.h"
#include "text/utf8.h"

void mt_qa_default_params(struct mt_qa_params *p)
{
    memset(p, 0, sizeof *p);
    mt_llm_default_params(&p->llm);
    p->w_lex = 0.7f;
    p->w_sem = 0.3f;
    p->k = 10;
    p->rerank_depth = 50;
    p->label_format = "PUBMED:{id}";
    p->max_tokens = 1024;
    p->temperature = 0;
    p->seed = 42;
    p->doc_chars = 4000;
    p->max_question_bytes = 8192;
    p->search_mode = -1;
}

/* ==== Handle ==== */

static enum mt_status copy_params(struct mt_qa *q, const struct mt_qa_params *p)
{
    const char **f[12];
    size_t i;

    q->p = *p;
    f[0] = &q->p.db_dir;
    f[1] = &q->p.llm_spec;
    f[2] = &q->p.nli_spec;
    f[3] = &q->p.embedder_spec;
    f[4] = &q->p.reranker_spec;
    f[5] = &q->p.prompts_dir;
    f[6] = &q->p.source;
    f[7] = &q->p.label_format;
    f[8] = &q->p.llm.cache_path;
    f[9] = &q->p.author;
    f[10] = &q->p.journal;
    f[11] = &q->p.pub_type;
    for (i = 0; i < 12; i++) {
        if (!*f[i])
            continue;
        q->strs[i] = mt_strdup(*f[i]);
        if (!q->strs[i])
            return MT_ENOMEM;
        *f[i] = q->strs[i];
    }
    return MT_OK;
}

/* Splits label_format at "{id}" into label_pre and label_suf. */
static enum mt_status split_label(struct mt_qa *q, struct mt_error *err)
{
    const char *f = q->p.label_format;
    const char *at = strstr(f, "{id}");

    if (!at || strchr(f, '[') || strchr(f, ']') || strchr(f, ','))
        return mt_fail(err, MT_EINVAL,
                       "--label '%s' must hold {id} and no "
                       "brackets or commas",
                       f);
    q->label_pre = mt_strndup(f, (size_t)(at - f));
    q->label_suf = mt_strdup(at + 4);
    if (!q->label_pre || !q->label_suf)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    return MT_OK;
}

static enum mt_status open_verifier(struct mt_qa *q, struct mt_error *err)
{
    const char *nli = q->p.nli_spec ? q->p.nli_spec : getenv("MEDTRUST_NLI");
    const char *a = mt_llm_role_spec("qa", q->p.llm_spec);
    const char *j = mt_llm_role_spec("judge", q->p.llm_spec);
    enum mt_status st;

    if (nli && *nli && strcmp(nli, "llm") != 0)
        return mt_nli_open(nli, NULL, &q->nli, err);
    if (q->answer_llm && a && j && strcmp(a, j) == 0) {
        q->judge_llm = q->answer_llm;
        return MT_OK;
    }
    st =
        mt_llm_open_role("judge", q->p.llm_spec, &q->p.llm, &q->judge_llm, err);
    q->judge_owned = st == MT_OK;
    return st == MT_OK ? MT_OK : mt_error_prefix(err, "--nli llm (the judge)");
}

/* The caller's retriever, else one over db_dir (a bad --db fails at
 * start-up) with the given embedder or the index's own, and the reranker;
 * without db_dir it only embeds claims. */
static enum mt_status open_retriever(struct mt_qa *q, struct mt_error *err)
{
    struct mt_retriever_params rp;
    enum mt_status st = MT_OK;

    if (q->p.retriever) {
        q->ret = q->p.retriever;
        if (q->p.db_dir)
            st = mt_retriever_check(q->ret, err);
    } else {
        mt_retriever_default_params(&rp);
        rp.db_dir = q->p.db_dir;
        rp.embedder_spec = q->p.embedder_spec;
        rp.reranker_spec = q->p.reranker_spec;
        st = mt_retriever_open(&rp, &q->ret, err);
        q->ret_owned = st == MT_OK;
    }
    if (st == MT_OK)
        q->index_vectors = q->p.db_dir && mt_retriever_has_vectors(q->ret);
    return st;
}

static enum mt_status open_parts(struct mt_qa *q, struct mt_error *err)
{
    enum mt_status st = split_label(q, err);

    if (st == MT_OK)
        st = mtx_prompts_load(q->p.prompts_dir, &q->prompts, err);
    if (st == MT_OK && q->p.db_dir &&
        (!q->p.answer_optional || mt_llm_role_spec("qa", q->p.llm_spec))) {
        st = mt_llm_open_role("qa", q->p.llm_spec, &q->p.llm, &q->answer_llm,
                              err);
        if (st != MT_OK)
            mt_error_prefix(err, "--llm (the answer model)");
    }
    if (st == MT_OK)
        st = open_verifier(q, err);
    if (st == MT_OK)
        st = open_retriever(q, err);
    return st;
}

enum mt_status mt_qa_open(const struct mt_qa_params *params, struct mt_qa **out,
                          struct mt_error *err)
{
    struct mt_qa *q;
    enum mt_status st;

    if (!params)
        return mt_fail(err, MT_EINVAL, "ask: no settings given");
    /* the CLI's bounds for every caller (a library's, Python's) */
    st = mt_param_check(&mt_qa_param_table, params, 0, err);
    if (st != MT_OK)
        return st;
    if (!params->label_format)
        return mt_fail(err, MT_EINVAL, "ask: no label format given");
    mtx_jsonl_init_alloc(); /* JSON values through mt_malloc */
    q = mt_calloc(1, sizeof *q);
    if (!q)
        return mt_fail(err, MT_ENOMEM, "ask: out of memory");
    st = copy_params(q, params);
    if (st != MT_OK)
        mt_fail(err, st, "ask: out of memory");
    else
        st = open_parts(q, err);
    if (st != MT_OK) {
        mt_qa_close(q);
        return st;
    }
    *out = q;
    return MT_OK;
}

void mt_qa_close(struct mt_qa *q)
{
    size_t i;

    if (!q)
        return;
    if (q->judge_owned)
        mt_llm_close(q->judge_llm);
    mt_llm_close(q->answer_llm);
    mt_nli_close(q->nli);
    if (q->ret_owned)
        mt_retriever_close(q->ret);
    mtx_prompts_free(q->prompts);
    mt_free(q->label_pre);
    mt_free(q->label_suf);
    for (i = 0; i < 12; i++)
        mt_free(q->strs[i]);
    mt_free(q);
}

/* ==== Helpers ==== */

enum mt_status mtx_qa_note(struct qa_run *r, const char *fmt, ...)
{
    va_list ap;
    enum mt_status st;

    va_start(ap, fmt);
    st = mtx_buf_vprintf(&r->notes, fmt, ap);
    va_end(ap);
    if (st == MT_OK)
        st = mtx_buf_putc(&r->notes, '\0');
    r->nnotes += st == MT_OK;
    return st;
}

char *mtx_qa_keep(struct qa_run *r, const char *s, size_t n)
{
    return mtx_arena_strndup(r->mem, s ? s : "", s ? n : 0);
}

enum mt_status mtx_qa_embed(struct mt_qa *q, const struct mt_str *t, size_t n,
                            float **out, uint32_t *dims, struct mt_error *err)
{
    uint32_t e = mt_retriever_dims(q->ret);
    uint32_t d = e ? e : QA_HASH_DIMS;
    float *v = mt_calloc(n * d + 1, sizeof *v);
    enum mt_status st = MT_OK;
    size_t i;

    if (!v)
        return mt_fail(err, MT_ENOMEM, "embedding: out of memory");
    if (e)
        st = mt_retriever_embed(q->ret, t, n, v, err);
    for (i = 0; !e && i < n; i++)
        mtx_qa_hash_embed(t[i].p, t[i].n, v + i * d);
    if (st != MT_OK) {
        mt_free(v);
        return st;
    }
    *out = v;
    *dims = d;
    return MT_OK;
}

/* ==== Model calls ==== */

/* One question's call in flight, for the loop's callbacks. */
struct inflight {
    struct qa_run *r;
    struct mt_llm *l;
    struct mt_chat_params cp;
    int json;
    char **reply;
    char *bad; /* the last unusable reply, for the repair turn */
};

static const char *bad_reply(void *user)
{
    return ((const struct inflight *)user)->bad;
}

/* 1 when s holds more than white space. */
static int has_text(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && (*s < '\t' || *s > '\r'))
            return 1;
    return 0;
}

/* One request; MTX_OUTCOME_OK with *reply set when the reply is usable. */
static enum mtx_outcome attempt(void *user, const struct mt_llm_message *m,
                                size_t nm, int k, char *why, size_t wn)
{
    struct inflight *f = user;
    struct mt_qa_usage *u = &f->r->res->usage;
    struct mt_chat_result res;
    struct mt_error e = {MT_OK, ""};
    enum mt_status st;
    json_t *o = NULL;

    f->cp.seed = f->r->q->p.seed + (uint64_t)k;
    if (k == 1 && f->cp.on_token) /* the first reply is dropped */
        f->cp.on_token(f->cp.on_token_ctx, 0, NULL, 0);
    st = mt_llm_chat(f->l, m, nm, &f->cp, &res, &e);
    u->llm_calls++;
    if (st != MT_OK) {
        u->failed_calls++;
        mtx_llmcall_failed_why(st, &e, why, wn);
        return st == MT_ELIMIT ? MTX_OUTCOME_TOO_LONG : MTX_OUTCOME_FAILED;
    }
    u->prompt_tokens += res.prompt_tokens;
    u->completion_tokens += res.completion_tokens;
    u->estimated_calls += res.tokens_estimated ? 1 : 0;
    if (f->json && !(o = mtx_reply_extract(res.texts[0], why, wn))) {
        mt_free(f->bad);
        f->bad = mt_strdup(res.texts[0]);
        mt_chat_result_free(&res);
        return MTX_OUTCOME_BAD_REPLY;
    }
    json_decref(o);
    if (!f->json && !has_text(res.texts[0])) {
        /* an empty answer is none: repeated as it is (a JSON repair
         * request would not fit prose), then no answer, MT_EMODEL */
        snprintf(why, wn, "the model returned an empty answer");
        mt_chat_result_free(&res);
        return MTX_OUTCOME_FAILED;
    }
    *f->reply = mt_strdup(res.texts[0]);
    mt_chat_result_free(&res);
    return *f->reply ? MTX_OUTCOME_OK : MTX_OUTCOME_BAD_REPLY;
}

static int cancelled(void *user)
{
    const struct mt_qa_params *p = &((struct inflight *)user)->r->p;

    return p->cancelled && p->cancelled(p->cancelled_user);
}

/* mt_chat_params.on_token of the answer call: its one completion's
 * pieces go to params.on_answer_token. */
static int answer_token(void *ctx, uint32_t i, const char *piece, size_t len)
{
    const struct mt_qa_params *p = ctx;

    return i == 0 ? p->on_answer_token(p->on_answer_token_user, piece, len) : 0;
}

enum mt_status mtx_qa_chat(struct qa_run *r, struct mt_llm *l, const char *name,
                           const char *const *keys, const char *const *vals,
                           size_t nvars, float temperature, uint32_t max_tokens,
                           int json, char **reply, char *why, size_t wn)
{
    struct mt_buf sys = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_buf user = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_llm_message m[2];
    struct inflight f;
    struct mtx_llmcall lc = {m,         2, attempt,    cancelled, &f,
                             bad_reply, l, max_tokens, NULL};
    enum mtx_outcome last = MTX_OUTCOME_FAILED;
    enum mt_status st =
        mtx_llmcall_render(r->q->prompts, name, keys, vals, nvars, &sys, &user);

    f.r = r;
    f.l = l;
    f.json = json;
    f.reply = reply;
    f.bad = NULL;
    mt_chat_default_params(&f.cp);
    f.cp.temperature = temperature;
    f.cp.max_tokens = max_tokens;
    /* the judge answers under its reply schema (a gguf grammar, or an
     * OpenAI response_format), as the checker's roles do (docs/agents.md) */
    if (json)
        f.cp.json_schema = mtx_reply_schema(name);
    if (r->p.on_answer_token && strcmp(name, "qa_answer") == 0) {
        f.cp.on_token = answer_token;
        f.cp.on_token_ctx = &r->p;
    }
    m[0] = (struct mt_llm_message){"system", sys.data};
    m[1] = (struct mt_llm_message){"user", user.data};
    if (st == MT_OK)
        st = mtx_llmcall_run(&lc, &last, why, wn);
    mt_free(f.bad);
    mtx_buf_free(&sys);
    mtx_buf_free(&user);
    if (st != MT_OK)
        return st;
    return last == MTX_OUTCOME_OK ? MT_OK : MT_EIO;
}
