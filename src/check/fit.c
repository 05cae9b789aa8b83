/* Fitting the checker's prompts to each role model's context: how much
 * room a call's prompt leaves, the clear failure of a note that does not
 * fit, and dropping passages of MedReAct's searches by one rule (the
 * oldest search first, its lowest-ranked passage first). */
#include <stdio.h>
#include <string.h>

#include "check/agent_int.h"
#include "llmcall/fit.h"
#include "llmcall/llmcall.h"
#include "medtrust/core.h"

uint32_t mtx_role_ctx(const struct run *r, enum agent_role role)
{
    return mt_llm_n_ctx(r->a->llm[role]);
}

enum mt_status mtx_call_tokens(struct run *r, const struct call *c,
                               uint32_t *out)
{
    struct mt_buf sys = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_buf user = MT_BUF_INIT(MTX_PROMPT_MAX);
    struct mt_llm *l = r->a->llm[c->role];
    uint64_t t = MTX_FIT_BASE_TOKENS + MTX_FIT_MSG_TOKENS * (2 + c->nhist);
    enum mt_status st = mtx_llmcall_render(r->a->prompts, c->prompt, c->keys,
                                           c->vals, c->nvars, &sys, &user);
    size_t i;

    if (st == MT_OK) {
        t += mt_llm_count_tokens(l, sys.data, sys.len, NULL);
        t += mt_llm_count_tokens(l, user.data, user.len, NULL);
    }
    for (i = 0; st == MT_OK && i < c->nhist; i++)
        t += mt_llm_count_tokens(l, c->hist[i].content,
                                 strlen(c->hist[i].content), NULL);
    mtx_buf_free(&sys);
    mtx_buf_free(&user);
    *out = t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
    return st;
}

enum mt_status mtx_call_room(struct run *r, const struct call *c,
                             uint32_t *room)
{
    uint32_t n_ctx = mtx_role_ctx(r, c->role);
    uint32_t t = 0;
    uint64_t used;
    enum mt_status st;

    *room = UINT32_MAX;
    if (!n_ctx)
        return MT_OK;
    st = mtx_call_tokens(r, c, &t); /* the template's overhead included */
    used = (uint64_t)t + mtx_fit_answer(n_ctx, r->p.max_tokens);
    if (st == MT_OK)
        *room = used < n_ctx ? (uint32_t)(n_ctx - used) : 0;
    return st;
}

enum mt_status mtx_fit_whole(struct run *r, struct call *c)
{
    uint32_t n_ctx = mtx_role_ctx(r, c->role);
    uint32_t t = 0;
    enum mt_status st;

    if (!n_ctx)
        return MT_OK;
    st = mtx_call_tokens(r, c, &t);
    /* the answer keeps --max-tokens, at most an eighth of the context
     * here: llama-server ends a longer answer where its context ends */
    if (st != MT_OK ||
        (uint64_t)t + mtx_fit_answer(n_ctx / 4, r->p.max_tokens) <= n_ctx)
        return st;
    snprintf(c->fail, sizeof c->fail,
             "the note does not fit the model's context: the %s prompt is "
             "%u tokens and --max-tokens %u, the context %u tokens (the "
             "note is not cut): use a model with a longer context (--ctx) "
             "or lower --max-tokens",
             c->prompt, (unsigned)t, (unsigned)r->p.max_tokens,
             (unsigned)n_ctx);
    return MT_ELIMIT;
}

/* Tokens passage p takes in an observation or trajectory. */
static uint32_t passage_tokens(struct mt_llm *l, const json_t *p)
{
    const char *s = json_string_value(p);

    return s ? mt_llm_count_tokens(l, s, strlen(s), NULL) + 2 : 0;
}

size_t mtx_drop_passages(json_t *searches, uint32_t excess, struct mt_llm *l)
{
    uint64_t gone = 0;
    size_t dropped = 0;
    size_t i;

    for (i = 0; gone < excess && i < json_array_size(searches); i++) {
        json_t *ps = json_object_get(json_array_get(searches, i), "passages");
        size_t j = json_array_size(ps);

        while (gone < excess && j-- > 0) {
            if (json_is_null(json_array_get(ps, j)))
                continue;
            gone += passage_tokens(l, json_array_get(ps, j));
            json_array_set_new(ps, j, json_null());
            dropped++;
        }
    }
    return dropped;
}
