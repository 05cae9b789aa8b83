/* What a sweep reads back from a run's trace (mediqa --trace): the last
 * line of every note, its model calls, searches and MedEval rounds. */
#include <stdio.h>
#include <string.h>

#include "batch/sweep.h"
#include "medtrust/check.h"
#include "medtrust/core.h"

/* ==== Reading the trace file ==== */

/* Whether line o's "trace_version" is one this medtrust reads: absent
 * (version 1, written before the format had one) up to MT_TRACE_VERSION;
 * the sweep's statistics read keys every version has. */
static int version_readable(json_t *o)
{
    json_t *v = json_object_get(o, "trace_version");

    return !v || (json_is_integer(v) && json_integer_value(v) >= 1 &&
                  json_integer_value(v) <= MT_TRACE_VERSION);
}

/* {"ID": line object}: the last line of each note wins (a resumed run
 * appends the notes it checked again). */
enum mt_status mtx_sweep_trace_load(const char *path, json_t **out,
                                    struct mt_error *err)
{
    FILE *f = fopen(path, "r");
    json_t *notes = json_object();
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    enum mt_status st = MT_OK;

    if (!f || !notes) {
        json_decref(notes);
        if (f)
            fclose(f);
        return mt_fail(err, MT_EIO, "%s: cannot open the trace", path);
    }
    while (st == MT_OK && getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *o;
        const char *id;

        lineno++;
        o = json_loads(line, 0, &je);
        id = json_string_value(json_object_get(o, "id"));
        if (!o || !id)
            st = mt_fail(err, MT_EPARSE, "%s:%zu: not a trace line (%s)", path,
                         lineno, o ? "no \"id\"" : je.text);
        else if (!version_readable(o))
            st = mt_fail(err, MT_EPARSE,
                         "%s:%zu: trace version %s: this medtrust reads "
                         "versions 1 to %d; use the medtrust that wrote it",
                         path, lineno,
                         json_is_integer(json_object_get(o, "trace_version"))
                             ? "newer"
                             : "not a number",
                         MT_TRACE_VERSION);
        else
            json_object_set(notes, id, o);
        json_decref(o);
    }
    free(line);
    fclose(f);
    if (st != MT_OK)
        json_decref(notes);
    else
        *out = notes;
    return st;
}

/* ==== Statistics ==== */

struct tally {
    double react, reflex, searches, search_ms, react_ms;
    json_int_t calls, failed;
    json_t *by_role; /* role -> {"calls","prompt","completion","estimated"} */
    json_t *sources; /* source -> hits shown to MedReAct */
};

static void add_int(json_t *o, const char *key, json_int_t v)
{
    json_t *c = json_object_get(o, key);

    json_object_set_new(o, key, json_integer(json_integer_value(c) + v));
}

static void tally_call(struct tally *t, const json_t *ev)
{
    const char *role = json_string_value(json_object_get(ev, "role"));
    const char *how = json_string_value(json_object_get(ev, "tokens"));
    json_t *r;

    if (!role)
        return;
    r = json_object_get(t->by_role, role);
    if (!r) {
        r = json_pack("{s:I,s:I,s:I,s:b}", "calls", (json_int_t)0, "prompt",
                      (json_int_t)0, "completion", (json_int_t)0, "estimated",
                      0);
        json_object_set_new(t->by_role, role, r);
    }
    t->calls++;
    add_int(r, "calls", 1);
    add_int(r, "prompt",
            json_integer_value(json_object_get(ev, "prompt_tokens")));
    add_int(r, "completion",
            json_integer_value(json_object_get(ev, "completion_tokens")));
    if (how && strcmp(how, "estimated") == 0)
        json_object_set_new(r, "estimated", json_true());
    if (json_integer_value(json_object_get(ev, "attempt")) != 1)
        return;
    if (strcmp(role, "react") == 0) {
        t->react += 1;
        t->react_ms += (double)json_integer_value(json_object_get(ev, "ms"));
    } else if (strcmp(role, "reflect") == 0)
        t->reflex += 1;
}

static void tally_search(struct tally *t, const json_t *ev)
{
    const json_t *src = json_object_get(ev, "hit_sources");
    size_t i;

    t->searches += 1;
    t->search_ms += json_number_value(json_object_get(ev, "ms"));
    for (i = 0; i < json_array_size(src); i++) {
        const char *s = json_string_value(json_array_get(src, i));

        add_int(t->sources, s && *s ? s : "(none)", 1);
    }
}

static void tally_note(struct tally *t, const json_t *line)
{
    const json_t *tr = json_object_get(line, "trace");
    size_t i;

    if (json_object_get(line, "error"))
        t->failed++;
    for (i = 0; i < json_array_size(tr); i++) {
        const json_t *ev = json_array_get(tr, i);
        const char *step = json_string_value(json_object_get(ev, "step"));

        if (step && strcmp(step, "call") == 0)
            tally_call(t, ev);
        else if (step && strcmp(step, "search") == 0)
            tally_search(t, ev);
    }
}

static double per(double v, double n)
{
    return n > 0 ? v / n : 0;
}

enum mt_status mtx_sweep_trace_stats(const char *trace_path, json_t **out,
                                     struct mt_error *err)
{
    struct tally t;
    json_t *notes = NULL, *v;
    const char *id;
    double n;
    enum mt_status st = mtx_sweep_trace_load(trace_path, &notes, err);

    if (st != MT_OK)
        return st;
    memset(&t, 0, sizeof t);
    t.by_role = json_object();
    t.sources = json_object();
    json_object_foreach(notes, id, v)
    {
        tally_note(&t, v);
    }
    n = (double)json_object_size(notes);
    /* A MedReAct step is its model call and, when it searched, the
     * search; Fig. 3 of the IryoNLP paper plots this against top-k. */
    *out = json_pack(
        "{s:I,s:f,s:f,s:f,s:f,s:I,s:I,s:o,s:o}", "notes", (json_int_t)n,
        "react_turns", per(t.react, n), "reflex_turns", per(t.reflex, n),
        "step_ms", per(t.react_ms + t.search_ms, t.react), "search_ms",
        per(t.search_ms, t.searches), "calls", t.calls, "failed_notes",
        t.failed, "tokens_by_role", t.by_role, "sources", t.sources);
    json_decref(notes);
    return *out ? MT_OK : MT_ENOMEM;
}

/* ==== MedEval rounds and replay ==== */

enum mt_status mtx_sweep_trace_rounds(const char *trace_path, json_t **out,
                                      struct mt_error *err)
{
    json_t *notes = NULL, *line, *rounds = json_object();
    const char *id;
    enum mt_status st = mtx_sweep_trace_load(trace_path, &notes, err);

    if (st != MT_OK) {
        json_decref(rounds);
        return st;
    }
    json_object_foreach(notes, id, line)
    {
        const json_t *tr = json_object_get(line, "trace");
        json_t *a = json_array();
        size_t i;

        for (i = 0; i < json_array_size(tr); i++) {
            json_t *ev = json_array_get(tr, i);
            const char *step = json_string_value(json_object_get(ev, "step"));

            if (step && strcmp(step, "medeval") == 0)
                json_array_append(a, ev);
        }
        json_object_set_new(rounds, id, a);
    }
    json_decref(notes);
    *out = rounds;
    return MT_OK;
}

int mtx_sweep_rounds_replayable(const json_t *rounds, double mean_min,
                                double min_min)
{
    size_t i, j;

    for (i = 0; i < json_array_size(rounds); i++) {
        const json_t *ev = json_array_get(rounds, i);
        const json_t *fa = json_object_get(ev, "finals");
        int finals[64], mn;
        size_t n = json_array_size(fa) < 64 ? json_array_size(fa) : 64;
        double mean;

        for (j = 0; j < n; j++)
            finals[j] = (int)json_integer_value(json_array_get(fa, j));
        if (mt_medeval_accept(finals, n, mean_min, min_min, &mean, &mn) !=
            json_is_true(json_object_get(ev, "accepted")))
            return 0;
    }
    return 1;
}
