/* One note of a batch: the MEDEC-format CSV read into notes, one note
 * checked into its submission and trace lines, and the submission written
 * (batch/note.h). */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "batch/journal.h"
#include "batch/note.h"
#include "core/buf.h"
#include "core/csv.h"
#include "medtrust/core.h"

/* ==== Loading ==== */

/* Reads the notes of an open CSV called 'name', at most 'limit' (0 =
 * all); a CSV without Text ID or Text is MT_EPARSE naming them. */
static enum mt_status notes_read(struct mt_csv *c, const char *name,
                                 size_t limit, struct mtx_note **out, size_t *n,
                                 struct mt_error *err)
{
    long col[3];
    enum mt_status st = MT_OK;

    if (!mtx_notes_columns(c, col, &st, err) && st == MT_OK)
        st = mt_fail(err, MT_EPARSE,
                     "%s: missing column%s%s%s (a "
                     "MEDEC-format CSV needs Text ID and Text)",
                     name, col[0] < 0 && col[1] < 0 ? "s" : "",
                     col[0] < 0 ? " 'Text ID'" : "",
                     col[1] < 0 ? " 'Text'" : "");
    if (st == MT_OK)
        st = mtx_notes_read(c, name, col, limit, out, n, err);
    return st;
}

enum mt_status mtx_batch_notes_load(const char *path, size_t limit,
                                    struct mtx_note **out, size_t *n,
                                    struct mt_error *err)
{
    struct mt_csv *c = NULL;
    enum mt_status st = mtx_csv_open(path, NULL, &c, err);

    *n = 0;
    if (st == MT_OK)
        st = notes_read(c, path, limit, out, n, err);
    mtx_csv_close(c);
    return st;
}

enum mt_status mtx_batch_notes_load_text(const char *name, const char *text,
                                         size_t len, size_t max,
                                         struct mtx_note **out, size_t *n,
                                         struct mt_error *err)
{
    struct mt_csv *c = NULL;
    enum mt_status st = mtx_csv_open_mem(name, text, len, NULL, &c, err);

    *n = 0;
    /* one past the limit, to tell a file that holds more */
    if (st == MT_OK)
        st = notes_read(c, name, max + 1, out, n, err);
    mtx_csv_close(c);
    if (st == MT_OK && (*n == 0 || *n > max)) {
        st = *n ? mt_fail(err, MT_ELIMIT,
                          "%s: more than %zu notes; a batch takes at "
                          "most %zu (split the file)",
                          name, max, max)
                : mt_fail(err, MT_EPARSE, "%s: no notes", name);
        mtx_notes_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return st;
}

struct submission {
    const struct mtx_note *v;
    int with_failed;
};

static const char *submission_line(size_t i, void *user)
{
    const struct submission *s = user;

    return s->with_failed || !s->v[i].failed ? s->v[i].line : NULL;
}

enum mt_status mtx_batch_notes_write(const struct mtx_note *v, size_t n,
                                     const char *path, int with_failed,
                                     struct mt_error *err)
{
    struct submission s = {v, with_failed};

    return mtx_work_write_lines(path, n, submission_line, &s, err);
}

/* ==== Checking ==== */

void mtx_batch_usage_add(struct mt_check_usage *t,
                         const struct mt_check_usage *u)
{
    t->llm_calls += u->llm_calls;
    t->critical_calls += u->critical_calls;
    t->prompt_tokens += u->prompt_tokens;
    t->completion_tokens += u->completion_tokens;
    t->failed_calls += u->failed_calls;
    t->parse_failures += u->parse_failures;
    t->fallbacks += u->fallbacks;
    t->estimated_calls += u->estimated_calls;
}

/* The trace line: {"id":ID, ...result}, with "error" first when the
 * check failed, or {"id":ID,"error":...} when it gave no result. */
static char *trace_line(const char *id, const struct mt_check_result *r,
                        const struct mt_error *err, int failed)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 30);
    json_t *e = json_string(err->msg);
    char *es = e ? json_dumps(e, JSON_ENCODE_ANY) : NULL;
    char *res = r ? mt_check_result_json(r, 1) : NULL;

    json_decref(e);
    if (failed && res && es &&
        mtx_buf_printf(&b, "{\"error\":%s,%s", es, res + 1) == MT_OK) {
        mt_free(res);
        res = mtx_buf_take(&b);
    }
    mtx_buf_free(&b);
    mt_free(es);
    return mtx_work_line(id, res,
                         res ? NULL
                             : json_pack("{s:s,s:s,s:s}", "id", id, "error",
                                         err->msg, "rule",
                                         "the check failed: no verdict"));
}

void mtx_batch_check_note(struct mt_agent *agent,
                          const struct mt_agent_check_params *cp,
                          const char *id, const char *text, const char *sents,
                          int with_trace, struct mtx_batch_outcome *o)
{
    struct mt_note nt = {
        id,   text, strlen(text), sents, sents ? strlen(sents) : 0,
        NULL, 0,    NULL,         0};
    struct mt_check_result r;
    const struct mt_check_result *got;
    enum mt_status st;

    memset(o, 0, sizeof *o);
    st = mt_agent_check_with(agent, &nt, cp, &r, &o->err);
    if (st != MT_OK && o->err.status == MT_OK)
        mt_fail(&o->err, st, "%s", mt_status_str(st));
    o->err.status = st;
    o->failed = st != MT_OK;
    got = r.trace ? &r : NULL;
    o->line = mt_check_submission_line(id, got);
    if (with_trace)
        o->trace = trace_line(id, got, &o->err, o->failed);
    if (got) {
        o->usage = r.usage;
        o->fallback = r.fallback;
    }
    mt_check_result_free(&r);
}

void mtx_batch_outcome_free(struct mtx_batch_outcome *o)
{
    mt_free(o->line);
    mt_free(o->trace);
    o->line = o->trace = NULL;
}
