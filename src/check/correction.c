/* Every correction verified (issue 32): after a check proposes one, the
 * caller's verifier (mt_agent_params.verify_correction) judges the
 * corrected and the erroneous sentence against the documents the run
 * retrieved (react-reflex's searches, read back from the trace: each
 * "search" step's "hits"), or searches itself (guards, single). Its object
 * becomes the result's correction_evidence and a trace step. */
#include <string.h>

#include "check/agent_int.h"
#include "medtrust/core.h"

/* The hit lists of the run's searches, in order (each "search" step's
 * "hits": document ids, best first). */
static size_t collect(json_t *trace, json_t **hits, size_t max)
{
    json_t *rec;
    size_t i, n = 0;

    json_array_foreach(trace, i, rec)
    {
        const char *step = json_string_value(json_object_get(rec, "step"));
        json_t *h = json_object_get(rec, "hits");

        if (step && strcmp(step, "search") == 0 && json_is_array(h) &&
            json_array_size(h) > 0 && n < max)
            hits[n++] = h;
    }
    return n;
}

static int seen(const struct mt_check_passage *v, size_t n, const char *id)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(v[i].id, id) == 0)
            return 1;
    return 0;
}

/* Up to MT_CHECK_VERIFY_PASSAGES distinct documents, rank 1 of each
 * search first, then rank 2, ... */
static size_t pick(json_t *const *hits, size_t nh, struct mt_check_passage *v)
{
    size_t rank, i, n = 0;
    int more = 1;

    for (rank = 0; more && n < MT_CHECK_VERIFY_PASSAGES; rank++) {
        more = 0;
        for (i = 0; i < nh && n < MT_CHECK_VERIFY_PASSAGES; i++) {
            const char *id = json_string_value(json_array_get(hits[i], rank));

            more |= rank + 1 < json_array_size(hits[i]);
            if (id && !seen(v, n, id))
                v[n++] = (struct mt_check_passage){id, NULL};
        }
    }
    return n;
}

enum mt_status mtx_check_verify_correction(struct run *r, char **out)
{
    struct mt_check_passage v[MT_CHECK_VERIFY_PASSAGES];
    json_t *hits[64];
    struct mt_error err = {MT_OK, ""};
    char *orig = mt_strndup(r->sents[r->sid].p, r->sents[r->sid].n);
    json_t *o = NULL;
    size_t n = pick(hits, collect(r->trace, hits, 64), v);
    enum mt_status st;

    *out = NULL;
    if (!orig)
        return MT_ENOMEM;
    st = r->a->p.verify_correction(r->a->p.verify_correction_user, r->corr,
                                   orig, v, n, out, &err);
    mt_free(orig);
    if (st == MT_OK && *out)
        o = json_loads(*out, 0, NULL);
    if (st == MT_ENOMEM)
        return st;
    if (!o) { /* the verdict stands; the trace says why it is unverified */
        mt_free(*out);
        *out = NULL;
        o = json_pack("{s:s}", "error",
                      err.msg[0] ? err.msg : "the verifier gave no object");
    }
    json_object_set_new(o, "passages", json_integer((json_int_t)n));
    mtx_run_event(r, MT_TRACE_CORRECTION_EVIDENCE, o);
    return MT_OK;
}
