/* examples --explain's question (batch/explain.h). */
#include <stdio.h>
#include <string.h>

#include "batch/explain.h"
#include "core/buf.h"
#include "llmcall/llmcall.h"
#include "medtrust/core.h"
#include "text/sentence.h"

#define EXPLAIN_MAX_TOKENS 1200 /* IryoNLP's reasoning budget is a reply */

/* The note's sentences as "id | sentence" lines, as the single prompt
 * shows them; MT_EPARSE when the Sentences field does not parse. */
static enum mt_status put_sentences(const char *s, struct mt_buf *b,
                                    struct mt_error *err)
{
    struct mt_medec_sentence *ms = NULL;
    size_t n = 0;
    size_t i;
    enum mt_status st = mtx_medec_sentences_parse(s, strlen(s), &ms, &n, err);

    for (i = 0; st == MT_OK && i < n; i++)
        st = mtx_buf_printf(b, "%zu | %.*s\n", i,
                            (int)(ms[i].span.end - ms[i].span.start),
                            s + ms[i].span.start);
    mt_free(ms);
    return st == MT_OK ? mtx_buf_reserve(b, 1) : st;
}

/* The gold answer in words: the wrong sentence and its correction, or
 * that the note holds no error (reasoning.py's input). */
static enum mt_status put_answer(const struct mtx_explain_note *n,
                                 struct mt_buf *b)
{
    if (strcmp(n->flag, "1") != 0)
        return mtx_buf_printf(b, "the note holds no medical error.%c", '\0');
    return mtx_buf_printf(b,
                          "sentence %s holds a medical error: \"%s\". "
                          "Corrected: \"%s\".%c",
                          n->sid, n->error, n->corrected, '\0');
}

/* One attempt of the loop: a reply with text is the reasoning; an empty
 * one is none (a JSON repair would not fit prose): repeated as it is. */
struct reasoning {
    struct mt_llm *llm;
    struct mt_chat_params cp;
    char *text;
    struct mt_error err;
};

static enum mtx_outcome attempt(void *user, const struct mt_llm_message *m,
                                size_t nm, int k, char *why, size_t wn)
{
    struct reasoning *r = user;
    struct mt_chat_result res;
    struct mt_str t;
    enum mt_status st;

    (void)k;
    mt_error_clear(&r->err);
    st = mt_llm_chat(r->llm, m, nm, &r->cp, &res, &r->err);
    if (st != MT_OK) {
        mtx_llmcall_failed_why(st, &r->err, why, wn);
        return st == MT_ELIMIT ? MTX_OUTCOME_TOO_LONG : MTX_OUTCOME_FAILED;
    }
    t = mtx_str_trim(mtx_str_from(res.n ? res.texts[0] : ""));
    r->text = t.n ? mt_strndup(t.p, t.n) : NULL;
    mt_chat_result_free(&res);
    if (r->text)
        return MTX_OUTCOME_OK;
    mt_fail(&r->err, t.n ? MT_ENOMEM : MT_EPARSE,
            t.n ? "out of memory" : "the model's reply is empty");
    snprintf(why, wn, "%s", r->err.msg);
    return MTX_OUTCOME_FAILED;
}

/* The rendered explain prompt through the loop, temperature 0. */
static enum mt_status ask(struct mt_llm *llm, struct mt_buf *sys,
                          struct mt_buf *user, char **out, struct mt_error *err)
{
    struct mt_llm_message m[2] = {{"system", sys->data}, {"user", user->data}};
    struct reasoning r;
    struct mtx_llmcall lc = {
        m, 2, attempt, NULL, &r, NULL, llm, EXPLAIN_MAX_TOKENS, NULL};
    enum mtx_outcome last = MTX_OUTCOME_FAILED;
    char why[512] = "";
    enum mt_status st;

    memset(&r, 0, sizeof r);
    r.llm = llm;
    mt_chat_default_params(&r.cp);
    r.cp.temperature = 0.0f;
    r.cp.max_tokens = EXPLAIN_MAX_TOKENS;
    st = mtx_llmcall_run(&lc, &last, why, sizeof why);
    if (st == MT_OK && last == MTX_OUTCOME_OK) {
        *out = r.text;
        return MT_OK;
    }
    mt_free(r.text);
    if (st == MT_OK && r.err.status != MT_OK) {
        *err = r.err;
        return r.err.status;
    }
    return mt_fail(err, st == MT_OK ? MT_EIO : st, "%s",
                   why[0] ? why : mt_status_str(st));
}

enum mt_status mtx_explain_note(const struct mt_prompts *p, struct mt_llm *llm,
                                const struct mtx_explain_note *n, char **out,
                                struct mt_error *err)
{
    static const char *const keys[] = {"ID", "SENTENCES", "ANSWER"};
    struct mt_buf s = MT_BUF_INIT((size_t)16 << 20);
    struct mt_buf a = MT_BUF_INIT((size_t)16 << 20);
    struct mt_buf sys = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_buf user = MT_BUF_INIT(MTX_PROMPT_MAX);
    enum mt_status st = put_sentences(n->sentences, &s, err);

    *out = NULL;
    if (st == MT_OK && (st = put_answer(n, &a)) != MT_OK)
        mt_fail(err, st, "out of memory");
    if (st == MT_OK) {
        const char *vals[] = {n->id, s.data, a.data};

        st = mtx_llmcall_render(p, "explain", keys, vals, 3, &sys, &user);
        if (st != MT_OK)
            mt_fail(err, st, "cannot render the explain prompt");
    }
    if (st == MT_OK)
        st = ask(llm, &sys, &user, out, err);
    mtx_buf_free(&s);
    mtx_buf_free(&a);
    mtx_buf_free(&sys);
    mtx_buf_free(&user);
    return st;
}
