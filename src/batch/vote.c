/* corpus vote's question (batch/vote.h): the votes of one item through
 * llmcall's loop in its plain-text mode. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "batch/vote.h"
#include "core/buf.h"
#include "core/file.h"
#include "llmcall/llmcall.h"
#include "llmcall/prompt.h"
#include "medtrust/core.h"

char *mtx_vote_prompt_file(const char *path, struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 20);

    if (mtx_file_read_all(path, &b, err) != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    if (!strstr(b.data ? b.data : "", "{{text}}")) {
        mtx_buf_free(&b);
        mt_fail(err, MT_EINVAL, "%s: the prompt has no {{text}} placeholder",
                path);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* "yes", "no" or "other", from the reply's first word. */
static const char *vote_of(const char *reply)
{
    char w[8];
    size_t n = 0;

    while (*reply && !isalpha((unsigned char)*reply))
        reply++;
    while (n < sizeof w - 1 && isalpha((unsigned char)reply[n])) {
        w[n] = (char)tolower((unsigned char)reply[n]);
        n++;
    }
    w[n] = '\0';
    if (strcmp(w, "yes") == 0)
        return "yes";
    if (strcmp(w, "no") == 0)
        return "no";
    return "other";
}

/* The vote's question with {{text}} the item (llmcall's renderer). */
static char *fill_prompt(const char *tmpl, const char *text)
{
    static const char *const keys[] = {"text"};
    const char *vals[] = {text};
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);

    if (mtx_prompt_render(mtx_str_from(tmpl), keys, vals, 1, &b) != MT_OK ||
        mtx_buf_reserve(&b, 1) != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* The user part of the built-in prompt corpus_vote.txt (llmcall's
 * prompts; its system part is not sent). */
char *mtx_vote_builtin_prompt(struct mt_error *err)
{
    struct mt_prompts *p = NULL;
    struct mt_str sys, user;
    char *out = NULL;

    if (mtx_prompts_load(NULL, &p, err) != MT_OK)
        return NULL;
    if (mtx_prompts_get(p, "corpus_vote", &sys, &user) == 0)
        out = mt_strndup(user.p, user.n);
    else
        mt_fail(err, MT_EINTERNAL, "no built-in prompt corpus_vote");
    mtx_prompts_free(p);
    return out;
}

/* One vote's call through llmcall's loop (llmcall/llmcall.h), in its
 * plain-text mode: a reply whose first word is neither yes nor no is
 * asked once more ("Answer with one word: yes or no."), a failed request
 * repeated; the last reply's first word is the vote. */
struct ballot {
    struct mt_llm *llm;
    struct mt_chat_params cp;
    char *reply; /* the last reply's text */
    struct mt_error err;
};

static enum mtx_outcome ballot_attempt(void *user,
                                       const struct mt_llm_message *m,
                                       size_t nm, int k, char *why, size_t wn)
{
    struct ballot *b = user;
    struct mt_chat_result res;
    enum mt_status st;

    (void)k;
    mt_error_clear(&b->err);
    st = mt_llm_chat(b->llm, m, nm, &b->cp, &res, &b->err);
    if (st != MT_OK) {
        mtx_llmcall_failed_why(st, &b->err, why, wn);
        return st == MT_ELIMIT ? MTX_OUTCOME_TOO_LONG : MTX_OUTCOME_FAILED;
    }
    mt_free(b->reply);
    b->reply = mt_strdup(res.n ? res.texts[0] : "");
    mt_chat_result_free(&res);
    if (!b->reply) {
        mt_fail(&b->err, MT_ENOMEM, "out of memory");
        return MTX_OUTCOME_FAILED;
    }
    if (strcmp(vote_of(b->reply), "other") != 0)
        return MTX_OUTCOME_OK;
    snprintf(why, wn, "its first word is neither yes nor no");
    return MTX_OUTCOME_BAD_REPLY;
}

static const char *ballot_bad(void *user)
{
    return ((struct ballot *)user)->reply;
}

/* Vote v on the prompt: "yes", "no" or "other" into *vote. Each vote is
 * its own call with its own seed, so the call cache keeps five answers,
 * not one (temperature 1.0, as IryoNLP). */
static enum mt_status ask_vote(struct mt_llm *llm, const char *prompt,
                               unsigned v, const char **vote,
                               struct mt_error *err)
{
    struct mt_llm_message m = {"user", prompt};
    struct ballot b;
    struct mtx_llmcall lc = {&m,   1,  ballot_attempt,
                             NULL, &b, ballot_bad,
                             llm,  8,  "Answer with one word: yes or no."};
    enum mtx_outcome last = MTX_OUTCOME_FAILED;
    char why[512] = "";
    enum mt_status st;

    memset(&b, 0, sizeof b);
    b.llm = llm;
    mt_chat_default_params(&b.cp);
    b.cp.temperature = 1.0f;
    b.cp.max_tokens = 8;
    b.cp.seed = 1000 + v;
    st = mtx_llmcall_run(&lc, &last, why, sizeof why);
    if (st == MT_OK &&
        (last == MTX_OUTCOME_OK || last == MTX_OUTCOME_BAD_REPLY))
        *vote = vote_of(b.reply); /* still neither: "other" */
    else if (st == MT_OK && b.err.status != MT_OK)
        st = mt_fail(err, b.err.status, "%s", b.err.msg);
    else
        st = mt_fail(err, st == MT_OK ? MT_EIO : st, "%s",
                     why[0] ? why : mt_status_str(st));
    mt_free(b.reply);
    return st;
}

static enum mt_status ask_votes(struct mt_llm *llm, const char *prompt,
                                unsigned n, json_t *votes, unsigned *yes,
                                struct mt_error *err)
{
    enum mt_status st = MT_OK;
    unsigned v;

    for (v = 0; st == MT_OK && v < n; v++) {
        const char *vote = "other";

        st = ask_vote(llm, prompt, v, &vote, err);
        if (st != MT_OK)
            break;
        *yes += strcmp(vote, "yes") == 0;
        json_array_append_new(votes, json_string(vote));
    }
    return st;
}

char *mtx_vote_item(struct mt_llm *llm, const char *tmpl, const char *text,
                    unsigned votes, unsigned min_yes, int *keep,
                    struct mt_error *err)
{
    char *prompt = fill_prompt(tmpl, text);
    json_t *vs = json_array();
    unsigned yes = 0;
    enum mt_status st =
        prompt && vs ? ask_votes(llm, prompt, votes, vs, &yes, err) : MT_ENOMEM;
    char *res = NULL;
    json_t *o;

    mt_free(prompt);
    *keep = yes >= min_yes;
    if (st == MT_OK) {
        o = json_pack("{s:O,s:I,s:b}", "votes", vs, "yes", (json_int_t)yes,
                      "keep", *keep);
        res = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
    }
    if (!res && err->status == MT_OK)
        mt_fail(err, MT_ENOMEM, "out of memory");
    json_decref(vs);
    return res;
}
