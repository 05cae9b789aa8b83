/* The model-call loop shared by the checker and question answering:
 * rendering, the repeat with a fix prompt, the outcome codes. */
#include <stdio.h>
#include <string.h>

#include "llmcall/llmcall.h"
#include "medtrust/core.h"

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

enum mt_status mtx_llmcall_run(const struct mtx_llmcall *c,
                               enum mtx_outcome *last, char *why, size_t wn)
{
    struct mt_llm_message *m = mt_calloc(c->nmsgs + 1, sizeof *m);
    enum mtx_outcome out = MTX_OUTCOME_FAILED;
    char fix[700];
    int k;

    if (!m)
        return MT_ENOMEM;
    memcpy(m, c->msgs, c->nmsgs * sizeof *m);
    for (k = 0; k < 2 && out != MTX_OUTCOME_OK; k++) {
        size_t nm = c->nmsgs;

        if (c->cancelled && c->cancelled(c->user)) {
            mt_free(m);
            return MT_ECANCELED;
        }
        if (k == 1 && out == MTX_OUTCOME_BAD_REPLY) {
            snprintf(fix, sizeof fix,
                     "Your reply could not be used (%.500s). "
                     "Reply again with only the JSON object the "
                     "instructions ask for.",
                     why);
            m[nm++] = (struct mt_llm_message){"user", fix};
        }
        out = c->attempt(c->user, m, nm, k, why, wn);
    }
    mt_free(m);
    *last = out;
    return MT_OK;
}
