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
#include <unistd.h>

#include <jansson.h>

#include "check/usage.h"
#include "cli/agent_opts.h"
#include "cli/mediqa.h"
#include "core/file.h"
#include "core/progress.h"
#include "medtrust/core.h"
#include "store/queue.h"

const char *mediqa_state_url(const struct cli_args *a, const char *what)
{
    const char *u = cli_get(a, "state");

    if (!u)
        u = getenv("MEDTRUST_STATE");
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

static char *note_payload(const struct mtx_note *x)
{
    json_t *o = json_pack("{s:s,s:s}", "id", x->id, "text", x->text);
    char *s;

    if (o && x->sents)
        json_object_set_new(o, "sentences", json_string(x->sents));
    s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

static enum mt_status submit_notes(struct mtx_pg *pg, const char *path,
                                   const char *opts, const struct mtx_note *v,
                                   size_t n, int64_t *run, struct mt_error *err)
{
    char **pl = mt_calloc(n ? n : 1, sizeof *pl);
    size_t i;
    enum mt_status st = pl ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");

    for (i = 0; st == MT_OK && i < n; i++)
        if (!(pl[i] = note_payload(&v[i]))) /* or out of memory */
            st = mt_fail(err, MT_EPARSE,
                         "%s: note %s (record %zu): a field is not valid "
                         "UTF-8",
                         path, v[i].id, i + 1);
    if (st == MT_OK)
        st = mtx_queue_submit(pg, "mediqa", opts, (const char *const *)pl, n,
                              run, err);
    for (i = 0; pl && i < n; i++)
        mt_free(pl[i]);
    mt_free(pl);
    return st;
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
        st = submit_notes(pg, cli_get(a, "data"), opts, v, n, &run, &err);
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

struct collect {
    struct mtx_note *notes; /* by job number; only id, line, failed */
    size_t n, got, failed, fallback;
    struct mt_check_usage total;
    FILE *trace;
};

static enum mt_status on_result(int64_t seq, const char *result, int failed,
                                void *user)
{
    struct collect *c = user;
    json_t *o = json_loads(result, 0, NULL);
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *line = json_string_value(json_object_get(o, "line"));
    const char *tr = json_string_value(json_object_get(o, "trace"));
    struct mtx_note *x;
    struct mt_check_usage u;

    if (!id || !line || seq < 0 || (size_t)seq >= c->n) {
        json_decref(o);
        return MT_EPARSE;
    }
    x = &c->notes[seq];
    x->id = mt_strdup(id);
    x->line = mt_strdup(line);
    x->failed = failed;
    mtx_check_usage_read(json_object_get(o, "usage"), &u);
    mtx_batch_usage_add(&c->total, &u);
    c->fallback += json_is_true(json_object_get(o, "fallback"));
    c->failed += (size_t)failed;
    c->got++;
    if (c->trace && tr)
        fprintf(c->trace, "%s\n", tr);
    json_decref(o);
    return x->id && x->line ? MT_OK : MT_ENOMEM;
}

/* Waits (showing done/total) until every job of the run is done. */
static enum mt_status wait_done(struct mtx_pg *pg, int64_t run, int wait,
                                int quiet, struct mtx_queue_counts *c,
                                struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_progress *bar = NULL;
    enum mt_status st = mtx_queue_counts(pg, run, NULL, c, err);

    pp.label = "collect";
    pp.total = st == MT_OK ? (uint64_t)c->total : 0;
    pp.quiet = quiet || !wait || (st == MT_OK && c->done == c->total);
    if (st == MT_OK && mtx_progress_new(&pp, &bar) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    while (st == MT_OK && c->done < c->total && wait) {
        mtx_progress_update(bar, (uint64_t)c->done);
        usleep(250 * 1000);
        st = mtx_queue_counts(pg, run, NULL, c, err);
    }
    if (st == MT_OK)
        mtx_progress_update(bar, (uint64_t)c->done);
    mtx_progress_finish(bar);
    mtx_progress_free(bar);
    if (st == MT_OK && c->done < c->total)
        st = mt_fail(err, MT_ENOTFOUND,
                     "run %lld is not finished: %lld of %lld notes done "
                     "(%lld queued, %lld running)",
                     (long long)run, (long long)c->done, (long long)c->total,
                     (long long)c->queued, (long long)c->running);
    return st;
}

static void collect_summary(const struct collect *c, int64_t run,
                            const struct mtx_queue_counts *k, int json)
{
    const struct mt_check_usage *u = &c->total;
    size_t i, shown = 0;

    fprintf(stderr,
            "mediqa: run %lld: %zu notes (%zu failed, %zu of them for a "
            "fallback verdict: no usable model reply); %u LLM calls (%u on "
            "critical paths), %u failed "
            "calls, %u unusable replies, %u role fallbacks; %lld jobs "
            "claimed again after a lease ran out\n",
            (long long)run, c->n, c->failed, c->fallback, u->llm_calls,
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

static enum mt_status collect_go(const struct cli_args *a, struct mtx_pg *pg,
                                 int64_t run, struct collect *c,
                                 struct mtx_queue_counts *k,
                                 struct mt_error *err)
{
    char *kind = NULL, *opts = NULL;
    const char *tp = cli_get(a, "trace");
    enum mt_status st = mtx_queue_run(pg, run, &kind, &opts, err);

    if (st == MT_OK && strcmp(kind, "mediqa") != 0)
        st = mt_fail(err, MT_EINVAL, "run %lld is a '%s' run, not mediqa",
                     (long long)run, kind);
    mt_free(kind);
    mt_free(opts);
    if (st == MT_OK)
        st = wait_done(pg, run, !cli_get(a, "no-wait"),
                       cli_get(a, "no-progress") != NULL, k, err);
    c->n = st == MT_OK ? (size_t)k->total : 0;
    if (st == MT_OK && !(c->notes = mt_calloc(c->n + 1, sizeof *c->notes)))
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK && tp && !(c->trace = mtx_file_fopen(tp, "w", 0644)))
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "--trace %s: cannot open: %s", tp, strerror(errno));
    if (st == MT_OK)
        st = mtx_queue_results(pg, run, on_result, c, err);
    if (st == MT_OK && c->got != c->n)
        st = mt_fail(err, MT_EDB, "run %lld: %zu of %zu results readable",
                     (long long)run, c->got, c->n);
    else if (st == MT_EPARSE || st == MT_ENOMEM)
        mt_fail(err, st, "run %lld: a job's result is unreadable",
                (long long)run);
    if (st == MT_OK && c->trace && mtx_file_flush_sync(c->trace, 0) != 0)
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "--trace %s: cannot write: %s", tp, strerror(errno));
    if (st == MT_OK)
        st = mtx_batch_notes_write(c->notes, c->n, cli_get(a, "out"),
                          cli_get(a, "fallback-on-failure") != NULL, err);
    return st;
}

static int collect(const struct cli_args *a, const char *url)
{
    struct collect c;
    struct mtx_queue_counts k;
    struct mtx_pg *pg = NULL;
    struct mt_error err = {MT_OK, ""};
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
        st = collect_go(a, pg, (int64_t)run, &c, &k, &err);
    if (st == MT_OK)
        collect_summary(&c, (int64_t)run, &k, cli_get(a, "json") != NULL);
    if (c.trace)
        fclose(c.trace);
    mtx_notes_free(c.notes, c.n);
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
