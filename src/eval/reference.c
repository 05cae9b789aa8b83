/* MEDEC-format reference reader (MEDEC and MedErrBench CSVs) through the
 * RFC 4180 reader in core/csv. */
#include <string.h>
#include <strings.h>

#include "core/arena.h"
#include "core/csv.h"
#include "eval/eval_int.h"
#include "medtrust/core.h"

enum col {
    C_ID,
    C_FLAG,
    C_SENT,
    C_CORR,
    C_ESENT,
    C_TYPE,
    C_TEXT,
    C_KW,
    C_DIFF,
    C_REASON,
    C_COUNT
};

#define N_REQUIRED 4 /* the first four columns above */

static const char *const col_names[C_COUNT] = {
    "Text ID",
    "Error Flag",
    "Error Sentence ID",
    "Corrected Sentence",
    "Error Sentence",
    "Error Type",
    "Text",
    "Important Words",
    "Difficulty",
    "Reasoning Type",
};

struct mt_eval_ref {
    struct mt_arena arena;
    struct mt_eval_note *notes;
    size_t n;
    size_t cap;
    struct mt_ev_map ids;
    int has_kw;
};

/* Strings pandas.read_csv turns into NaN by default; the official scorer
 * then uses "NA" for them. */
static const char *const pandas_na[] = {
    "",     "#N/A",   "#N/A N/A", "#NA",  "-1.#IND", "-1.#QNAN", "-NaN",
    "-nan", "1.#IND", "1.#QNAN",  "<NA>", "N/A",     "NA",       "NULL",
    "NaN",  "None",   "n/a",      "nan",  "null",
};

static int is_pandas_na(struct mt_str s)
{
    size_t i;

    for (i = 0; i < sizeof pandas_na / sizeof pandas_na[0]; i++)
        if (mtx_str_eq_c(s, pandas_na[i]))
            return 1;
    return 0;
}

/* "en-test-3" -> "EN"; MEDEC's "ms-"/"uw-" notes are English. */
static const char *language_of(const char *id)
{
    if (strncmp(id, "en-", 3) == 0 || strncmp(id, "ms-", 3) == 0 ||
        strncmp(id, "uw-", 3) == 0)
        return "EN";
    if (strncmp(id, "cn-", 3) == 0)
        return "CN";
    if (strncmp(id, "ara-", 4) == 0)
        return "ARA";
    return "";
}

/* Headers match without regard to case: MedGuards' own MEDEC keyword
 * files spell the column "important words". */
static int eq_nocase(struct mt_str s, const char *name)
{
    return s.n == strlen(name) && strncasecmp(s.p, name, s.n) == 0;
}

static enum mt_status find_columns(struct mt_csv *c, long *idx,
                                   const char *name, struct mt_error *err)
{
    char missing[256] = "";
    size_t i;
    size_t f;

    for (i = 0; i < C_COUNT; i++) {
        idx[i] = -1;
        for (f = 0; f < mtx_csv_nfields(c); f++)
            if (eq_nocase(mtx_str_trim(mtx_csv_field(c, f)), col_names[i]))
                idx[i] = (long)f;
        if (i < N_REQUIRED && idx[i] < 0) {
            if (missing[0])
                strcat(missing, ", ");
            strcat(missing, col_names[i]);
        }
    }
    if (missing[0])
        return mt_fail(err, MT_EPARSE,
                       "%s: missing column(s): %s (a MEDEC "
                       "reference needs Text ID, Error Flag, Error Sentence "
                       "ID and Corrected Sentence)",
                       name, missing);
    return MT_OK;
}

static const char *field(struct mt_eval_ref *r, struct mt_csv *c, long i,
                         int trim)
{
    struct mt_str s;

    if (i < 0)
        return "";
    s = mtx_csv_field(c, (size_t)i);
    if (trim)
        s = mtx_str_trim(s);
    return mtx_arena_strndup(&r->arena, s.p ? s.p : "", s.n);
}

static const char *opt_field(struct mt_eval_ref *r, struct mt_csv *c, long i)
{
    return i < 0 ? NULL : field(r, c, i, 1);
}

static enum mt_status grow(struct mt_eval_ref *r)
{
    size_t cap = r->cap ? r->cap * 2 : 256;
    struct mt_eval_note *n;

    if (r->n < r->cap)
        return MT_OK;
    n = mt_realloc(r->notes, cap * sizeof *n);
    if (!n)
        return MT_ENOMEM;
    r->notes = n;
    r->cap = cap;
    return MT_OK;
}

static enum mt_status add_note(struct mt_eval_ref *r, struct mt_csv *c,
                               const long *idx, const char *name, size_t want,
                               struct mt_error *err)
{
    struct mt_eval_note *n;
    struct mt_str corr = mtx_csv_field(c, (size_t)idx[C_CORR]);

    if (mtx_csv_nfields(c) != want) /* a cut or merged row, never scored */
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: %zu field%s where the header has %zu", name,
                       mtx_csv_line(c), mtx_csv_nfields(c),
                       mtx_csv_nfields(c) == 1 ? "" : "s", want);
    if (grow(r) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    n = &r->notes[r->n];
    n->id = field(r, c, idx[C_ID], 1);
    n->flag = field(r, c, idx[C_FLAG], 1);
    n->sentence_id = field(r, c, idx[C_SENT], 1);
    n->correction = is_pandas_na(corr) ? "NA" : field(r, c, idx[C_CORR], 0);
    n->error_sentence = field(r, c, idx[C_ESENT], 0);
    n->error_type = field(r, c, idx[C_TYPE], 1);
    n->text = field(r, c, idx[C_TEXT], 0);
    n->keywords = idx[C_KW] < 0 ? NULL : field(r, c, idx[C_KW], 0);
    n->difficulty = opt_field(r, c, idx[C_DIFF]);
    n->reasoning = opt_field(r, c, idx[C_REASON]);
    if (!n->id || !n->flag || !n->sentence_id || !n->correction ||
        !n->error_sentence || !n->error_type || !n->text ||
        (idx[C_KW] >= 0 && !n->keywords) ||
        (idx[C_DIFF] >= 0 && !n->difficulty) ||
        (idx[C_REASON] >= 0 && !n->reasoning))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    n->language = language_of(n->id);
    if (n->id[0] == '\0')
        return mt_fail(err, MT_EPARSE, "%s:%zu: empty Text ID", name,
                       mtx_csv_line(c));
    if (mtx_ev_map_get(&r->ids, mtx_str_from(n->id)) >= 0)
        return mt_fail(err, MT_EPARSE, "%s:%zu: duplicate Text ID '%s'", name,
                       mtx_csv_line(c), n->id);
    if (mtx_ev_map_put(&r->ids, mtx_str_from(n->id), (long)r->n) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    r->n++;
    return MT_OK;
}

static enum mt_status read_all(struct mt_eval_ref *r, struct mt_csv *c,
                               const char *name, struct mt_error *err)
{
    long idx[C_COUNT];
    int got = 0;
    size_t want;
    enum mt_status st = mtx_csv_next(c, &got, err);

    if (st != MT_OK)
        return st;
    if (!got)
        return mt_fail(err, MT_EPARSE, "%s: empty reference file", name);
    want = mtx_csv_nfields(c);
    st = find_columns(c, idx, name, err);
    r->has_kw = idx[C_KW] >= 0;
    while (st == MT_OK) {
        st = mtx_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        st = add_note(r, c, idx, name, want, err);
    }
    if (st == MT_OK && r->n == 0)
        st = mt_fail(err, MT_EPARSE, "%s: no notes after the header", name);
    return st;
}

static enum mt_status finish(struct mt_eval_ref *r, struct mt_csv *c,
                             enum mt_status st, const char *name,
                             struct mt_eval_ref **out, struct mt_error *err)
{
    if (st == MT_OK)
        st = read_all(r, c, name, err);
    mtx_csv_close(c);
    if (st != MT_OK) {
        mt_eval_ref_free(r);
        return st;
    }
    *out = r;
    return MT_OK;
}

static struct mt_eval_ref *ref_new(void)
{
    struct mt_eval_ref *r = mt_calloc(1, sizeof *r);

    if (r)
        r->arena = MT_ARENA_INIT(1 << 20);
    return r;
}

enum mt_status mt_eval_ref_load(const char *path, struct mt_eval_ref **out,
                                struct mt_error *err)
{
    struct mt_eval_ref *r = ref_new();
    struct mt_csv *c = NULL;
    enum mt_status st;

    if (!r)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = mtx_csv_open(path, NULL, &c, err);
    return finish(r, c, st, path, out, err);
}

enum mt_status mt_eval_ref_load_mem(const char *name, const char *data,
                                    size_t n, struct mt_eval_ref **out,
                                    struct mt_error *err)
{
    struct mt_eval_ref *r = ref_new();
    struct mt_csv *c = NULL;
    char *copy;
    enum mt_status st;

    if (!r)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    copy = mtx_arena_strndup(&r->arena, data, n); /* outlives the reader */
    if (!copy) {
        mt_eval_ref_free(r);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    st = mtx_csv_open_mem(name, copy, n, NULL, &c, err);
    return finish(r, c, st, name, out, err);
}

size_t mt_eval_ref_count(const struct mt_eval_ref *r)
{
    return r->n;
}

const struct mt_eval_note *mt_eval_ref_note(const struct mt_eval_ref *r,
                                            size_t i)
{
    return i < r->n ? &r->notes[i] : NULL;
}

long mt_eval_ref_find(const struct mt_eval_ref *r, const char *id)
{
    return mtx_ev_map_get(&r->ids, mtx_str_from(id));
}

int mt_eval_ref_has_keywords(const struct mt_eval_ref *r)
{
    return r->has_kw;
}

enum mt_status mt_eval_ref_keep(struct mt_eval_ref *r,
                                int (*keep)(const struct mt_eval_note *n,
                                            void *user),
                                void *user, struct mt_error *err)
{
    struct mt_ev_map ids = {0};
    size_t i, k = 0;

    for (i = 0; i < r->n; i++) /* the new map first: r stays whole */
        if (keep(&r->notes[i], user) &&
            mtx_ev_map_put(&ids, mtx_str_from(r->notes[i].id), (long)k++) !=
                MT_OK) {
            mtx_ev_map_free(&ids);
            return mt_fail(err, MT_ENOMEM, "out of memory");
        }
    for (i = 0, k = 0; i < r->n; i++)
        if (mtx_ev_map_get(&ids, mtx_str_from(r->notes[i].id)) == (long)k)
            r->notes[k++] = r->notes[i];
    mtx_ev_map_free(&r->ids);
    r->ids = ids;
    r->n = k;
    return MT_OK;
}

void mt_eval_ref_free(struct mt_eval_ref *r)
{
    if (!r)
        return;
    mt_free(r->notes);
    mtx_ev_map_free(&r->ids);
    mtx_arena_free(&r->arena);
    mt_free(r);
}
