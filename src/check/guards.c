/* MedGuards: two detection agents and an arbiter, two localisation agents
 * and an arbiter, one correction agent. Confidence decides when an
 * arbiter's reply is unusable: the more confident agent wins (see
 * docs/agents.md for every rule). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "check/agent_int.h"
#include "check/strategy.h"
#include "check/verdict.h"
#include "check/match.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"

#define DEFAULT_CONF 0.5
#define DESC_MAX 4096

/* One agent's opinion: a verdict (1 = INCORRECT) or a sentence id. */
struct opinion {
    int value;
    double conf;
    const char *reasoning;
    const char *quote;
};

static double conf_of(const json_t *o)
{
    double c;

    return mtx_reply_conf(o, "confidence", &c) == 0 ? c : DEFAULT_CONF;
}

static int read_detect(const json_t *o, struct opinion *d, char *why, size_t n)
{
    const char *v = mtx_reply_str(o, "verdict");

    if (!v ||
        (strcasecmp(v, "CORRECT") != 0 && strcasecmp(v, "INCORRECT") != 0)) {
        snprintf(why, n,
                 "\"verdict\" must be \"CORRECT\" or "
                 "\"INCORRECT\"");
        return -1;
    }
    d->value = strcasecmp(v, "INCORRECT") == 0;
    d->conf = conf_of(o);
    d->reasoning = mtx_reply_str(o, "reasoning");
    return 0;
}

static int read_locate(struct run *r, const json_t *o, struct opinion *d,
                       char *why, size_t n)
{
    const char *q = mtx_reply_str(o, "sentence");
    double best = 0;
    struct mt_str t = mtx_str_trim(mtx_str_from(q ? q : ""));

    if (!q) {
        snprintf(why, n, "\"sentence\" is missing");
        return -1;
    }
    d->conf = conf_of(o);
    d->reasoning = mtx_reply_str(o, "reasoning");
    d->quote = q;
    if (t.n == 4 && strncasecmp(t.p, "NONE", 4) == 0) {
        d->value = -1;
        return 0;
    }
    d->value = mtx_match_sentence(t, r->sents, r->nsents, MT_MATCH_MIN, &best);
    if (d->value < 0) {
        snprintf(why, n,
                 "the quoted sentence matches no sentence of the "
                 "note (best similarity %.2f): quote one sentence "
                 "verbatim, or NONE",
                 best);
        return -1;
    }
    return 0;
}

static int check_detect(struct run *r, json_t *o, void *u, char *why, size_t n)
{
    struct opinion d;

    (void)r;
    (void)u;
    return read_detect(o, &d, why, n);
}

static int check_locate(struct run *r, json_t *o, void *u, char *why, size_t n)
{
    struct opinion d;

    (void)u;
    return read_locate(r, o, &d, why, n);
}

static int check_correct(struct run *r, json_t *o, void *u, char *why, size_t n)
{
    const char *c = mtx_reply_str(o, "corrected_sentence");

    (void)r;
    (void)u;
    if (c && mtx_str_trim(mtx_str_from(c)).n > 0)
        return 0;
    snprintf(why, n, "\"corrected_sentence\" is missing or empty");
    return -1;
}

/* A guard's call: mtx_call_init's, at the guards' temperature, and a
 * note longer than the context fails (never cut). */
static void guard_call(struct call *c, const char *prompt, reply_check_fn check,
                       const char *const *keys, const char *const *vals,
                       size_t nvars, float temp)
{
    mtx_call_init(c, ROLE_GUARD, prompt, check, keys, vals, nvars);
    c->temperature = temp;
    c->fit = mtx_fit_whole;
}

/* Reads the opinion of a finished call; -1 when it has none. */
static int opinion_of(struct run *r, const struct call *c, int locate,
                      struct opinion *d)
{
    char why[8];
    json_t *o = mtx_call_obj(c);

    memset(d, 0, sizeof *d);
    if (!o)
        return -1;
    return locate ? read_locate(r, o, d, why, sizeof why)
                  : read_detect(o, d, why, sizeof why);
}

static void describe(char *buf, size_t n, const struct opinion *d, int has,
                     int locate)
{
    /* reasoning, then the decision, then the confidence, in the order
     * the agent wrote them (MedGuards' chain-of-thought decomposition) */
    if (!has) /* MedGuards shows the arbiter the failed agent's "ERROR" */
        snprintf(buf, n, "ERROR: this reviewer gave no usable answer.");
    else if (locate)
        snprintf(buf, n,
                 "Reasoning: %s Sentence: %d \"%s\". Confidence: "
                 "%.2f.",
                 d->reasoning ? d->reasoning : "(none)", d->value,
                 d->quote ? d->quote : "NONE", d->conf);
    else
        snprintf(buf, n, "Reasoning: %s Verdict: %s. Confidence: %.2f.",
                 d->reasoning ? d->reasoning : "(none)",
                 d->value ? "INCORRECT" : "CORRECT", d->conf);
}

/* ==== Stages ==== */

struct stage {
    int locate;
    const char *p1;
    const char *p2;
    const char *arbiter;
    reply_check_fn check;
};

static const struct stage detect_stage = {
    0, "guard_detect_1", "guard_detect_2", "guard_detect_arbiter", check_detect,
};
static const struct stage locate_stage = {
    1, "guard_locate_1", "guard_locate_2", "guard_locate_arbiter", check_locate,
};

/* The arbiter's fallback when its reply is unusable: the one agent that
 * answered, else the more confident agent (on a tie: the INCORRECT
 * verdict, or agent 1's sentence). */
static void no_arbiter(const struct stage *s, const struct opinion *d,
                       const int *has, int *out, const char **rule)
{
    if (!has[0] || !has[1]) {
        *out = has[0] ? d[0].value : d[1].value;
        *rule = "one agent failed and the arbiter's reply was unusable: "
                "the other's answer stands";
    } else if (d[0].conf != d[1].conf) {
        *out = d[0].conf > d[1].conf ? d[0].value : d[1].value;
        *rule = "arbiter unusable: the more confident agent wins";
    } else {
        *out = s->locate ? d[0].value : 1;
        *rule = s->locate ? "arbiter unusable, equal confidence: agent 1"
                          : "arbiter unusable, equal confidence: INCORRECT";
    }
}

/* The disagreement, or one agent's failure (MedGuards arbitrates both:
 * a failed call's "ERROR"/"UNKNOWN" never agrees): the arbiter sees both
 * opinions and confidences, a failed agent's as ERROR. */
static enum mt_status arbitrate(struct run *r, const struct stage *s,
                                const struct opinion *d, const int *has,
                                int *out, const char **rule)
{
    static const char *const keys[] = {"SENTENCES", "AGENT1", "AGENT2"};
    char *desc = mt_malloc(2 * DESC_MAX);
    const char *vals[3];
    struct opinion da;
    struct call c;
    enum mt_status st;

    if (!desc)
        return MT_ENOMEM;
    vals[0] = r->block;
    vals[1] = desc;
    vals[2] = desc + DESC_MAX;
    describe(desc, DESC_MAX, &d[0], has[0], s->locate);
    describe(desc + DESC_MAX, DESC_MAX, &d[1], has[1], s->locate);
    guard_call(&c, s->arbiter, s->check, keys, vals, 3, r->p.temperature);
    st = mtx_call_do(r, &c);
    if (st == MT_OK && opinion_of(r, &c, s->locate, &da) == 0) {
        *out = da.value;
        *rule = has[0] && has[1] ? "the arbiter decided"
                                 : "one agent failed: the arbiter decided";
    } else {
        no_arbiter(s, d, has, out, rule);
    }
    mtx_call_free(&c);
    mt_free(desc);
    return st;
}

static enum mt_status decide(struct run *r, const struct stage *s,
                             const struct opinion *d, const int *has, int *out,
                             const char **rule)
{
    if (!has[0] && !has[1]) {
        *out = s->locate ? -1 : 0;
        *rule = "both agents failed: no error";
        r->fallback = 1; /* run_stage says why */
        return MT_OK;
    }
    if (has[0] && has[1] && d[0].value == d[1].value) {
        *out = d[0].value;
        *rule = "the agents agree";
        return MT_OK;
    }
    return arbitrate(r, s, d, has, out, rule);
}

static json_t *opinion_json(const struct opinion *d, int has)
{
    return has ? json_pack("{s:i,s:f}", "value", d->value, "confidence",
                           d->conf)
               : json_null();
}

/* Runs both agents of a stage at once, then decides. */
static enum mt_status run_stage(struct run *r, const struct stage *s, int *out)
{
    static const char *const keys[] = {"SENTENCES"};
    const char *vals[1] = {r->block};
    struct call c[2];
    struct opinion d[2];
    int has[2];
    const char *rule = "";
    enum mt_status st;

    guard_call(&c[0], s->p1, s->check, keys, vals, 1, r->p.temperature);
    guard_call(&c[1], s->p2, s->check, keys, vals, 1, r->p.temperature);
    st = mtx_call_pair(r, &c[0], &c[1]);
    has[0] = opinion_of(r, &c[0], s->locate, &d[0]) == 0;
    has[1] = opinion_of(r, &c[1], s->locate, &d[1]) == 0;
    if (st == MT_OK)
        st = decide(r, s, d, has, out, &rule);
    if (st == MT_OK && !has[0] && !has[1])
        mtx_run_no_answer(r,
                          s->locate ? "guard_locate (both agents)"
                                    : "guard_detect (both agents)",
                          c[1].why[0] ? c[1].why : c[0].why, 1);
    if (st == MT_OK)
        mtx_run_event(
            r, s->locate ? MT_TRACE_GUARDS_LOCATE : MT_TRACE_GUARDS_DETECT,
            json_pack("{s:o,s:o,s:i,s:s}", "agent1",
                      opinion_json(&d[0], has[0]), "agent2",
                      opinion_json(&d[1], has[1]), "decision", *out, "rule",
                      rule));
    mtx_call_free(&c[0]);
    mtx_call_free(&c[1]);
    return st;
}

static enum mt_status correct(struct run *r, int sid)
{
    static const char *const keys[] = {"SENTENCES", "ID", "SENTENCE"};
    char id[24];
    char *sent = mt_strndup(r->sents[sid].p, r->sents[sid].n);
    const char *vals[3] = {r->block, id, sent};
    struct call c;
    enum mt_status st;

    if (!sent)
        return MT_ENOMEM;
    snprintf(id, sizeof id, "%d", sid);
    guard_call(&c, "guard_correct", check_correct, keys, vals, 3,
               r->p.temperature);
    st = mtx_call_do(r, &c);
    if (st == MT_OK && c.ok) {
        st = mtx_run_verdict(
            r, 1, sid, mtx_reply_str(mtx_call_obj(&c), "corrected_sentence"));
    } else if (st == MT_OK) {
        mtx_run_no_answer(r, "guard_correct", c.why, 1);
        mtx_run_event(r, MT_TRACE_FALLBACK,
                      json_pack("{s:s,s:s}", "role", "guard_correct", "rule",
                                "no usable correction: the "
                                "sentence is kept as it stands"));
        st = mtx_run_verdict(r, 1, sid, sent);
    }
    mtx_call_free(&c);
    mt_free(sent);
    return st;
}

enum mt_status mtx_strategy_guards(struct run *r)
{
    int verdict = 0;
    int sid = -1;
    enum mt_status st = run_stage(r, &detect_stage, &verdict);

    if (st == MT_OK && verdict)
        st = run_stage(r, &locate_stage, &sid);
    if (st != MT_OK)
        return st;
    if (verdict && sid < 0 && !r->fallback) {
        /* Detection said INCORRECT, localisation answered NONE: the
         * published code (Doubao_MedGuards.py) keeps flag 1 with no
         * sentence, written `ID 1 -1 NA` (see docs/agents.md for how the
         * official scorer counts that line). */
        mtx_run_verdict_unlocated(r); /* the verdict event records it */
        return MT_OK;
    }
    if (!verdict || sid < 0)
        return mtx_run_verdict(r, 0, -1, NULL);
    return correct(r, sid);
}
