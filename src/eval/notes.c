/* The notes of a MEDEC-format CSV, read once for `mediqa` and the
 * server's batch check. */
#include <string.h>

#include "core/buf.h"
#include "eval/notes.h"

void mtx_notes_free(struct mtx_note *v, size_t n)
{
    size_t i;

    for (i = 0; v && i < n; i++) {
        mt_free(v[i].id);
        mt_free(v[i].text);
        mt_free(v[i].sents);
        mt_free(v[i].line);
        mt_free(v[i].error);
    }
    mt_free(v);
}

int mtx_notes_columns(struct mt_csv *c, long col[3], enum mt_status *st,
                      struct mt_error *err)
{
    int got = 0;

    col[0] = col[1] = col[2] = -1;
    *st = mtx_csv_next(c, &got, err);
    if (*st == MT_OK && got) {
        col[0] = mtx_csv_find(c, "Text ID");
        col[1] = mtx_csv_find(c, "Text");
        col[2] = mtx_csv_find(c, "Sentences");
    }
    return col[0] >= 0 && col[1] >= 0;
}

static char *dup_field(struct mt_csv *c, long col)
{
    struct mt_str s = mtx_csv_field(c, (size_t)col);

    return mt_strndup(s.p ? s.p : "", s.n);
}

static enum mt_status add_note(struct mt_csv *c, const long *col,
                               struct mtx_note **v, size_t *n, size_t *cap)
{
    struct mtx_note *x;

    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;

        x = mt_realloc(*v, nc * sizeof *x);
        if (!x)
            return MT_ENOMEM;
        *v = x;
        *cap = nc;
    }
    x = &(*v)[*n];
    memset(x, 0, sizeof *x);
    (*n)++;
    x->id = dup_field(c, col[0]);
    x->text = dup_field(c, col[1]);
    x->sents = col[2] >= 0 ? dup_field(c, col[2]) : NULL;
    if (!x->id || !x->text || (col[2] >= 0 && !x->sents))
        return MT_ENOMEM;
    return mtx_str_trim(mtx_str_from(x->id)).n ? MT_OK : MT_EPARSE;
}

enum mt_status mtx_notes_read(struct mt_csv *c, const char *name,
                              const long col[3], size_t limit,
                              struct mtx_note **out, size_t *n,
                              struct mt_error *err)
{
    struct mtx_note *v = NULL;
    size_t cap = 0;
    int got = 1;
    enum mt_status st = MT_OK;

    *n = 0;
    while (st == MT_OK && (!limit || *n < limit)) {
        st = mtx_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        st = add_note(c, col, &v, n, &cap);
        if (st == MT_EPARSE)
            mt_fail(err, st, "%s:%zu: empty Text ID", name, mtx_csv_line(c));
    }
    if (st == MT_OK) {
        *out = v;
        return MT_OK;
    }
    mtx_notes_free(v, *n);
    *n = 0;
    return st == MT_ENOMEM ? mt_fail(err, st, "%s: out of memory", name) : st;
}
