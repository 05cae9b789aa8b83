/* medtrust check: one clinical note (a file or stdin) through a checker
 * strategy; prints the verdict as text or, with --json, with its trace. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/agent_opts.h"
#include "cli/correction.h"
#include "cli/search_opts.h"
#include "core/buf.h"
#include "medtrust/core.h"

#define READ_MAX ((size_t)64 << 20)

static const struct cli_opt check_opts[] = {
    AGENT_OPTS,
    CLI_META_FILTER_OPTS, /* react-reflex's searches, as POST /v1/check's */
    CORRECTION_OPTS,
    {"json", 'j', NULL, "print the result and its trace as one JSON object", 0},
    {NULL, 0, NULL, NULL, 0},
};

/* Reads 'path' ("-" for stdin) whole; the agent enforces the note limit. */
static enum mt_status read_note(const char *path, struct mt_buf *b,
                                struct mt_error *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char chunk[65536];
    size_t k;
    enum mt_status st = MT_OK;

    if (!f)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    while (st == MT_OK && (k = fread(chunk, 1, sizeof chunk, f)) > 0)
        st = mtx_buf_append(b, chunk, k);
    if (st == MT_OK && ferror(f))
        st = mt_fail(err, MT_EIO, "%s: read error", path);
    else if (st != MT_OK)
        mt_fail(err, st, "%s: larger than %zu bytes", path, READ_MAX);
    if (f != stdin)
        fclose(f);
    return st == MT_OK ? mtx_buf_reserve(b, 1) : st;
}

/* The correction's evidence (--verify-correction): both verdicts. */
static void print_evidence(const char *ce)
{
    json_t *o = ce ? json_loads(ce, 0, NULL) : NULL;

    if (o)
        printf("evidence (%s): the correction %s, the original %s%s\n",
               json_string_value(json_object_get(o, "source")),
               json_string_value(json_object_get(o, "verdict_corrected")),
               json_string_value(json_object_get(o, "verdict_original")),
               json_is_true(json_object_get(o, "strongest"))
                   ? " (the strongest case)"
                   : "");
    json_decref(o);
}

/* A fallback verdict the user allowed (--allow-fallbacks): marked as no
 * answer of the model's, then what the strategy fell back to. */
static void print_fallback(const struct mt_check_result *r)
{
    printf("fallback: no model answer (allowed by --allow-fallbacks)\n  %s\n",
           r->fallback_why ? r->fallback_why : "fallback verdict");
    if (!r->error_flag)
        printf("fallback verdict: no error flagged (the strategy's default, "
               "not a finding)\n");
    else if (r->sentence_id < 0)
        printf("fallback verdict: an error flagged, no sentence located\n");
    else
        printf("fallback verdict: sentence %d flagged\n  %s\ncorrection "
               "(the fallback's):\n  %s\n",
               r->sentence_id, r->error_sentence, r->corrected_sentence);
}

/* The verdict in words; 'failed': the check failed (MT_EMODEL) with a
 * fallback verdict in r. */
static void print_text(const struct mt_check_result *r, int failed)
{
    const struct mt_check_usage *u = &r->usage;

    if (r->fallback && failed) /* no answer: never "no error found" */
        printf("check failed: no verdict from the model\n  %s\n",
               r->fallback_why ? r->fallback_why : "fallback verdict");
    else if (r->fallback)
        print_fallback(r);
    else if (r->error_flag && r->sentence_id < 0)
        printf("error detected, but no sentence located (no correction)\n");
    else if (r->error_flag)
        printf("error: sentence %d\n  %s\ncorrection:\n  %s\n", r->sentence_id,
               r->error_sentence, r->corrected_sentence);
    else
        printf("no error found\n");
    print_evidence(r->correction_evidence);
    printf("strategy %s: %u LLM calls, %llu prompt + %llu completion "
           "tokens%s%s\n",
           mt_strategy_str(r->strategy), u->llm_calls,
           (unsigned long long)u->prompt_tokens,
           (unsigned long long)u->completion_tokens,
           u->estimated_calls ? " (estimated: no usage from the server)" : "",
           r->fallback ? " (the trace, with --json, shows each call)" : "");
}

/* The result as JSON, with "error" first when the check failed. */
static char *result_json(const struct mt_check_result *r,
                         const struct mt_error *err, int failed)
{
    char *js = mt_check_result_json(r, 1);
    json_t *o = failed && js ? json_loads(js, 0, NULL) : NULL;
    json_t *e = o ? json_pack("{s:s}", "error", err->msg) : NULL;

    if (e && json_object_update(e, o) == 0) {
        mt_free(js);
        js = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
    json_decref(o);
    json_decref(e);
    return js;
}

static enum mt_status check_one(const struct cli_args *a, struct mt_agent *ag,
                                struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT(READ_MAX);
    struct mt_check_result r;
    struct mt_note n = {a->pos[0], NULL, 0, NULL, 0, NULL, 0, NULL, 0};
    struct mt_meta_cond c[3];
    enum mt_status st = read_note(a->pos[0], &b, err);
    char *js;

    memset(&r, 0, sizeof r);
    n.text = b.data;
    n.text_len = b.len;
    n.nmeta = mt_search_pubmed_conds(
        cli_get(a, "author"), cli_get(a, "journal"), cli_get(a, "pub-type"), c);
    n.meta = n.nmeta ? c : NULL;
    if (st == MT_OK)
        st = mt_agent_check(ag, &n, &r, err);
    /* MT_EMODEL: no verdict of the model's (it failed, or its replies
     * were unusable): the failure is shown, and the exit status is 1 */
    if ((st == MT_OK || st == MT_EMODEL) && cli_get(a, "json")) {
        js = result_json(&r, err, st != MT_OK);
        if (js)
            printf("%s\n", js);
        if (!js)
            st = mt_fail(err, MT_ENOMEM, "out of memory");
        mt_free(js);
    } else if (st == MT_OK || st == MT_EMODEL) {
        print_text(&r, st != MT_OK);
    }
    mt_check_result_free(&r);
    mtx_buf_free(&b);
    return st;
}

static int check_run(struct cli_args *a)
{
    struct mt_agent_params p;
    struct mt_agent *ag = NULL;
    struct mt_qa *vq = NULL; /* the correction's verifier */
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    if (agent_opts_read(a, &p) < 0)
        return 1;
    if (a->npos != 1) {
        fprintf(stderr, "medtrust check: give one FILE (or - for stdin)\n"
                        "Try 'medtrust check --help'.\n");
        return 1;
    }
    st = correction_open(a, &p, &vq, &err);
    if (st == MT_OK)
        st = mt_agent_open(&p, &ag, &err);
    if (st == MT_OK)
        st = check_one(a, ag, &err);
    mt_agent_close(ag);
    mt_qa_close(vq);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_check = {
    "check",
    "find and correct a medical error in a clinical note",
    "[OPTIONS] FILE|-",
    "Splits the note into sentences (ids from 0, as in MEDEC) and runs the\n"
    "strategy (above). Each role's model is MEDTRUST_LLM_<ROLE> (the\n"
    "strategy's roles), else --llm or MEDTRUST_LLM.\n"
    "--json prints {\"error_flag\",\"error_sentence_id\",\"error_sentence\",\n"
    "\"corrected_sentence\",\"corrected_text\",\"strategy\",\"usage\",\n"
    "\"trace\"}. A model that fails or answers garbage gets one repeat,\n"
    "then the role's fallback (docs/agents.md); the trace says which. When\n"
    "the verdict itself would be a fallback (no usable reply decided it),\n"
    "the check fails: it prints \"check failed\" and why (--json: \"error\",\n"
    "\"fallback\": true, \"fallback_why\") and exits 1. With\n"
    "--allow-fallbacks it prints \"fallback: no model answer\", why, and\n"
    "the fallback verdict (--json: \"fallback\": true, \"fallback_why\", no\n"
    "\"error\") and exits 0: never \"no error found\".\n"
    "--verify-correction (on by default when --nli or MEDTRUST_NLI names\n"
    "a verifier) judges the corrected and the erroneous sentence against\n"
    "the passages react-reflex retrieved (guards, single: a search of\n"
    "--db for the correction), as `medtrust verify` judges a claim, and\n"
    "adds \"correction_evidence\": {\"verdict_corrected\",\n"
    "\"verdict_original\",\"strongest\",\"source\",\"evidence\"} to the\n"
    "result and a step to the trace. The submission format is unchanged.",
    check_opts,
    check_run,
};
