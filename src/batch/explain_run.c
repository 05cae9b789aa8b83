/* examples --explain's run (batch/explain.h): the training notes of a
 * MEDEC-format CSV read, each explained (explain.c) by the rows runner
 * (batch/rows.h), and the file written back with a Reasoning column.
 * Moved from src/cli/cmd_examples.c (issue 33). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/explain.h"
#include "check/examples.h"
#include "core/buf.h"
#include "core/csv.h"
#include "core/file.h"
#include "llmcall/prompt.h"
#include "medtrust/core.h"

void mtx_explain_run_default_params(struct mtx_explain_run_params *p)
{
    memset(p, 0, sizeof *p);
    mtx_explain_default_params(&p->ep);
    mtx_rows_default_params(&p->rows);
    p->rows.role = "explain";
}

enum { K_ID, K_SENTS, K_FLAG, K_SID, K_ERR, K_CORR, K_REASON, K_N };

static const char *const key_names[K_N] = {
    "Text ID",        "Sentences",          "Error Flag", "Error Sentence ID",
    "Error Sentence", "Corrected Sentence", "Reasoning",
};

struct note {
    char **f; /* the row's fields */
    size_t nf;
    char *reasoning; /* the model's, or NULL when its call failed */
    size_t line;
};

struct explain_run {
    char **head;
    size_t nhead;
    long col[K_N];
    struct note *notes;
    size_t n;
    struct mt_prompts *prompts;
    const struct mtx_explain_run_params *p;
    struct mtx_rows *rows; /* the model over the notes (batch/rows.h) */
};

/* ==== Reading the notes ==== */

static char **copy_fields(struct mt_csv *c, size_t *nf)
{
    size_t n = mtx_csv_nfields(c);
    char **f = mt_calloc(n ? n : 1, sizeof *f);
    size_t i;

    for (i = 0; f && i < n; i++) {
        struct mt_str s = mtx_csv_field(c, i);

        f[i] = mt_strndup(s.p ? s.p : "", s.n);
        if (!f[i])
            break;
    }
    if (f && i < n) {
        while (i)
            mt_free(f[--i]);
        mt_free(f);
        return NULL;
    }
    *nf = n;
    return f;
}

static void free_fields(char **f, size_t n)
{
    size_t i;

    for (i = 0; f && i < n; i++)
        mt_free(f[i]);
    mt_free(f);
}

static enum mt_status read_head(struct explain_run *r, struct mt_csv *c,
                                const char *path, struct mt_error *err)
{
    int got = 0;
    enum mt_status st = mtx_csv_next(c, &got, err);
    int k;

    if (st != MT_OK)
        return st;
    if (!got)
        return mt_fail(err, MT_EPARSE, "%s: empty file (no header)", path);
    for (k = 0; k < K_N; k++)
        r->col[k] = mtx_csv_find(c, key_names[k]);
    if (r->col[K_SENTS] < 0 || r->col[K_FLAG] < 0 || r->col[K_SID] < 0 ||
        r->col[K_CORR] < 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: needs the columns Sentences, Error Flag, Error "
                       "Sentence ID and Corrected Sentence (a MEDEC CSV)",
                       path);
    r->head = copy_fields(c, &r->nhead);
    return r->head ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

static enum mt_status add_note(struct explain_run *r, struct mt_csv *c,
                               size_t *cap, const char *path,
                               struct mt_error *err)
{
    struct note *x;

    if (mtx_csv_nfields(c) != r->nhead)
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: %zu fields where the header has %zu", path,
                       mtx_csv_line(c), mtx_csv_nfields(c), r->nhead);
    if (r->n == *cap) {
        struct note *v = mt_realloc(r->notes, (*cap * 2 + 16) * sizeof *v);

        if (!v)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        r->notes = v;
        *cap = *cap * 2 + 16;
    }
    x = &r->notes[r->n];
    memset(x, 0, sizeof *x);
    x->line = mtx_csv_line(c);
    x->f = copy_fields(c, &x->nf);
    if (!x->f)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    r->n++;
    return MT_OK;
}

static enum mt_status read_notes(struct explain_run *r, const char *path,
                                 struct mt_error *err)
{
    struct mt_csv *c = NULL;
    size_t cap = 0;
    int got = 1;
    enum mt_status st;

    if (mtx_examples_looks_like_eval(path))
        return mt_fail(err, MT_EINVAL,
                       "--data %s looks like an evaluation split "
                       "(validation/test): explain a training split",
                       path);
    st = mtx_csv_open(path, NULL, &c, err);
    if (st == MT_OK)
        st = read_head(r, c, path, err);
    while (st == MT_OK) {
        st = mtx_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        st = add_note(r, c, &cap, path, err);
    }
    mtx_csv_close(c);
    if (st == MT_OK && !r->n)
        st = mt_fail(err, MT_EPARSE, "%s: no notes", path);
    return st;
}

/* ==== Asking (batch/explain.h) ==== */

static const char *field(const struct explain_run *r, const struct note *x,
                         int k)
{
    return r->col[k] >= 0 ? x->f[r->col[k]] : "";
}

static const char *note_id(const struct explain_run *r, const struct note *x,
                           char *buf, size_t n)
{
    if (r->col[K_ID] >= 0 && field(r, x, K_ID)[0])
        return field(r, x, K_ID);
    snprintf(buf, n, "line %zu", x->line);
    return buf;
}

/* One note (the rows runner's callback): its reasoning, or the note
 * named and its Reasoning left empty. */
static enum mt_status explain_note(void *user, struct mt_llm *llm, size_t i,
                                   enum mtx_row_outcome *out,
                                   struct mt_error *fatal)
{
    struct explain_run *r = user;
    struct note *x = &r->notes[i];
    struct mt_error err = {MT_OK, ""};
    char idb[32];
    struct mtx_explain_note n = {note_id(r, x, idb, sizeof idb),
                                 field(r, x, K_SENTS),
                                 field(r, x, K_FLAG),
                                 field(r, x, K_SID),
                                 field(r, x, K_ERR),
                                 field(r, x, K_CORR)};
    enum mt_status st =
        mtx_explain_note(r->prompts, llm, &r->p->ep, &n, &x->reasoning, &err);

    (void)fatal;
    if (st != MT_OK) {
        *out = MTX_ROW_FAILED;
        mt_log(MT_LOG_ERROR,
               "note %s (line %zu): %s: its Reasoning is left "
               "empty",
               n.id, x->line, err.msg[0] ? err.msg : mt_status_str(st));
    }
    return MT_OK;
}

/* ==== Writing ==== */

static enum mt_status put_cell(struct mt_buf *b, const char *f, int first)
{
    enum mt_status st = first ? MT_OK : mtx_buf_putc(b, ',');

    return st == MT_OK ? mtx_csv_put_field(b, f, strlen(f)) : st;
}

/* One row: the fields but an old Reasoning, then the new one. */
static enum mt_status put_row(struct mt_buf *b, const struct explain_run *r,
                              char *const *f, const char *reasoning)
{
    enum mt_status st = MT_OK;
    size_t i;
    int first = 1;

    for (i = 0; st == MT_OK && i < r->nhead; i++) {
        if ((long)i == r->col[K_REASON])
            continue;
        st = put_cell(b, f[i], first);
        first = 0;
    }
    if (st == MT_OK)
        st = put_cell(b, reasoning, first);
    return st == MT_OK ? mtx_buf_append(b, "\r\n", 2) : st;
}

static enum mt_status write_examples(const struct explain_run *r,
                                     const char *path, struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 31);
    enum mt_status st = put_row(&b, r, r->head, "Reasoning");
    size_t i;

    for (i = 0; st == MT_OK && i < r->n; i++)
        st = put_row(&b, r, r->notes[i].f,
                     r->notes[i].reasoning ? r->notes[i].reasoning : "");
    st = st == MT_OK ? mtx_file_write_atomic(path, b.data, b.len, err)
                     : mt_fail(err, st, "%s: out of memory", path);
    mtx_buf_free(&b);
    return st;
}

/* ==== The run ==== */

static enum mt_status explain_open(struct explain_run *r, struct mt_error *err)
{
    enum mt_status st = read_notes(r, r->p->data, err);

    if (st == MT_OK)
        st = mtx_prompts_load(NULL, &r->prompts, err);
    if (st == MT_OK)
        st = mtx_rows_open(&r->p->rows, &r->rows, err);
    return st;
}

static void explain_free(struct explain_run *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        free_fields(r->notes[i].f, r->notes[i].nf);
        mt_free(r->notes[i].reasoning);
    }
    mt_free(r->notes);
    free_fields(r->head, r->nhead);
    mtx_prompts_free(r->prompts);
    mtx_rows_close(r->rows);
}

enum mt_status mtx_explain_run(const struct mtx_explain_run_params *p,
                               struct mtx_explain_stats *s,
                               struct mt_error *err)
{
    struct explain_run r;
    struct mtx_rows_fns fns = {explain_note, NULL, NULL, NULL, NULL};
    enum mt_status st;

    memset(&r, 0, sizeof r);
    memset(s, 0, sizeof *s);
    if (!p->data || !p->out)
        return mt_fail(err, MT_EINVAL, "examples: the notes and an output");
    r.p = p;
    fns.user = &r;
    st = explain_open(&r, err);
    if (st == MT_OK)
        st = mtx_rows_run(r.rows, r.n, &fns, &s->failed, err);
    if (st == MT_OK)
        st = write_examples(&r, p->out, err);
    s->notes = r.n;
    explain_free(&r);
    return st;
}
