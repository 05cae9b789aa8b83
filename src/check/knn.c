/* MedPrompt's kNN few-shot for the single strategy (Nori et al., 2023,
 * "Can Generalist Foundation Models Outcompete Special-Purpose Tuning?",
 * section 4; the baseline of the IryoNLP paper): every training note of
 * --examples is embedded once, and each checked note gets the K training
 * notes nearest to it (cosine of unit vectors) as its worked examples,
 * with their chain of thought. Departure: MEDEC's training files hold
 * error/correct pairs of one note (an error row's Corrected Text is the
 * other's Text), which embed almost alike; only the nearer of the two is
 * taken, so K examples are K notes (the paper's MedQA items have no
 * such pairs). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "check/examples.h"
#include "medtrust/core.h"
#include "medtrust/retrieve.h"

#define KNN_MAX_ROWS 100000 /* training notes kept from one file */
#define KNN_BATCH 32        /* notes per embedder call */

struct knn_row {
    char *id;     /* Text ID, else "row N" */
    char *note;   /* the text that was embedded */
    char *body;   /* sentences and answer (mtx_example_body) */
    uint64_t key; /* the note it was made from (note_key) */
};

struct knn_examples {
    struct knn_row *rows;
    size_t n, cap;
    size_t skipped; /* rows with a bad Sentences field */
    uint32_t dims;
    float *vecs; /* n * dims, unit length */
};

void mtx_agent_examples_free(struct knn_examples *k)
{
    size_t i;

    if (!k)
        return;
    for (i = 0; i < k->n; i++) {
        mt_free(k->rows[i].id);
        mt_free(k->rows[i].note);
        mt_free(k->rows[i].body);
    }
    mt_free(k->rows);
    mt_free(k->vecs);
    mt_free(k);
}

/* ==== Loading ==== */

static enum mt_status grow(struct knn_examples *k)
{
    size_t cap = k->cap ? k->cap * 2 : 64;
    struct knn_row *r;

    if (k->n < k->cap)
        return MT_OK;
    r = mt_realloc(k->rows, cap * sizeof *r);
    if (!r)
        return MT_ENOMEM;
    k->rows = r;
    k->cap = cap;
    return MT_OK;
}

/* A note's identity: FNV-1a of its text with runs of white space folded
 * to one space and the ends trimmed. */
static uint64_t note_key(struct mt_str t)
{
    uint64_t h = MTX_FNV1A_INIT;
    int gap = 0;
    size_t i;

    t = mtx_str_trim(t);
    for (i = 0; i < t.n; i++) {
        if (isspace((unsigned char)t.p[i])) {
            gap = 1;
            continue;
        }
        if (gap)
            h = mtx_fnv1a(h, " ", 1);
        gap = 0;
        h = mtx_fnv1a(h, t.p + i, 1);
    }
    return h;
}

/* The note a row was made from: an error row's Corrected Text when the
 * file has it (MEDEC and MedErrBench do), else the row's own note. */
static uint64_t row_key(struct mt_csv *c, const long *col, struct mt_str note)
{
    struct mt_str fl = mtx_str_trim(mtx_csv_field(c, (size_t)col[C_FLAG]));
    struct mt_str ct =
        col[C_CTEXT] >= 0 ? mtx_str_trim(mtx_csv_field(c, (size_t)col[C_CTEXT]))
                          : (struct mt_str){NULL, 0};

    if (fl.n == 1 && fl.p[0] == '1' && ct.n && !mtx_str_eq_c(ct, "NA"))
        return note_key(ct);
    return note_key(note);
}

/* Keeps the current row: its id, the note (Text, else Sentences), its
 * example body and key. A row whose Sentences field is bad is skipped. */
static enum mt_status keep_row(struct knn_examples *k, struct mt_csv *c,
                               const long *col)
{
    struct mt_buf body = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct mt_str note = mtx_csv_field(c, (size_t)col[C_SENTS]);
    struct mt_str id = {NULL, 0};
    struct knn_row *r;
    char name[32];
    enum mt_status st = mtx_example_body(&body, c, col);

    if (st == MT_EPARSE) {
        k->skipped++;
        mtx_buf_free(&body);
        return MT_OK;
    }
    if (st == MT_OK)
        st = grow(k);
    if (st != MT_OK) {
        mtx_buf_free(&body);
        return st;
    }
    if (col[C_TEXT] >= 0 && mtx_csv_field(c, (size_t)col[C_TEXT]).n)
        note = mtx_csv_field(c, (size_t)col[C_TEXT]);
    if (col[C_ID] >= 0)
        id = mtx_str_trim(mtx_csv_field(c, (size_t)col[C_ID]));
    snprintf(name, sizeof name, "row %zu", mtx_csv_line(c));
    r = &k->rows[k->n];
    r->body = mtx_buf_take(&body);
    r->note = mt_strndup(note.p ? note.p : "", note.n);
    r->id = id.n ? mt_strndup(id.p, id.n) : mt_strdup(name);
    r->key = row_key(c, col, note);
    k->n++; /* freed with the rest even when a copy failed */
    mtx_buf_free(&body);
    return r->body && r->note && r->id ? MT_OK : MT_ENOMEM;
}

static enum mt_status read_all(struct knn_examples *k, struct mt_csv *c,
                               const long *col, const char *path,
                               struct mt_error *err)
{
    enum mt_status st = MT_OK;
    int got = 1;

    while (st == MT_OK) {
        st = mtx_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        if (k->n == KNN_MAX_ROWS)
            return mt_fail(err, MT_ELIMIT, "--examples %s: more than %d notes",
                           path, KNN_MAX_ROWS);
        st = keep_row(k, c, col);
        if (st == MT_ENOMEM)
            mt_fail(err, st, "--examples %s: out of memory", path);
    }
    if (st == MT_OK && k->n == 0)
        st = mt_fail(err, MT_EPARSE, "--examples %s: no usable example row",
                     path);
    return st;
}

/* Embeds every training note with the retriever's embedder: the index's
 * (as the paper embeds with its retriever's bi-encoder) or --embedder. */
static enum mt_status embed_all(struct mt_agent *a, struct knn_examples *k,
                                struct mt_error *err)
{
    struct mt_str texts[KNN_BATCH];
    size_t i, j;
    enum mt_status st = MT_OK;

    k->dims = a->ret ? mt_retriever_dims(a->ret) : 0;
    if (k->dims == 0)
        return mt_fail(err, MT_EINVAL,
                       "--examples picks the nearest training notes by "
                       "their embeddings, and there is no embedder: give "
                       "--embedder SPEC, or --db DIR whose index was built "
                       "with one");
    k->vecs = mt_calloc(k->n, (size_t)k->dims * sizeof *k->vecs);
    if (!k->vecs)
        return mt_fail(err, MT_ENOMEM, "--examples: out of memory");
    for (i = 0; st == MT_OK && i < k->n; i += KNN_BATCH) {
        size_t n = k->n - i < KNN_BATCH ? k->n - i : KNN_BATCH;

        for (j = 0; j < n; j++)
            texts[j] = mtx_str_from(k->rows[i + j].note);
        st = mt_retriever_embed(a->ret, texts, n, k->vecs + i * k->dims, err);
    }
    if (st != MT_OK)
        mt_error_prefix(err, "--examples: embedding the training notes");
    return st;
}

enum mt_status mtx_knn_load(struct mt_agent *a, struct mt_error *err)
{
    const char *path = a->p.examples_path;
    struct knn_examples *k;
    struct mt_csv *c = NULL;
    long col[EX_NCOLS];
    enum mt_status st;

    if (mtx_examples_looks_like_eval(path))
        return mt_fail(err, MT_EINVAL,
                       "--examples %s looks like an evaluation split "
                       "(validation/test): give a training split",
                       path);
    k = mt_calloc(1, sizeof *k);
    if (!k)
        return mt_fail(err, MT_ENOMEM, "--examples: out of memory");
    st = mtx_csv_open(path, NULL, &c, err);
    if (st == MT_OK)
        st = mtx_examples_cols(c, "--examples", path, col, err);
    if (st == MT_OK)
        st = read_all(k, c, col, path, err);
    mtx_csv_close(c);
    if (st == MT_OK)
        st = embed_all(a, k, err);
    if (st != MT_OK) {
        mtx_agent_examples_free(k);
        return st;
    }
    a->knn = k;
    return MT_OK;
}

/* ==== Choosing ==== */

static float dot(const float *x, const float *y, uint32_t d)
{
    float s = 0;
    uint32_t i;

    for (i = 0; i < d; i++)
        s += x[i] * y[i];
    return s;
}

/* Drops entry j of the n in best/sim. */
static void drop(size_t *best, float *sim, size_t n, size_t j)
{
    for (; j + 1 < n; j++) {
        best[j] = best[j + 1];
        sim[j] = sim[j + 1];
    }
}

/* Whether a row may be an example for the checked note: not the note
 * itself, nor a training note made from it (its key is the note's). */
static int allowed(const struct knn_row *row, struct mt_str note, uint64_t key)
{
    if (row->key == key)
        return 0;
    return !(strlen(row->note) == note.n &&
             memcmp(row->note, note.p, note.n) == 0);
}

/* The K rows nearest to q, nearest first, into best/sim (ties: the
 * earlier row), at most one of each note (key): the nearer of an
 * error/correct pair. Returns the count. */
static size_t nearest(const struct knn_examples *k, const float *q,
                      struct mt_str note, size_t want, size_t *best, float *sim)
{
    uint64_t key = note_key(note);
    size_t n = 0, i, j;

    for (i = 0; i < k->n; i++) {
        float s = dot(q, k->vecs + i * k->dims, k->dims);

        if (!allowed(&k->rows[i], note, key))
            continue;
        for (j = 0; j < n && k->rows[best[j]].key != k->rows[i].key; j++)
            ;
        if (j < n && s <= sim[j])
            continue; /* its pair is nearer (or as near and earlier) */
        if (j < n)
            drop(best, sim, n--, j);
        if (n == want && s <= sim[n - 1])
            continue;
        j = n < want ? n++ : n - 1;
        for (; j > 0 && sim[j - 1] < s; j--) {
            best[j] = best[j - 1];
            sim[j] = sim[j - 1];
        }
        best[j] = i;
        sim[j] = s;
    }
    return n;
}

/* The trace record: which training notes were chosen, how near. */
static void record(struct run *r, const struct knn_examples *k,
                   const size_t *best, const float *sim, size_t n)
{
    json_t *ids = json_array();
    json_t *sims = json_array();
    size_t i;

    for (i = 0; ids && sims && i < n; i++) {
        json_array_append_new(ids, json_string(k->rows[best[i]].id));
        json_array_append_new(sims, json_real((double)sim[i]));
    }
    mtx_run_event(r, MT_TRACE_FEW_SHOT,
                  json_pack("{s:s,s:o*,s:o*,s:I}", "selection", "knn",
                            "examples", ids, "similarity", sims, "skipped_rows",
                            (json_int_t)k->skipped));
}

static enum mt_status knn_text(struct run *r, const float *q, char **out)
{
    const struct knn_examples *k = r->a->knn;
    size_t want = r->p.max_few_shot;
    size_t *best = mt_calloc(want + 1, sizeof *best);
    float *sim = mt_calloc(want + 1, sizeof *sim);
    struct mt_buf b = MT_BUF_INIT((size_t)16 << 20);
    size_t n = 0, i;
    enum mt_status st = best && sim ? mtx_buf_reserve(&b, 1) : MT_ENOMEM;

    if (st == MT_OK)
        n = nearest(k, q, r->text, want, best, sim);
    for (i = 0; st == MT_OK && i < n; i++)
        st =
            mtx_buf_printf(&b, "Example %zu\n%s", i + 1, k->rows[best[i]].body);
    if (st == MT_OK) {
        record(r, k, best, sim, n);
        *out = mtx_buf_take(&b);
    }
    mtx_buf_free(&b);
    mt_free(best);
    mt_free(sim);
    return st;
}

enum mt_status mtx_agent_examples_for(struct run *r, const char **out,
                                      char **owned)
{
    const struct knn_examples *k = r->a->knn;
    struct mt_error err = {MT_OK, ""};
    float *q;
    enum mt_status st;

    *owned = NULL;
    *out = r->a->examples;
    if (!k)
        return MT_OK;
    q = mt_calloc(k->dims, sizeof *q);
    if (!q)
        return MT_ENOMEM;
    st = mt_retriever_embed(r->a->ret, &r->text, 1, q, &err);
    if (st == MT_OK) {
        st = knn_text(r, q, owned);
    } else if (st != MT_ENOMEM) {
        /* the embedder failed: a failed call, as a role's would be */
        r->down++;
        snprintf(r->down_why, sizeof r->down_why,
                 "embedding the note for --examples: %.200s", err.msg);
        st = MT_EMODEL;
    }
    mt_free(q);
    *out = *owned;
    return st;
}
