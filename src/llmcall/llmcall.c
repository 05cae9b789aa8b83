/* The model-call loop shared by the checker and question answering:
 * rendering, the repeat with a fix prompt, the outcome codes. */
#include <stdio.h>
#include <string.h>

#include "llmcall/fit.h"
#include "llmcall/llmcall.h"
#include "medtrust/core.h"
#include "text/utf8.h"

enum mt_status mtx_llmcall_render(const struct mt_prompts *p, const char *name,
                                  const char *const *keys,
                                  const char *const *vals, size_t n,
                                  struct mt_buf *sys, struct mt_buf *user)
{
    struct mt_str ts;
    struct mt_str tu;
    enum mt_status st;

    if (mtx_prompts_get(p, name, &ts, &tu) < 0)
        return MT_EINTERNAL;
    st = mtx_prompt_render(ts, keys, vals, n, sys);
    if (st == MT_OK)
        st = mtx_prompt_render(tu, keys, vals, n, user);
    if (st == MT_OK)
        st = mtx_buf_reserve(sys, 1);
    return st == MT_OK ? mtx_buf_reserve(user, 1) : st;
}

void mtx_llmcall_failed_why(enum mt_status st, const struct mt_error *e,
                            char *why, size_t wn)
{
    snprintf(why, wn, "model call failed: %.400s",
             e->msg[0] ? e->msg : mt_status_str(st));
}

/* Tokens the echo may take in the repeat of m[0..nm): the model's context
 * less the answer's room, the messages and the fix (FIX_TOKENS bounds its
 * 700 bytes); UINT32_MAX when the context is unknown. */
#define FIX_TOKENS 250u
static uint32_t echo_budget(const struct mtx_llmcall *c,
                            const struct mt_llm_message *m, size_t nm)
{
    uint32_t n_ctx = c->llm ? mt_llm_n_ctx(c->llm) : 0;

    if (n_ctx == 0)
        return UINT32_MAX;
    return mtx_fit_budget(
        n_ctx, c->max_tokens,
        mtx_fit_count_msgs(m, nm, mtx_fit_count_llm, c->llm) + FIX_TOKENS, 2);
}

/* The bad reply of the last attempt, cut to MTX_REPAIR_ECHO_MAX bytes at
 * a character boundary and to what the model's context leaves beside
 * m[0..nm) (a new string), or "" when none was kept. */
static char *echo_of(const struct mtx_llmcall *c,
                     const struct mt_llm_message *m, size_t nm)
{
    const char *t = c->bad_reply ? c->bad_reply(c->user) : NULL;
    uint32_t budget;
    size_t n;

    if (!t)
        return mt_strdup("");
    n = strlen(t);
    if (n > MTX_REPAIR_ECHO_MAX)
        n = mtx_utf8_cut(t, n, MTX_REPAIR_ECHO_MAX);
    budget = echo_budget(c, m, nm);
    if (budget != UINT32_MAX)
        n = budget ? mtx_fit_cut(t, n, budget, MTX_FIT_CHARS, mtx_fit_count_llm,
                                 c->llm)
                   : 0;
    return mt_strndup(t, n);
}

/* Appends [assistant(bad reply), user(fix)] to m (room for two more). */
static enum mt_status add_repair(const struct mtx_llmcall *c,
                                 struct mt_llm_message *m, size_t *nm,
                                 char **echo, char *fix, size_t fn,
                                 const char *why)
{
    *echo = echo_of(c, m, *nm);
    if (!*echo)
        return MT_ENOMEM;
    snprintf(fix, fn, "Your reply could not be used (%.500s). %.150s", why,
             c->fix ? c->fix
                    : "Reply again with only the JSON object the "
                      "instructions ask for.");
    m[(*nm)++] = (struct mt_llm_message){"assistant", *echo};
    m[(*nm)++] = (struct mt_llm_message){"user", fix};
    return MT_OK;
}

enum mt_status mtx_llmcall_run(const struct mtx_llmcall *c,
                               enum mtx_outcome *last, char *why, size_t wn)
{
    struct mt_llm_message *m = mt_calloc(c->nmsgs + 2, sizeof *m);
    enum mtx_outcome out = MTX_OUTCOME_FAILED;
    enum mt_status st = MT_OK;
    char *echo = NULL;
    char fix[700];
    int k;

    if (!m)
        return MT_ENOMEM;
    memcpy(m, c->msgs, c->nmsgs * sizeof *m);
    for (k = 0; k < 2 && out != MTX_OUTCOME_OK && out != MTX_OUTCOME_TOO_LONG &&
                st == MT_OK;
         k++) {
        size_t nm = c->nmsgs;

        if (c->cancelled && c->cancelled(c->user)) {
            st = MT_ECANCELED;
            break;
        }
        if (k == 1 && out == MTX_OUTCOME_BAD_REPLY)
            st = add_repair(c, m, &nm, &echo, fix, sizeof fix, why);
        if (st == MT_OK)
            out = c->attempt(c->user, m, nm, k, why, wn);
    }
    mt_free(echo);
    mt_free(m);
    *last = out;
    return st;
}
