/* corpus vote's run and corpus filter (batch/vote.h): the items read,
 * voted on by the rows runner (batch/rows.h, which journals each one and
 * gives back those a resumed run's journal holds), the votes file
 * written; the filter keeps the documents whose item was kept. Moved
 * from src/cli/cmd_corpus.c (issue 33). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "batch/journal.h"
#include "batch/vote.h"
#include "core/buf.h"
#include "core/file.h"
#include "core/jsonl.h"
#include "medtrust/core.h"

struct item {
    char *id;
    char *text; /* what {{text}} becomes */
    char *line; /* the result line, once voted */
    int keep;   /* voted (or resumed) "keep": true */
};

struct vote_run {
    const struct mtx_vote_params *p;
    struct item *items;
    size_t n;
    char *prompt;
    struct mtx_rows *rows;
};

void mtx_vote_default_params(struct mtx_vote_params *p)
{
    memset(p, 0, sizeof *p);
    p->votes = 5;
    p->min_yes = 4;
    mtx_rows_default_params(&p->rows);
    p->rows.role = "vote";
}

/* ==== Reading the items ==== */

/* An item's text: "text", else "words" joined with ", ", else "title". */
static char *item_text(json_t *o)
{
    json_t *w = json_object_get(o, "words");
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);
    size_t i;

    if (json_is_string(json_object_get(o, "text")))
        return mt_strdup(json_string_value(json_object_get(o, "text")));
    for (i = 0; i < json_array_size(w); i++) {
        const char *s = json_string_value(json_array_get(w, i));

        if (s && (mtx_buf_append_str(&b, i ? ", " : "") != MT_OK ||
                  mtx_buf_append_str(&b, s) != MT_OK))
            break;
    }
    if (b.len)
        return mtx_buf_take(&b);
    mtx_buf_free(&b);
    if (json_is_string(json_object_get(o, "title")))
        return mt_strdup(json_string_value(json_object_get(o, "title")));
    return NULL;
}

static enum mt_status add_item(struct vote_run *r, json_t *o, const char *path,
                               size_t line, size_t *cap, struct mt_error *err)
{
    json_t *id = json_object_get(o, "id");
    struct item *x;

    if (!json_is_string(id) && !json_is_integer(id))
        return mt_fail(err, MT_EPARSE, "%s:%zu: item without an \"id\"", path,
                       line);
    if (r->n == *cap) {
        struct item *v = mt_realloc(r->items, (*cap * 2 + 16) * sizeof *v);

        if (!v)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        r->items = v;
        *cap = *cap * 2 + 16;
    }
    x = &r->items[r->n];
    memset(x, 0, sizeof *x);
    x->id = json_is_string(id) ? mt_strdup(json_string_value(id))
                               : json_dumps(id, JSON_ENCODE_ANY);
    x->text = item_text(o);
    r->n++;
    if (!x->id)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (!x->text)
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: item %s has no \"text\", \"words\" or "
                       "\"title\"",
                       path, line, x->id);
    return MT_OK;
}

static enum mt_status read_items(struct vote_run *r, const char *path,
                                 struct mt_error *err)
{
    struct mt_jsonl *j = NULL;
    json_t *o = NULL;
    size_t cap = 0;
    enum mt_status st = mtx_jsonl_open(path, NULL, &j, err);

    while (st == MT_OK && (st = mtx_jsonl_next(j, &o, err)) == MT_OK && o)
        st = add_item(r, o, path, mtx_jsonl_line(j), &cap, err);
    mtx_jsonl_close(j);
    if (st == MT_OK && r->n == 0)
        st = mt_fail(err, MT_EPARSE, "%s: no items", path);
    return st;
}

/* One item (the rows runner's callback): its votes (vote.c) as its
 * line, or the item named and counted as failed. */
static enum mt_status vote_item(void *user, struct mt_llm *llm, size_t i,
                                enum mtx_row_outcome *out,
                                struct mt_error *fatal)
{
    struct vote_run *r = user;
    struct item *x = &r->items[i];
    struct mt_error err = {MT_OK, ""};
    char *res = mtx_vote_item(llm, r->prompt, x->text, r->p->votes,
                              r->p->min_yes, &x->keep, &err);

    (void)fatal;
    x->line = res ? mtx_work_line(x->id, res, NULL) : NULL;
    if (!x->line) {
        mt_log(MT_LOG_ERROR, "item %s: %s", x->id,
               err.msg[0] ? err.msg : "out of memory");
        *out = MTX_ROW_FAILED;
    }
    return MT_OK;
}

static const char *item_id(void *user, size_t i)
{
    return ((struct vote_run *)user)->items[i].id;
}

static const char *item_line(void *user, size_t i)
{
    return ((struct vote_run *)user)->items[i].line;
}

/* An item the journal holds: its line, and "keep" from it. */
static int item_resumed(void *user, size_t i, const char *line)
{
    struct item *x = &((struct vote_run *)user)->items[i];

    x->line = mt_strdup(line);
    x->keep = x->line && strstr(line, "\"keep\":true") != NULL;
    return x->line != NULL;
}

/* ==== The vote run ==== */

static enum mt_status write_votes(const struct vote_run *r, const char *path,
                                  struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 31);
    enum mt_status st = mtx_buf_reserve(&b, 1);
    size_t i;

    for (i = 0; st == MT_OK && i < r->n; i++)
        if (r->items[i].line)
            st = mtx_buf_printf(&b, "%s\n", r->items[i].line);
    st = st == MT_OK ? mtx_file_write_atomic(path, b.data, b.len, err)
                     : mt_fail(err, st, "%s: out of memory", path);
    mtx_buf_free(&b);
    return st;
}

static size_t kept_items(const struct vote_run *r)
{
    size_t i, k = 0;

    for (i = 0; i < r->n; i++)
        k += r->items[i].line && r->items[i].keep;
    return k;
}

static enum mt_status vote_open(struct vote_run *r, struct mt_error *err)
{
    enum mt_status st = read_items(r, r->p->input, err);

    if (st == MT_OK)
        r->prompt = r->p->prompt ? mtx_vote_prompt_file(r->p->prompt, err)
                                 : mtx_vote_builtin_prompt(err);
    if (st == MT_OK && !r->prompt)
        st = err->status != MT_OK ? err->status : MT_ENOMEM;
    if (st == MT_OK)
        st = mtx_rows_open(&r->p->rows, &r->rows, err);
    return st;
}

static void vote_free(struct vote_run *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        mt_free(r->items[i].id);
        mt_free(r->items[i].text);
        mt_free(r->items[i].line);
    }
    mt_free(r->items);
    mt_free(r->prompt);
    mtx_rows_close(r->rows);
}

enum mt_status mtx_vote_run(const struct mtx_vote_params *p,
                            struct mtx_vote_stats *s, struct mt_error *err)
{
    struct mtx_vote_params q = *p;
    struct vote_run r;
    struct mtx_rows_fns fns = {vote_item, item_id, item_line, item_resumed,
                               NULL};
    char *jpath = p->out ? mtx_str_printf("%s.journal", p->out) : NULL;
    enum mt_status st;

    memset(&r, 0, sizeof r);
    memset(s, 0, sizeof *s);
    if (!p->input || !p->out || p->votes < 1 || p->votes > 64 ||
        p->min_yes > p->votes) {
        mt_free(jpath);
        return mt_fail(err, MT_EINVAL,
                       "corpus vote: an input, an output, 1..64 votes and "
                       "at most as many yes votes needed");
    }
    if (!jpath)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    q.rows.journal = jpath;
    q.rows.resume = p->resume;
    r.p = &q;
    fns.user = &r;
    st = vote_open(&r, err);
    if (st == MT_OK)
        st = mtx_rows_run(r.rows, r.n, &fns, &s->failed, err);
    if (st == MT_OK)
        st = write_votes(&r, p->out, err);
    s->items = r.n;
    s->kept = kept_items(&r);
    vote_free(&r);
    mt_free(jpath);
    return st;
}

/* ==== filter ==== */

struct keep_set {
    char **ids;
    size_t n;
    size_t cap;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum mt_status keep_add(struct keep_set *k, json_t *o, const char *path,
                               size_t line, struct mt_error *err)
{
    json_t *id = json_object_get(o, "id");
    json_t *keep = json_object_get(o, "keep");

    if (!json_is_string(id) || !json_is_boolean(keep))
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: not a corpus vote line (needs \"id\" and "
                       "\"keep\")",
                       path, line);
    if (!json_is_true(keep))
        return MT_OK;
    if (k->n == k->cap) {
        char **v = mt_realloc(k->ids, (k->cap * 2 + 64) * sizeof *v);

        if (!v)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        k->ids = v;
        k->cap = k->cap * 2 + 64;
    }
    k->ids[k->n] = mt_strdup(json_string_value(id));
    return k->ids[k->n++] ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

static enum mt_status keep_read(struct keep_set *k, const char *path,
                                struct mt_error *err)
{
    struct mt_jsonl *j = NULL;
    json_t *o = NULL;
    enum mt_status st = mtx_jsonl_open(path, NULL, &j, err);

    while (st == MT_OK && (st = mtx_jsonl_next(j, &o, err)) == MT_OK && o)
        st = keep_add(k, o, path, mtx_jsonl_line(j), err);
    mtx_jsonl_close(j);
    if (st == MT_OK && k->n)
        qsort(k->ids, k->n, sizeof *k->ids, cmp_str);
    return st;
}

static int kept(const struct keep_set *k, json_t *doc, const char *label)
{
    json_t *v = json_object_get(doc, label);
    char buf[32];
    const char *key = buf;

    if (!v)
        v = json_object_get(doc, "id");
    if (json_is_string(v))
        key = json_string_value(v);
    else if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
    else
        return 0;
    return k->n && bsearch(&key, k->ids, k->n, sizeof *k->ids, cmp_str);
}

static enum mt_status filter_docs(const struct keep_set *k, const char *in,
                                  const char *label, FILE *out,
                                  size_t counts[2], struct mt_error *err)
{
    struct mt_jsonl *j = NULL;
    json_t *o = NULL;
    enum mt_status st = mtx_jsonl_open(in, NULL, &j, err);

    while (st == MT_OK && (st = mtx_jsonl_next(j, &o, err)) == MT_OK && o) {
        int keep = kept(k, o, label);

        counts[keep]++;
        if (keep && (json_dumpf(o, out, JSON_COMPACT | JSON_PRESERVE_ORDER) ||
                     fputc('\n', out) == EOF))
            st = mt_fail(err, MT_EIO, "write failed");
    }
    mtx_jsonl_close(j);
    return st;
}

/* Writes to OUT.part and renames it into place on success. */
static enum mt_status filter_to(const struct keep_set *k, const char *in,
                                const char *label, const char *out,
                                size_t counts[2], struct mt_error *err)
{
    char tmp[4200];
    FILE *f = stdout;
    enum mt_status st;

    if (out) {
        snprintf(tmp, sizeof tmp, "%s.part", out);
        f = mtx_file_fopen(tmp, "wb", 0666);
        if (!f)
            return mt_fail(err, mtx_file_errno_status(errno),
                           "%s: cannot create: %s", tmp, strerror(errno));
    }
    st = filter_docs(k, in, label, f, counts, err);
    if (!out)
        return st;
    if (st == MT_OK && mtx_file_flush_sync(f, 0) != 0)
        st = mt_fail(err, mtx_file_errno_status(errno), "%s: write failed: %s",
                     tmp, strerror(errno));
    if (fclose(f) != 0 && st == MT_OK)
        st = mt_fail(err, mtx_file_errno_status(errno), "%s: write failed: %s",
                     tmp, strerror(errno));
    if (st == MT_OK && mtx_file_rename(tmp, out) != 0)
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "%s: cannot rename into place: %s", out, strerror(errno));
    if (st == MT_OK)
        st = mtx_file_sync_dir(out, err);
    if (st != MT_OK)
        remove(tmp);
    return st;
}

enum mt_status mtx_vote_filter(const char *keep, const char *input,
                               const char *label, const char *out,
                               size_t counts[2], struct mt_error *err)
{
    struct keep_set k = {NULL, 0, 0};
    enum mt_status st = keep_read(&k, keep, err);
    size_t i;

    if (st == MT_OK)
        st = filter_to(&k, input, label ? label : "topic", out, counts, err);
    for (i = 0; i < k.n; i++)
        mt_free(k.ids[i]);
    mt_free(k.ids);
    return st;
}
