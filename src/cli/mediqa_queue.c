/* mediqa --state URL --enqueue: the notes of a MEDEC-format CSV become
 * jobs of one run in PostgreSQL, carrying the agent options given; any
 * number of `medtrust worker` processes check them. mediqa --state URL
 * --collect RUN waits for the run, then writes the submission exactly as a
 * one-machine run writes it: one line per note in CSV order, a failed
 * note left out unless --fallback-on-failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "batch/note_queue.h"
#include "cli/agent_opts.h"
#include "cli/mediqa.h"
#include "core/file.h"
#include "medtrust/core.h"
#include "medtrust/state.h"
#include "store/queue.h"

const char *mediqa_state_url(const struct cli_args *a, const char *what)
{
    const char *u = mt_state_url(cli_get(a, "state"));

    if (u && mtx_pg_is_url(u))
        return u;
    fprintf(stderr,
            "medtrust: %s needs --state postgresql://USER@HOST:PORT/DB (or "
            "MEDTRUST_STATE)%s%s%s\n",
            what, u ? ", not '" : "", u ? u : "", u ? "'" : "");
    return NULL;
}

/* ==== Enqueue ==== */

/* The agent options given, {"name": "value" | ["v1", ...] | true}. */
static json_t *given_options(const struct cli_args *a)
{
    json_t *o = json_object();
    const struct cli_opt *x;

    for (x = mediqa_agent_opts; o && x->name; x++) {
        size_t n = 0, i;
        const char **all = cli_get_all(a, x->name, &n);
        json_t *v;

        if (!n)
            continue;
        if (!cli_opt_arg(x))
            v = json_true();
        else if (!x->repeat)
            v = json_string(cli_get(a, x->name));
        else
            for (v = json_array(), i = 0; v && i < n; i++)
                json_array_append_new(v, json_string(all[i]));
        json_object_set_new(o, x->name, v);
    }
    return o;
}

static int enqueue(const struct cli_args *a, const char *url)
{
    struct mt_agent_params p;
    struct mtx_note *v = NULL;
    struct mtx_pg *pg = NULL;
    struct mt_error err = {MT_OK, ""};
    unsigned long limit = 0;
    json_t *o;
    char *opts = NULL;
    size_t n = 0;
    int64_t run = 0;
    enum mt_status st;

    if (agent_opts_read(a, &p) < 0 ||
        cli_get_uint(a, "limit", 1, 100000000, &limit) < 0)
        return 1;
    st = mtx_batch_notes_load(cli_get(a, "data"), limit, &v, &n, &err);
    o = st == MT_OK ? given_options(a) : NULL;
    opts = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (st == MT_OK && !opts)
        st = mt_fail(&err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = mtx_queue_open(url, &pg, &err);
    if (st == MT_OK)
        st = mtx_note_queue_submit(pg, cli_get(a, "data"), opts, v, n, &run,
                                   &err);
    if (st == MT_OK && cli_get(a, "json"))
        printf("{\"run\":%lld,\"notes\":%zu}\n", (long long)run, n);
    else if (st == MT_OK)
        printf("%lld\n", (long long)run);
    if (st == MT_OK)
        fprintf(stderr,
                "mediqa: run %lld: %zu notes queued; start workers "
                "(medtrust worker --state URL --db DIR), then mediqa --state "
                "URL --collect %lld --out FILE\n",
                (long long)run, n, (long long)run);
    mt_free(opts);
    mtx_pg_close(pg);
    mtx_notes_free(v, n);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

/* ==== Collect ==== */

static void collect_summary(const struct mtx_note_collect *c, int64_t run,
                            const struct mtx_queue_counts *k, int json)
{
    const struct mt_check_usage *u = &c->total;
    size_t i, shown = 0, fb_failed = 0;
    char fw[160];

    for (i = 0; i < c->n; i++)
        fb_failed += c->notes[i].fallback && c->notes[i].failed;
    mediqa_failed_words(fw, sizeof fw, c->failed, fb_failed,
                        c->fallback - fb_failed);
    fprintf(stderr,
            "mediqa: run %lld: %zu notes (%s%s); %u LLM calls (%u on "
            "critical paths), %u failed calls, %u unusable replies, %u role "
            "fallbacks; %lld jobs claimed again after a lease ran out\n",
            (long long)run, c->n, fw,
            c->fallback ? ": no usable model reply" : "", u->llm_calls,
            u->critical_calls, u->failed_calls, u->parse_failures, u->fallbacks,
            (long long)k->reclaimed);
    for (i = 0; c->failed && i < c->n; i++)
        if (c->notes[i].failed && shown++ < 50)
            fprintf(stderr, "%s %s", shown == 1 ? "mediqa: failed:" : "",
                    c->notes[i].id);
    if (c->failed)
        fputc('\n', stderr);
    if (json)
        printf("{\"run\":%lld,\"notes\":%zu,\"failed\":%zu,"
               "\"fallback_verdicts\":%zu,\"llm_calls\":%u,"
               "\"critical_calls\":%u,\"prompt_tokens\":%llu,"
               "\"completion_tokens\":%llu,\"failed_calls\":%u,"
               "\"parse_failures\":%u,\"fallbacks\":%u,\"reclaimed\":%lld}\n",
               (long long)run, c->n, c->failed, c->fallback, u->llm_calls,
               u->critical_calls, (unsigned long long)u->prompt_tokens,
               (unsigned long long)u->completion_tokens, u->failed_calls,
               u->parse_failures, u->fallbacks, (long long)k->reclaimed);
}

/* Waits for the run, reads its results (batch/note_queue.h) with the
 * traces to --trace, and writes the submission as mediqa does. */
static enum mt_status collect_go(const struct cli_args *a, struct mtx_pg *pg,
                                 int64_t run, struct mtx_note_collect *c,
                                 struct mtx_queue_counts *k, FILE **trace,
                                 struct mt_error *err)
{
    const char *tp = cli_get(a, "trace");
    enum mt_status st =
        mtx_note_queue_wait(pg, run, !cli_get(a, "no-wait"),
                            cli_get(a, "no-progress") != NULL, k, err);

    if (st == MT_OK && tp && !(*trace = mtx_file_fopen(tp, "w", 0644)))
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "--trace %s: cannot open: %s", tp, strerror(errno));
    if (st == MT_OK)
        st = mtx_note_queue_results(pg, run, (size_t)k->total, *trace, c, err);
    if (st == MT_OK && *trace && mtx_file_flush_sync(*trace, 0) != 0)
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "--trace %s: cannot write: %s", tp, strerror(errno));
    if (st == MT_OK)
        st = mtx_batch_notes_write(c->notes, c->n, cli_get(a, "out"),
                                   cli_get(a, "fallback-on-failure") != NULL,
                                   err);
    return st;
}

static int collect(const struct cli_args *a, const char *url)
{
    struct mtx_note_collect c;
    struct mtx_queue_counts k;
    struct mtx_pg *pg = NULL;
    struct mt_error err = {MT_OK, ""};
    FILE *trace = NULL;
    char *end;
    long long run = strtoll(cli_get(a, "collect"), &end, 10);
    enum mt_status st;

    memset(&c, 0, sizeof c);
    memset(&k, 0, sizeof k);
    if (*end || run <= 0) {
        fprintf(stderr, "medtrust mediqa: --collect takes a run number (what "
                        "--enqueue printed)\n");
        return 1;
    }
    st = mtx_queue_open(url, &pg, &err);
    if (st == MT_OK)
        st = collect_go(a, pg, (int64_t)run, &c, &k, &trace, &err);
    if (st == MT_OK)
        collect_summary(&c, (int64_t)run, &k, cli_get(a, "json") != NULL);
    if (trace)
        fclose(trace);
    mtx_note_collect_free(&c);
    mtx_pg_close(pg);
    if (st != MT_OK)
        return cli_fail(&err, st);
    return c.failed ? 1 : 0;
}

int mediqa_queue_main(const struct cli_args *a)
{
    const char *enq = cli_get(a, "enqueue");
    const char *col = cli_get(a, "collect");
    const char *url = mediqa_state_url(a, enq ? "--enqueue" : "--collect");

    if (!url)
        return 1;
    if (enq && col) {
        fprintf(stderr, "medtrust mediqa: --enqueue and --collect are two "
                        "steps: give one\n");
        return 1;
    }
    if (enq &&
        (!cli_get(a, "data") || cli_get(a, "out") || cli_get(a, "resume"))) {
        fprintf(stderr, "medtrust mediqa: --enqueue takes --data FILE.csv "
                        "(and no --out or --resume: --collect writes the "
                        "submission)\n");
        return 1;
    }
    if (col && (!cli_get(a, "out") || cli_get(a, "data"))) {
        fprintf(stderr, "medtrust mediqa: --collect RUN takes --out FILE "
                        "(the notes are in the run)\n");
        return 1;
    }
    return enq ? enqueue(a, url) : collect(a, url);
}
