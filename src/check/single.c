/* The single strategy: one chain-of-thought call with few-shot examples. */
#include <stdio.h>
#include <string.h>

#include "check/agent_int.h"
#include "check/strategy.h"
#include "check/verdict.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"

/* The few-shot examples go first when the prompt does not fit the
 * context (the trace says so); the note itself is never cut: a note that
 * does not fit without them fails. */
static enum mt_status fit_single(struct run *r, struct call *c)
{
    const char **vals = c->fit_user;
    enum mt_status st = mtx_fit_whole(r, c);

    if (st != MT_ELIMIT || !vals[1] || !vals[1][0])
        return st;
    vals[1] = "";
    c->fail[0] = '\0';
    st = mtx_fit_whole(r, c);
    if (st == MT_OK)
        mtx_run_event(r, MT_TRACE_CONTEXT_BUDGET,
                      json_pack("{s:s,s:I,s:s}", "role", "single", "ctx_tokens",
                                (json_int_t)mtx_role_ctx(r, ROLE_SINGLE),
                                "rule",
                                "the few-shot examples were left out to fit "
                                "the model's context"));
    return st;
}

enum mt_status mtx_strategy_single(struct run *r)
{
    static const char *const keys[] = {"SENTENCES", "EXAMPLES"};
    const char *vals[2] = {r->block, NULL};
    struct final_answer f = {0, -1, NULL};
    char *knn = NULL;
    struct call c;
    enum mt_status st = mtx_agent_examples_for(r, &vals[1], &knn);

    if (st == MT_EMODEL) {
        mtx_run_no_answer(r, "single", r->down_why, 1);
        mtx_run_event(r, MT_TRACE_FALLBACK,
                      json_pack("{s:s,s:s,s:s}", "role", "single", "rule",
                                "no examples could be chosen: no error", "why",
                                r->down_why));
        return mtx_run_verdict(r, 0, -1, NULL);
    }
    if (st != MT_OK)
        return st;
    mtx_call_init(&c, ROLE_SINGLE, "single", mtx_check_final, keys, vals, 2);
    c.temperature = r->p.temperature;
    c.check_user = &f;
    c.fit = fit_single;
    c.fit_user = vals;
    st = mtx_call_do(r, &c);
    if (st == MT_OK && c.ok) {
        /* re-check the kept reply: f may hold a later, rejected one */
        mtx_check_final(r, mtx_call_obj(&c), &f, (char[8]){0}, 8);
        st = mtx_run_verdict(r, f.flag, f.sid, f.corr);
    } else if (st == MT_OK) {
        mtx_run_no_answer(r, "single", c.why, 1);
        mtx_run_event(r, MT_TRACE_FALLBACK,
                      json_pack("{s:s,s:s,s:s}", "role", "single", "rule",
                                "no usable answer: no error", "why", c.why));
        st = mtx_run_verdict(r, 0, -1, NULL);
    }
    mtx_call_free(&c);
    mt_free(knn);
    return st;
}
