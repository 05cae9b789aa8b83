/* examples --explain's question (batch/explain.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/explain.h"
#include "core/buf.h"
#include "llmcall/llmcall.h"
#include "medtrust/core.h"
#include "text/sentence.h"

/* What IryoNLP published of reasoning.py's call (jpcorb20/
 * iryonlp-mediqa-corr-2024): the skill skills/correction/correct_reasoning
 * is a completion whose config.json sets temperature 1.0 and max_tokens 512
 * (stop "<|im_end|>": a ChatML prompt, so a chat here), and whose one
 * input, clinical_note, is str(ClinicalNote) of correction/definitions.py:
 * "CLINICAL NOTE:\n" + the Sentences field + "\nOUTPUT:" + the gold
 * answer as json.dumps({is_error, sentence_id, error_sentence,
 * corrected_sentence}, indent=4, ensure_ascii=False), "NA" for an absent
 * sentence. The user message is that input exactly. The skill's prompt
 * text (skprompt.txt) is not published (the repository ignores *.txt):
 * the instruction, the system part of explain.txt, is ours. */
#define EXPLAIN_TEMPERATURE 1.0f /* correct_reasoning/config.json */
#define EXPLAIN_MAX_TOKENS 512   /* correct_reasoning/config.json */

void mtx_explain_default_params(struct mtx_explain_params *p)
{
    p->temperature = EXPLAIN_TEMPERATURE;
    p->max_tokens = EXPLAIN_MAX_TOKENS;
}

/* s as a JSON string as Python's json.dumps(ensure_ascii=False) writes
 * it: '"', '\\' and the control characters escaped, the rest as it is. */
static enum mt_status put_json_str(struct mt_buf *b, const char *s)
{
    enum mt_status st = mtx_buf_printf(b, "\"");
    const unsigned char *c;

    for (c = (const unsigned char *)s; st == MT_OK && *c; c++) {
        const char *e = *c == '"'    ? "\\\""
                        : *c == '\\' ? "\\\\"
                        : *c == '\n' ? "\\n"
                        : *c == '\r' ? "\\r"
                        : *c == '\t' ? "\\t"
                        : *c == '\b' ? "\\b"
                        : *c == '\f' ? "\\f"
                                     : NULL;

        if (e)
            st = mtx_buf_printf(b, "%s", e);
        else if (*c < 0x20)
            st = mtx_buf_printf(b, "\\u%04x", *c);
        else
            st = mtx_buf_printf(b, "%c", *c);
    }
    return st == MT_OK ? mtx_buf_printf(b, "\"") : st;
}

/* The Error Sentence ID as the integer pandas reads, -1 when it is not
 * one (MEDEC writes -1 for a note without error). */
static long sentence_id(const char *sid)
{
    char *end;
    long v = strtol(sid, &end, 10);

    return end != sid && *end == '\0' ? v : -1;
}

/* The skill's input, str(ClinicalNote): the note, then the gold answer
 * as reasoning.py's Mistake prints it (reasoning left out; error and
 * correction only for a note with an error, else "NA"). The Sentences
 * field must parse (MT_EPARSE naming it), as single's examples need. */
static enum mt_status put_input(const struct mtx_explain_note *n,
                                struct mt_buf *b, struct mt_error *err)
{
    struct mt_medec_sentence *ms = NULL;
    size_t nms = 0;
    int is_error = strcmp(n->flag, "1") == 0;
    enum mt_status st = mtx_medec_sentences_parse(
        n->sentences, strlen(n->sentences), &ms, &nms, err);

    mt_free(ms);
    if (st != MT_OK)
        return st;
    st = mtx_buf_printf(b,
                        "CLINICAL NOTE:\n%s\nOUTPUT:{\n    \"is_error\": %d,\n"
                        "    \"sentence_id\": %ld,\n    \"error_sentence\": ",
                        n->sentences, is_error, sentence_id(n->sid));
    if (st == MT_OK)
        st = put_json_str(b, is_error && n->error[0] ? n->error : "NA");
    if (st == MT_OK)
        st = mtx_buf_printf(b, ",\n    \"corrected_sentence\": ");
    if (st == MT_OK)
        st = put_json_str(b, is_error && n->corrected[0] ? n->corrected : "NA");
    if (st == MT_OK)
        st = mtx_buf_printf(b, "\n}%c", '\0');
    return st == MT_OK ? st : mt_fail(err, st, "out of memory");
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

/* The rendered explain prompt through the loop at ep's settings. */
static enum mt_status ask(struct mt_llm *llm,
                          const struct mtx_explain_params *ep,
                          struct mt_buf *sys, struct mt_buf *user, char **out,
                          struct mt_error *err)
{
    struct mt_llm_message m[2] = {{"system", sys->data}, {"user", user->data}};
    struct reasoning r;
    struct mtx_llmcall lc = {m,    2,   attempt,        NULL, &r,
                             NULL, llm, ep->max_tokens, NULL};
    enum mtx_outcome last = MTX_OUTCOME_FAILED;
    char why[512] = "";
    enum mt_status st;

    memset(&r, 0, sizeof r);
    r.llm = llm;
    mt_chat_default_params(&r.cp);
    r.cp.temperature = ep->temperature;
    r.cp.max_tokens = ep->max_tokens;
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
                                const struct mtx_explain_params *ep,
                                const struct mtx_explain_note *n, char **out,
                                struct mt_error *err)
{
    static const char *const keys[] = {"CLINICAL_NOTE"};
    struct mtx_explain_params dp;
    struct mt_buf in = MT_BUF_INIT((size_t)32 << 20);
    struct mt_buf sys = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_buf user = MT_BUF_INIT(MTX_PROMPT_MAX);
    enum mt_status st = put_input(n, &in, err);

    *out = NULL;
    if (!ep) {
        mtx_explain_default_params(&dp);
        ep = &dp;
    }
    if (st == MT_OK) {
        const char *vals[] = {in.data};

        st = mtx_llmcall_render(p, "explain", keys, vals, 1, &sys, &user);
        if (st != MT_OK)
            mt_fail(err, st, "cannot render the explain prompt");
    }
    if (st == MT_OK)
        st = ask(llm, ep, &sys, &user, out, err);
    mtx_buf_free(&in);
    mtx_buf_free(&sys);
    mtx_buf_free(&user);
    return st;
}
