/* MedReAct'N'MedReFlex (IryoNLP, MEDIQA-CORR 2024; Corbeil, ClinicalNLP
 * 2024): MedReAct steps (observation, thought, action: search or
 * final_mistake), MedEval with several sampled reviewers, MedReFlex
 * reflections as the next round's memory, and MedFinalParser, which
 * formats the accepted answer. Published code:
 * jpcorb20/iryonlp-mediqa-corr-2024 (react.py, reflexion.py,
 * correction/definitions.py). */
#include <stdio.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "check/agent_int.h"
#include "check/strategy.h"
#include "check/verdict.h"
#include "core/clock.h"
#include "llmcall/fit.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"

#define TEXT_MAX ((size_t)64 << 20)
#define N_SCORES 6

static const char *const score_keys[N_SCORES] = {
    "validity",  "preciseness",  "confidence",
    "relevance", "completeness", "final",
};

/* Per round: the steps for MedEval and MedReFlex (each {"observation",
 * "thought", "action", "query"?, "passages"?: [...]}), the ReAct message
 * history, and the answer when one came. */
struct round {
    json_t *steps;
    struct mt_llm_message *hist;
    size_t nhist;
    char **owned;
    json_t *answer; /* final_mistake action */
    struct mt_buf reviews;
    /* per search: {"hist": index of its observation in hist, "query",
     * "passages", "failed"}, to render the observation again with
     * passages left out when the history outgrows the context */
    json_t *obs;
};

/* ==== MedEval acceptance ==== */

int mt_medeval_accept(const int *finals, size_t n, double mean_min,
                      double min_min, double *mean, int *min)
{
    double sum = 0;
    size_t i;

    *mean = 0;
    *min = 0;
    if (n == 0)
        return 0;
    *min = finals[0];
    for (i = 0; i < n; i++) {
        sum += finals[i];
        if (finals[i] < *min)
            *min = finals[i];
    }
    *mean = sum / (double)n;
    /* The paper's rule (Figure 1, E): mean >= threshold and minimum >= 3,
     * with the TRUE minimum over all reviewers. Knowingly departs from
     * the published code; see mtx_medeval_published_min. */
    return *mean >= mean_min && (double)*min >= min_min;
}

/* The "minimum" the published code compares with 3.0
 * (MetaEvaluator.meta_evaluation in correction/definitions.py): for each
 * reviewer i > 0 it updates the running mean, then sets
 * min_output = min(running mean, score of reviewer i), overwriting the
 * previous value. So what survives is min(mean of all, LAST score): a low
 * score from any reviewer but the last is never seen. With finals
 * 2,5,5,5,5 it is 4.4 and the answer is accepted although a reviewer gave
 * 2; with 5,5,5,5,2 it is 2 and the answer is rejected, as it should be.
 * Kept for the trace only, to show where the published rule would have
 * decided otherwise. */
double mtx_medeval_published_min(const int *finals, size_t n)
{
    double run = 0;
    double m = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        run = i == 0 ? finals[0]
                     : ((double)i * run + finals[i]) / (double)(i + 1);
        m = i == 0 ? finals[0] : (run < finals[i] ? run : finals[i]);
    }
    return m;
}

/* ==== Reply checks ==== */

static int check_react(struct run *r, json_t *o, void *u, char *why, size_t n)
{
    json_t *act = json_object_get(o, "action");
    const char *name = mtx_reply_str(act, "name");
    const char *q = mtx_reply_str(act, "query");
    struct final_answer f;

    (void)u;
    if (!json_is_object(act) || !name) {
        snprintf(why, n, "\"action\" must be an object with a \"name\"");
        return -1;
    }
    if (strcmp(name, "final_mistake") == 0)
        return mtx_check_final(r, act, &f, why, n);
    if (strcmp(name, "search") == 0 && q && *q)
        return 0;
    snprintf(why, n,
             "\"action\" must be {\"name\":\"search\",\"query\":"
             "...} or {\"name\":\"final_mistake\",...}");
    return -1;
}

static int check_eval(struct run *r, json_t *o, void *u, char *why, size_t n)
{
    long v;
    int i;

    (void)r;
    (void)u;
    for (i = 0; i < N_SCORES; i++) {
        if (mtx_reply_int(o, score_keys[i], 1, 5, &v) != 0) {
            snprintf(why, n, "\"%s\" must be an integer from 1 to 5",
                     score_keys[i]);
            return -1;
        }
    }
    return 0;
}

static int check_reflect(struct run *r, json_t *o, void *u, char *why, size_t n)
{
    const char *p = mtx_reply_str(o, "plan");

    (void)r;
    (void)u;
    if (p && *p)
        return 0;
    snprintf(why, n, "\"plan\" is missing or empty");
    return -1;
}

/* Records that 'role' fell back, and the rule applied. */
static void fallback(struct run *r, const char *role, const char *rule)
{
    mtx_run_event(r, MT_TRACE_FALLBACK,
                  json_pack("{s:s,s:s}", "role", role, "rule", rule));
}

/* ==== MedReAct ==== */

static enum mt_status hist_push(struct round *rd, const char *role, char *owned)
{
    struct mt_llm_message *m;
    char **o;

    if (!owned)
        return MT_ENOMEM;
    m = mt_realloc(rd->hist, (rd->nhist + 1) * sizeof *m);
    o = m ? mt_realloc(rd->owned, (rd->nhist + 1) * sizeof *o) : NULL;
    if (m)
        rd->hist = m;
    if (!o) {
        mt_free(owned);
        return MT_ENOMEM;
    }
    rd->owned = o;
    rd->owned[rd->nhist] = owned;
    rd->hist[rd->nhist++] = (struct mt_llm_message){role, owned};
    return MT_OK;
}

static void round_free(struct round *rd)
{
    size_t i;

    for (i = 0; i < rd->nhist; i++)
        mt_free(rd->owned[i]);
    mt_free(rd->owned);
    mt_free(rd->hist);
    json_decref(rd->steps);
    mtx_buf_free(&rd->reviews);
    json_decref(rd->answer);
    json_decref(rd->obs);
    memset(rd, 0, sizeof *rd);
}

static enum mt_status round_init(struct round *rd)
{
    memset(rd, 0, sizeof *rd);
    rd->reviews = MT_BUF_INIT(TEXT_MAX);
    rd->steps = json_array();
    rd->obs = json_array();
    return rd->steps && rd->obs ? MT_OK : MT_ENOMEM;
}

/* Appends the passages as "[rank] text" lines, most relevant first, or
 * last with 'last' (IryoNLP's published order); a dropped one (null)
 * counts in *cut. */
static enum mt_status put_passages(const json_t *ps, uint32_t last,
                                   struct mt_buf *out, size_t *cut)
{
    size_t n = json_array_size(ps);
    size_t j;
    enum mt_status st = MT_OK;

    for (j = 0; st == MT_OK && j < n; j++) {
        size_t k = last ? n - 1 - j : j;
        const char *t = json_string_value(json_array_get(ps, k));

        if (t)
            st = mtx_buf_printf(out, "[%zu] %s\n", k + 1, t);
        else
            (*cut)++;
    }
    return st;
}

/* The observation MedReAct reads after search(q): the passages, or why
 * there are none. */
static enum mt_status observation(const struct run *r, const char *q,
                                  const json_t *passages, const char *failed,
                                  struct mt_buf *obs)
{
    enum mt_status st =
        mtx_buf_printf(obs, "Observation: passages found for \"%s\":\n", q);
    size_t cut = 0;

    st = st == MT_OK ? put_passages(passages, r->p.passages_last, obs, &cut)
                     : st;
    if (st == MT_OK && cut)
        st = mtx_buf_printf(obs,
                            "(%zu passages of this search left out to fit "
                            "the model's context)\n",
                            cut);
    if (st == MT_OK && failed)
        st = mtx_buf_printf(obs, "The search failed: %s\n", failed);
    else if (st == MT_OK && !r->p.db_dir)
        st = mtx_buf_append_str(obs, "No medical corpus is configured "
                                     "(--no-retrieval): rely on your own "
                                     "knowledge.\n");
    else if (st == MT_OK && json_array_size(passages) == 0)
        st = mtx_buf_append_str(obs, "No passage matched the query.\n");
    return st;
}

/* The run's metadata conditions as {KEY: text, or [min, max] for a
 * range}, or NULL when it has none. */
static json_t *meta_json(const struct run *r)
{
    json_t *o = r->nmeta ? json_object() : NULL;
    size_t i;

    for (i = 0; o && i < r->nmeta; i++) {
        const struct mt_meta_cond *c = &r->meta[i];

        json_object_set_new(o, c->key,
                            c->text ? json_string(c->text)
                                    : json_pack("[f,f]", c->min, c->max));
    }
    return o;
}

/* A hybrid weight as the trace shows it: the float to 6 decimals (0.7,
 * not 0.699999988), which reads back as the same float. */
static double weight(float w)
{
    return round((double)w * 1e6) / 1e6;
}

/* The search's trace event: the query, the search mode that ran (bm25,
 * dense, hybrid; none without a corpus), its depths (retrieve_k, k) and
 * hybrid weights, and whether a cross-encoder reranked, the hits' ids and
 * sources, the run's source filter and metadata conditions ("meta") when it has
 * them, the search's time (medtrust sweep reads hit_sources and ms for the
 * papers' Fig. 3 and Fig. 7) and the hits themselves ("passages": id,
 * title, source, text cut to hit_chars, link), so a reader (the server's
 * step events, the UI) shows them without searching again.
 */
static json_t *search_event(const struct run *r, const char *q,
                            const char *mode, const struct search_out *so,
                            double ms)
{
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:I,s:f,s:f,s:b,s:O,s:O,s:f}", "query", q,
                  "mode", mode, "retrieve_k", (json_int_t)r->p.retrieve_k, "k",
                  (json_int_t)r->p.rerank_k, "w_lex", weight(r->p.w_lex),
                  "w_sem", weight(r->p.w_sem), "reranked",
                  r->a->ret && mt_retriever_has_reranker(r->a->ret), "hits",
                  so->ids, "hit_sources", so->srcs, "ms", ms);
    json_t *src = r->n_sources ? json_array() : NULL;
    json_t *meta = meta_json(r);
    size_t i;

    for (i = 0; src && i < r->n_sources; i++)
        json_array_append_new(src, json_string(r->sources[i]));
    if (o && src)
        json_object_set_new(o, "sources", src);
    else
        json_decref(src);
    if (o && meta)
        json_object_set_new(o, "meta", meta);
    else
        json_decref(meta);
    if (o)
        json_object_set(o, "passages", so->hits);
    return o;
}

/* Runs search(query), records it with its passages in the step 'sj', and
 * adds the exchange to the history. Every one of the N steps may search
 * (react.py: a search on the last step is run and its results join the
 * history that MedEval and MedReFlex read). */
static enum mt_status do_search(struct run *r, struct round *rd,
                                const struct call *c, const char *q, json_t *sj)
{
    struct mt_buf obs = MT_BUF_INIT(TEXT_MAX);
    struct mt_error err = {MT_OK, ""};
    struct search_out so = {json_array(), json_array(), json_array(),
                            json_array()};
    json_t *passages = so.passages;
    enum mt_status st =
        so.passages && so.ids && so.srcs && so.hits ? MT_OK : MT_ENOMEM;
    const char *mode = "none";
    double t0 = mtx_clock_now(), ms;

    if (st == MT_OK)
        st = mtx_agent_search(r, q, &so, &mode, &err);
    ms = (mtx_clock_now() - t0) * 1e3;
    if (st != MT_OK && st != MT_ENOMEM) /* a failed search is observed */
        st = observation(r, q, passages, err.msg, &obs);
    else if (st == MT_OK)
        st = observation(r, q, passages, NULL, &obs);
    mtx_run_event(r, MT_TRACE_SEARCH, search_event(r, q, mode, &so, ms));
    json_object_set(sj, "passages", passages);
    if (st == MT_OK)
        st = hist_push(rd, "assistant", mt_strdup(c->raw));
    if (st == MT_OK)
        st = hist_push(rd, "user", mtx_buf_take(&obs));
    if (st == MT_OK &&
        json_array_append_new(rd->obs,
                              json_pack("{s:I,s:s,s:O,s:s?}", "hist",
                                        (json_int_t)(rd->nhist - 1), "query", q,
                                        "passages", passages, "failed",
                                        err.msg[0] ? err.msg : NULL)) != 0)
        st = MT_ENOMEM;
    json_decref(so.ids);
    json_decref(so.srcs);
    json_decref(so.hits);
    json_decref(passages);
    mtx_buf_free(&obs);
    return st;
}

/* Records the step's observation, thought and action for MedEval and
 * MedReFlex: a search with its query, a final_mistake with its answer
 * ("answer", the action; never an empty query); returns the new step
 * (borrowed) or NULL. */
static json_t *step_record(struct round *rd, json_t *o, json_t *act)
{
    const char *ob = mtx_reply_str(o, "observation");
    const char *th = mtx_reply_str(o, "thought");
    const char *name = mtx_reply_str(act, "name");
    const char *q = mtx_reply_str(act, "query");
    int final = strcmp(name, "final_mistake") == 0;
    json_t *sj = json_pack("{s:s,s:s,s:s}", "observation", ob ? ob : "",
                           "thought", th ? th : "", "action", name);

    if (sj && final)
        json_object_set(sj, "answer", act);
    else if (sj && q)
        json_object_set_new(sj, "query", json_string(q));
    if (!sj || json_array_append_new(rd->steps, sj) != 0)
        return NULL;
    return sj;
}

/* What a call's variable part may take of 'room' when the room of the
 * repair turn stays free (MTX_FIT_REPAIR_TOKENS), but at most half of it:
 * in a small context the passages keep half, and a long bad reply's
 * repair may then not fit (the call fails; the trace says why). */
static uint32_t leave_repair(const struct run *r, uint32_t room)
{
    uint32_t k = MTX_FIT_REPAIR_TOKENS(r->p.max_tokens);

    if (k > room / 2)
        k = room / 2;
    return room - k;
}

/* ==== MedReAct's history, fitted to the context ==== */

/* The history sent with a MedReAct step: the round's, or a copy whose
 * observations are rendered again with passages left out. */
struct react_fit {
    struct round *rd;
    struct mt_llm_message *msgs; /* the fitted copy (owned) */
    char **own;                  /* its observations rendered again */
    size_t nown;
};

static void react_fit_free(struct react_fit *f)
{
    size_t i;

    for (i = 0; i < f->nown; i++)
        mt_free(f->own[i]);
    mt_free(f->own);
    mt_free(f->msgs);
    f->own = NULL;
    f->msgs = NULL;
    f->nown = 0;
}

/* One observation of 'obs' rendered again into f->own. */
static enum mt_status obs_again(const struct run *r, struct react_fit *f,
                                const json_t *o)
{
    struct mt_buf b = MT_BUF_INIT(TEXT_MAX);
    size_t h = (size_t)json_integer_value(json_object_get(o, "hist"));
    enum mt_status st = observation(r, mtx_reply_str(o, "query"),
                                    json_object_get(o, "passages"),
                                    mtx_reply_str(o, "failed"), &b);

    if (st == MT_OK)
        st = mtx_buf_reserve(&b, 1);
    if (st == MT_OK) {
        f->own[f->nown++] = mtx_buf_take(&b);
        if (h < f->rd->nhist)
            f->msgs[h].content = f->own[f->nown - 1];
    }
    mtx_buf_free(&b);
    return st;
}

/* f->msgs: the round's history with every observation from 'obs'. */
static enum mt_status hist_from(const struct run *r, struct react_fit *f,
                                const json_t *obs)
{
    const struct round *rd = f->rd;
    enum mt_status st = MT_OK;
    size_t i;

    react_fit_free(f);
    f->msgs = mt_calloc(rd->nhist + 1, sizeof *f->msgs);
    f->own = mt_calloc(json_array_size(obs) + 1, sizeof *f->own);
    if (!f->msgs || !f->own)
        return MT_ENOMEM;
    memcpy(f->msgs, rd->hist, rd->nhist * sizeof *f->msgs);
    for (i = 0; st == MT_OK && i < json_array_size(obs); i++)
        st = obs_again(r, f, json_array_get(obs, i));
    return st;
}

static uint32_t hist_tokens(const struct run *r, const struct call *c)
{
    uint64_t t = 0;
    size_t i;

    for (i = 0; i < c->nhist; i++)
        t += mt_llm_count_tokens(r->a->llm[c->role], c->hist[i].content,
                                 strlen(c->hist[i].content), NULL) +
             MTX_FIT_MSG_TOKENS;
    return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* Leaves the oldest exchanges (a step's reply and its observation) out
 * of f->msgs until the history fits 'room' (the newest is kept when
 * nothing older is left); returns how many went. */
static size_t drop_exchanges(const struct run *r, struct call *c,
                             struct react_fit *f, uint32_t room, uint32_t *t)
{
    size_t skip = 0;

    while (*t > room && skip + 2 < f->rd->nhist) {
        skip += 2;
        c->hist = f->msgs + skip;
        c->nhist = f->rd->nhist - skip;
        *t = hist_tokens(r, c);
    }
    return skip / 2;
}

/* Leaves passages out of the history's observations (the oldest search
 * first, its lowest-ranked passage first) until it fits 'room'; when the
 * replies alone are more, the oldest exchanges go too. */
static enum mt_status trim_hist(struct run *r, struct call *c,
                                struct react_fit *f, uint32_t room)
{
    json_t *obs = json_deep_copy(f->rd->obs);
    uint32_t t = hist_tokens(r, c);
    size_t dropped = 0;
    size_t gone = 0;
    enum mt_status st = obs ? hist_from(r, f, obs) : MT_ENOMEM;
    int k;

    c->hist = f->msgs;
    for (k = 0; st == MT_OK && t > room && k < 4; k++) {
        size_t d = mtx_drop_passages(obs, t - room, r->a->llm[ROLE_REACT]);
        if (!d)
            break;
        dropped += d;
        st = hist_from(r, f, obs);
        c->hist = f->msgs;
        t = hist_tokens(r, c);
    }
    json_decref(obs);
    if (st == MT_OK && t > room)
        gone = drop_exchanges(r, c, f, room, &t);
    if (st == MT_OK && (dropped || gone))
        mtx_run_event(
            r, MT_TRACE_CONTEXT_BUDGET,
            json_pack("{s:s,s:I,s:I,s:I,s:I,s:s}", "role", "react",
                      "ctx_tokens", (json_int_t)mtx_role_ctx(r, ROLE_REACT),
                      "budget_tokens", (json_int_t)room, "passages_dropped",
                      (json_int_t)dropped, "steps_dropped", (json_int_t)gone,
                      "rule",
                      "passages were left out of MedReAct's history to fit "
                      "the model's context, the oldest search's "
                      "lowest-ranked first; then the oldest steps"));
    return st;
}

/* The step's fit: the prompt alone must fit with --max-tokens; the
 * history takes what is left, trimmed of passages when it is more. */
static enum mt_status fit_react(struct run *r, struct call *c)
{
    struct react_fit *f = c->fit_user;
    uint32_t room = UINT32_MAX;
    enum mt_status st;

    react_fit_free(f);
    c->hist = NULL;
    c->nhist = 0;
    st = mtx_call_room(r, c, &room);
    if (st == MT_OK && room == 0) /* the history goes; may the rest? */
        st = mtx_fit_whole(r, c);
    c->hist = f->rd->hist;
    c->nhist = f->rd->nhist;
    if (st != MT_OK || room == UINT32_MAX || c->nhist == 0)
        return st;
    return trim_hist(r, c, f, leave_repair(r, room));
}

/* One MedReAct step; *done is set when the round's steps are over. */
static enum mt_status react_step(struct run *r, struct round *rd,
                                 const char *memory, int *done)
{
    static const char *const keys[] = {"SENTENCES", "MEMORY", "STEPS"};
    char steps[16];
    const char *vals[3] = {r->block, memory, steps};
    struct react_fit f = {rd, NULL, NULL, 0};
    struct call c;
    json_t *act;
    json_t *sj = NULL;
    enum mt_status st;

    snprintf(steps, sizeof steps, "%u", (unsigned)r->p.max_steps);
    mtx_call_init(&c, ROLE_REACT, "react", check_react, keys, vals, 3);
    c.hist = rd->hist;
    c.nhist = rd->nhist;
    c.temperature = r->p.temperature;
    c.fit = fit_react;
    c.fit_user = &f;
    st = mtx_call_do(r, &c);
    react_fit_free(&f);
    act = json_object_get(mtx_call_obj(&c), "action");
    *done = 1;
    if (st == MT_OK && !c.ok) {
        r->undecided++; /* no answer for MedEval to judge: not a "no" */
        mtx_run_no_answer(r, "react", c.why, 0);
        fallback(r, "react",
                 "no usable step: the round ends without an "
                 "answer");
    }
    if (st == MT_OK && act && !(sj = step_record(rd, mtx_call_obj(&c), act)))
        st = MT_ENOMEM;
    if (st == MT_OK && sj &&
        strcmp(mtx_reply_str(act, "name"), "final_mistake") == 0) {
        rd->answer = json_deep_copy(act);
        st = rd->answer ? MT_OK : MT_ENOMEM;
    } else if (st == MT_OK && sj) {
        *done = 0;
        st = do_search(r, rd, &c, mtx_reply_str(act, "query"), sj);
    }
    mtx_call_free(&c);
    return st;
}

/* ==== The trajectory MedEval and MedReFlex read ==== */

/* A final step as the answer it is: the verdict, the sentence and the
 * correction, as the reviewers must judge them. */
static enum mt_status render_answer(const json_t *a, struct mt_buf *out)
{
    const char *es = mtx_reply_str(a, "error_sentence");
    const char *cs = mtx_reply_str(a, "corrected_sentence");
    long sid = -1;
    int flag = 0;

    mtx_reply_bool(a, "is_error", &flag);
    mtx_reply_int(a, "sentence_id", -1, 1L << 30, &sid);
    if (!flag || sid < 0)
        return mtx_buf_append_str(out, "final_mistake (the answer): the note "
                                       "holds no error\n");
    return mtx_buf_printf(out,
                          "final_mistake (the answer): sentence %ld is "
                          "wrong\n  error sentence: %s\n  corrected "
                          "sentence: %s\n",
                          sid, es ? es : "", cs ? cs : "");
}

static enum mt_status render_step(const json_t *sj, size_t k, uint32_t last,
                                  struct mt_buf *out)
{
    const json_t *ps = json_object_get(sj, "passages");
    const json_t *ans = json_object_get(sj, "answer");
    const char *q = ans ? NULL : mtx_reply_str(sj, "query");
    size_t cut = 0;
    enum mt_status st = mtx_buf_printf(
        out, "Step %zu\nObservation: %s\nThought: %s\nAction: %s", k,
        mtx_reply_str(sj, "observation"), mtx_reply_str(sj, "thought"),
        q ? "search(\"" : "");

    if (st == MT_OK && ans)
        st = render_answer(ans, out);
    else if (st == MT_OK && !q)
        st = mtx_buf_append_str(out, "(none)\n");
    if (st == MT_OK && q)
        st = mtx_buf_printf(out, "%s\")\nPassages found:\n", q);
    if (st == MT_OK)
        st = put_passages(ps, last, out, &cut);
    if (st == MT_OK && cut)
        st = mtx_buf_printf(out, "(%zu passages left out)\n", cut);
    else if (st == MT_OK && q && json_array_size(ps) == 0)
        st = mtx_buf_append_str(out, "(none)\n");
    return st;
}

static enum mt_status render_traj(const json_t *steps, uint32_t last,
                                  struct mt_buf *b)
{
    enum mt_status st = mtx_buf_reserve(b, 1);
    size_t i;

    for (i = 0; st == MT_OK && i < json_array_size(steps); i++)
        st = render_step(json_array_get(steps, i), i + 1, last, b);
    if (st == MT_OK && json_array_size(steps) == 0)
        st = mtx_buf_append_str(b, "(no steps)\n");
    return st;
}

/* The round's steps with their passages, as the published code passes
 * the whole ReAct history (observations, thoughts, actions and their
 * results) to MedEval and MedReFlex, bounded by 'budget' tokens (counted
 * with the role's model): passages go, the oldest search's lowest-ranked
 * first, and the trace says how many went. Writes a new string into
 * *out. */
static enum mt_status trajectory(struct run *r, const struct round *rd,
                                 enum agent_role role, uint32_t budget,
                                 char **out)
{
    struct mt_buf b = MT_BUF_INIT(TEXT_MAX);
    struct mt_llm *l = r->a->llm[role];
    json_t *steps = json_deep_copy(rd->steps);
    enum mt_status st =
        steps ? render_traj(steps, r->p.passages_last, &b) : MT_ENOMEM;
    uint32_t t = st == MT_OK ? mt_llm_count_tokens(l, b.data, b.len, NULL) : 0;
    size_t dropped = 0;
    int k;

    for (k = 0; st == MT_OK && t > budget && k < 4; k++) {
        size_t d = mtx_drop_passages(steps, t - budget, l);
        if (!d)
            break;
        dropped += d;
        mtx_buf_reset(&b);
        st = render_traj(steps, r->p.passages_last, &b);
        t = mt_llm_count_tokens(l, b.data, b.len, NULL);
    }
    if (st == MT_OK && dropped)
        mtx_run_event(
            r, MT_TRACE_EVIDENCE_BUDGET,
            json_pack("{s:s,s:I,s:I,s:I,s:s}", "role",
                      role == ROLE_EVAL ? "eval" : "reflect", "budget_tokens",
                      (json_int_t)budget, "ctx_tokens",
                      (json_int_t)mtx_role_ctx(r, role), "passages_dropped",
                      (json_int_t)dropped, "rule",
                      "passages were left out to fit the token budget "
                      "(--evidence-tokens, or what the model's context "
                      "leaves): the oldest search's lowest-ranked first"));
    json_decref(steps);
    *out = st == MT_OK ? mtx_buf_take(&b) : NULL;
    mtx_buf_free(&b);
    return st;
}

/* MedEval's and MedReFlex's fit: the trajectory gets what the context
 * leaves after --max-tokens and the rest of the prompt, at most
 * --evidence-tokens. */
struct traj_fit {
    const struct round *rd;
    const char **vals;
    size_t slot; /* the TRAJECTORY variable */
    char *traj;  /* owned */
};

static enum mt_status fit_traj(struct run *r, struct call *c)
{
    struct traj_fit *f = c->fit_user;
    uint32_t budget = r->p.evidence_tokens;
    uint32_t room = UINT32_MAX;
    enum mt_status st;

    f->vals[f->slot] = "";
    mt_free(f->traj);
    f->traj = NULL;
    st = mtx_call_room(r, c, &room);
    if (st == MT_OK && room == 0) /* the passages go; may the rest? */
        st = mtx_fit_whole(r, c);
    if (st != MT_OK)
        return st;
    if (room != UINT32_MAX && leave_repair(r, room) < budget)
        budget = leave_repair(r, room);
    if (st == MT_OK)
        st = trajectory(r, f->rd, c->role, budget, &f->traj);
    if (st == MT_OK)
        f->vals[f->slot] = f->traj;
    return st == MT_OK ? mtx_fit_whole(r, c) : st;
}

/* ==== MedEval ==== */

static char *dump(const json_t *o)
{
    return o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)
             : mt_strdup("(no answer)");
}

/* Collects the finals and the review texts of the valid samples. */
static size_t collect_reviews(const struct call *c, struct round *rd,
                              int *finals)
{
    size_t i;
    size_t k = 0;

    for (i = 0; i < json_array_size(c->objs) && k < 64; i++) {
        const json_t *o = json_array_get(c->objs, i);
        const char *cm = mtx_reply_str(o, "final_reasoning");
        long v[N_SCORES] = {0};
        int j;

        for (j = 0; j < N_SCORES; j++)
            mtx_reply_int(o, score_keys[j], 1, 5, &v[j]);
        finals[k++] = (int)v[N_SCORES - 1];
        mtx_buf_printf(&rd->reviews,
                       "Reviewer %zu: validity %ld, "
                       "preciseness %ld, confidence %ld, relevance %ld, "
                       "completeness %ld, final %ld. %s\n",
                       k, v[0], v[1], v[2], v[3], v[4], v[5], cm ? cm : "");
    }
    return k;
}

/* Usable reviews a round needs (p.eval_quorum, at most the reviewers
 * asked): an answer is never accepted on the word of one reviewer when
 * the others' replies were lost. */
static size_t quorum(const struct run *r)
{
    uint32_t q = r->p.eval_quorum;

    return q < r->p.n_evals ? q : r->p.n_evals;
}

static void medeval_event(struct run *r, const int *finals, size_t n,
                          int accepted, double mean, int min)
{
    json_t *fa = json_array();
    double pub = mtx_medeval_published_min(finals, n);
    int pub_accepts = n && mean >= r->p.accept_mean && pub >= r->p.accept_min;
    size_t i;

    for (i = 0; i < n; i++)
        json_array_append_new(fa, json_integer(finals[i]));
    mtx_run_event(r, MT_TRACE_MEDEVAL,
                  json_pack("{s:o,s:f,s:i,s:b,s:f,s:i,s:i,s:s?}", "finals", fa,
                            "mean", mean, "min", min, "accepted", accepted,
                            "published_min", pub, "usable", (json_int_t)n,
                            "quorum", (json_int_t)quorum(r), "rule",
                            !n ? "no usable review: not accepted"
                            : n < quorum(r)
                                ? "fewer usable reviews than the quorum: "
                                  "not accepted"
                            : pub_accepts != accepted
                                ? "the published code's minimum (mean and "
                                  "last score) would have decided otherwise"
                                : NULL));
}

/* MedEval: n_evals reviews sampled at eval_temperature from one request
 * (n samples), each seeing the note, the trajectory with its passages
 * and the answer; accepted by mt_medeval_accept. */
static enum mt_status medeval(struct run *r, struct round *rd, char *answer,
                              int *accepted)
{
    static const char *const keys[] = {"SENTENCES", "TRAJECTORY", "ANSWER"};
    const char *vals[3] = {r->block, "", answer};
    struct traj_fit tf = {rd, vals, 1, NULL};
    int finals[64];
    double mean;
    int min;
    size_t n;
    struct call c;
    enum mt_status st;

    *accepted = 0;
    mtx_call_init(&c, ROLE_EVAL, "eval", check_eval, keys, vals, 3);
    c.n = r->p.n_evals;
    c.temperature = r->p.eval_temperature;
    c.fit = fit_traj;
    c.fit_user = &tf;
    st = mtx_call_do(r, &c);
    n = st == MT_OK ? collect_reviews(&c, rd, finals) : 0;
    if (st == MT_OK && n < quorum(r)) { /* the answer was never judged */
        char why[300];

        snprintf(why, sizeof why, "%s%s%zu usable reviews of the %zu needed",
                 c.why, c.why[0] ? "; " : "", n, quorum(r));
        r->undecided++;
        mtx_run_no_answer(r, "eval", why, 0);
    }
    *accepted = mt_medeval_accept(finals, n, r->p.accept_mean, r->p.accept_min,
                                  &mean, &min) &&
                n >= quorum(r);
    if (st == MT_OK)
        medeval_event(r, finals, n, *accepted, mean, min);
    mtx_call_free(&c);
    mt_free(tf.traj);
    return st;
}

/* ==== MedReFlex ==== */

static enum mt_status medreflex(struct run *r, struct round *rd, char *answer,
                                struct mt_buf *memory, uint32_t round)
{
    static const char *const keys[] = {"SENTENCES", "MEMORY", "TRAJECTORY",
                                       "ANSWER", "REVIEWS"};
    const char *vals[5] = {r->block, memory->data ? memory->data : "", "",
                           answer,
                           rd->reviews.data ? rd->reviews.data : "none"};
    struct traj_fit tf = {rd, vals, 2, NULL};
    struct call c;
    const json_t *o;
    enum mt_status st;

    mtx_call_init(&c, ROLE_REFLECT, "reflect", check_reflect, keys, vals, 5);
    c.temperature = r->p.temperature;
    c.fit = fit_traj;
    c.fit_user = &tf;
    st = mtx_call_do(r, &c);
    o = mtx_call_obj(&c);
    if (st == MT_OK && o)
        st = mtx_buf_printf(memory, "Round %u: %s Plan: %s\n", round + 1,
                            mtx_reply_str(o, "reflection")
                                ? mtx_reply_str(o, "reflection")
                                : "",
                            mtx_reply_str(o, "plan"));
    else if (st == MT_OK) {
        fallback(r, "reflect",
                 "no usable reflection: a generic "
                 "lesson is kept");
        st = mtx_buf_printf(memory,
                            "Round %u: the answer was not accepted. "
                            "Re-examine every sentence and search before "
                            "answering.\n",
                            round + 1);
    }
    mtx_call_free(&c);
    mt_free(tf.traj);
    return st;
}

/* ==== MedFinalParser ==== */

/* Any JSON object will do: the parser only supplies wording. */
static int check_parser(struct run *r, json_t *o, void *u, char *why, size_t n)
{
    (void)r;
    (void)u;
    (void)o;
    (void)why;
    (void)n;
    return 0;
}

/* Whether the parser's reply names the accepted answer's sentence (and
 * flag): only then may its wording replace MedReAct's correction. */
static int same_sentence(const struct run *r, const struct final_answer *acc,
                         const json_t *o)
{
    int flag = -1;
    long sid = -2;

    if (!o)
        return 0;
    mtx_reply_bool(o, "is_error", &flag);
    if (mtx_reply_int(o, "sentence_id", -1, (long)r->nsents, &sid) != 0)
        sid = -2;
    return flag == acc->flag && (!acc->flag || sid == acc->sid);
}

/* Records where the parser's reply disagreed with the accepted answer. */
static void parser_disagreement(struct run *r, const struct final_answer *acc,
                                json_t *o)
{
    int flag = -1;
    long sid = -2;

    mtx_reply_bool(o, "is_error", &flag);
    if (mtx_reply_int(o, "sentence_id", -1, (long)r->nsents, &sid) != 0)
        sid = -2;
    if (flag == acc->flag && (!acc->flag || sid == acc->sid))
        return;
    mtx_run_event(r, MT_TRACE_PARSER_DISAGREED,
                  json_pack("{s:i,s:i,s:i,s:i,s:s}", "accepted_flag", acc->flag,
                            "accepted_sentence_id", acc->sid, "parser_flag",
                            flag, "parser_sentence_id", (json_int_t)sid, "rule",
                            "the parser formats; the flag, sentence and "
                            "correction MedEval accepted stand"));
}

/* MedFinalParser formats, it does not decide (paper, section 3: it turns
 * the accepted answer into the output and restores the note's style in
 * the corrected sentence). The error flag and sentence id are the ones
 * MedEval accepted; only the corrected sentence's wording is taken from
 * the parser's reply, when it gives one for the same sentence (another
 * sentence's correction would be written under the accepted id). (The published
 * code reparses the whole history with find_and_correct, which may change the
 * verdict; we knowingly keep the reviewed one.) */
static enum mt_status final_parser(struct run *r, json_t *answer,
                                   char *answer_text)
{
    static const char *const keys[] = {"SENTENCES", "ANSWER"};
    const char *vals[2] = {r->block, answer_text};
    struct final_answer acc = {0, -1, NULL};
    const char *corr;
    char why[8];
    struct call c;
    enum mt_status st;

    mtx_check_final(r, answer, &acc, why, sizeof why);
    mtx_call_init(&c, ROLE_PARSER, "parser", check_parser, keys, vals, 2);
    c.temperature = r->p.temperature;
    c.fit = mtx_fit_whole;
    st = mtx_call_do(r, &c);
    corr = mtx_reply_str(mtx_call_obj(&c), "corrected_sentence");
    if (st == MT_OK && !c.ok)
        fallback(r, "parser",
                 "no usable final answer: the accepted "
                 "MedReAct answer is used as it stands");
    else if (st == MT_OK)
        parser_disagreement(r, &acc, mtx_call_obj(&c));
    if (st == MT_OK && !same_sentence(r, &acc, mtx_call_obj(&c)))
        corr = NULL; /* another sentence's wording: MedReAct's stands */
    if (st == MT_OK)
        st = mtx_run_verdict(r, acc.flag, acc.sid,
                             corr && *corr ? corr : acc.corr);
    mtx_call_free(&c);
    return st;
}

/* ==== Rounds ==== */

/* One round: up to N steps, then MedEval; *accepted when the answer
 * passed. N steps without final_mistake end the round unaccepted, and
 * MedReFlex reflects (reflexion.py: not is_final_flag). */
static enum mt_status react_round(struct run *r, struct round *rd,
                                  const char *memory, int *accepted)
{
    uint32_t step;
    int done = 0;
    enum mt_status st = MT_OK;

    *accepted = 0;
    for (step = 0; st == MT_OK && !done && step < r->p.max_steps; step++)
        st = react_step(r, rd, memory, &done);
    if (st == MT_OK && !rd->answer)
        mtx_run_event(r, MT_TRACE_ROUND,
                      json_pack("{s:s}", "rule",
                                "no final_mistake in this round: not "
                                "accepted"));
    if (st == MT_OK && rd->answer) {
        char *ans = dump(rd->answer);

        st = ans ? medeval(r, rd, ans, accepted) : MT_ENOMEM;
        mt_free(ans);
    }
    return st;
}

/* After M rejected rounds: "no error" (the paper's Figure 1, E), or with
 * --on-exhausted last-answer the last answer MedEval reviewed, through
 * MedFinalParser, as the published reflexion.py outputs it (its reported
 * 0.599 was scored so). Without any reviewed answer both give no error. */
static enum mt_status exhausted(struct run *r, json_t *last)
{
    char *ans;
    enum mt_status st;

    if (last && r->p.on_exhausted == MT_EXHAUSTED_LAST_ANSWER) {
        mtx_run_event(r, MT_TRACE_ROUNDS,
                      json_pack("{s:s}", "rule",
                                "no answer accepted in any round: the last "
                                "answer MedEval reviewed stands "
                                "(--on-exhausted last-answer, as the "
                                "published code)"));
        ans = dump(last);
        st = ans ? final_parser(r, last, ans) : MT_ENOMEM;
        mt_free(ans);
        return st;
    }
    /* MedEval rejecting every answer is the paper's "no error"; a round
     * that ended for want of a usable reply (a failed call or an unusable
     * one: MedReAct's step, or MedEval's reviews short of the quorum)
     * decided nothing, so the "no error" is then a fallback, not the
     * model's answer */
    r->fallback = r->down > 0 || r->undecided > 0;
    mtx_run_event(r, MT_TRACE_ROUNDS,
                  json_pack("{s:s}", "rule",
                            "no answer "
                            "accepted in any round: no error"));
    return mtx_run_verdict(r, 0, -1, NULL);
}

/* Keeps a copy of the round's answer when MedEval reviewed one. */
static enum mt_status keep_last(const struct round *rd, json_t **last)
{
    if (!rd->answer)
        return MT_OK;
    json_decref(*last);
    *last = json_deep_copy(rd->answer);
    return *last ? MT_OK : MT_ENOMEM;
}

/* Up to M rounds. After a rejected round MedReFlex reflects and its
 * lesson joins the memory of the next; after the M-th rejected round see
 * exhausted(). The published loop also calls MedReFlex after the M-th
 * round, whose lesson is never read; that call is skipped. */
enum mt_status mtx_strategy_react(struct run *r)
{
    struct mt_buf memory = MT_BUF_INIT(TEXT_MAX);
    struct round rd;
    json_t *last = NULL;
    uint32_t k;
    int accepted = 0;
    enum mt_status st = mtx_buf_reserve(&memory, 1);

    memset(&rd, 0, sizeof rd);
    if (st == MT_OK && !r->p.db_dir)
        mtx_run_event(r, MT_TRACE_RETRIEVAL,
                      json_pack("{s:s}", "rule",
                                "--no-retrieval: MedReAct runs without a "
                                "corpus, unlike the paper"));
    if (st == MT_OK)
        st = round_init(&rd);
    for (k = 0; st == MT_OK && k < r->p.max_rounds; k++) {
        st = react_round(r, &rd, memory.data, &accepted);
        if (st != MT_OK || accepted)
            break;
        st = keep_last(&rd, &last);
        if (st == MT_OK && k + 1 < r->p.max_rounds) {
            char *ans = dump(rd.answer);

            st = ans ? medreflex(r, &rd, ans, &memory, k) : MT_ENOMEM;
            mt_free(ans);
        }
        round_free(&rd);
        if (st == MT_OK)
            st = round_init(&rd);
    }
    if (st == MT_OK && accepted) {
        char *ans = dump(rd.answer);

        st = ans ? final_parser(r, rd.answer, ans) : MT_ENOMEM;
        mt_free(ans);
    } else if (st == MT_OK) {
        st = exhausted(r, last);
    }
    json_decref(last);
    round_free(&rd);
    mtx_buf_free(&memory);
    return st;
}
