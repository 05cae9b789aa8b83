/* The batches of the qa layer (batch/qa_batch.h): what each item is read
 * from and what its line says; the running, journal and output are
 * batch/items.c's. */
#include <stdio.h>
#include <string.h>

#include "batch/journal.h"
#include "batch/qa_batch.h"
#include "medtrust/core.h"

/* ==== Questions ==== */

static void qa_item_free(void *p)
{
    struct mtx_qa_item *x = p;
    size_t j;

    for (j = 0; j < x->nrel; j++)
        mt_free(x->relevant[j]);
    mt_free(x->relevant);
    mt_free(x->query);
    mt_free(x->gold);
}

static char *dup_json_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s ? mt_strdup(s) : NULL;
}

static enum mt_status qa_item_read(void *p, json_t *o)
{
    struct mtx_qa_item *x = p;
    json_t *rel = json_object_get(o, "relevant");
    size_t i;

    x->query = dup_json_str(o, "query");
    x->gold = dup_json_str(o, "answer");
    if (!x->query)
        return MT_ENOMEM;
    x->relevant = mt_calloc(json_array_size(rel) + 1, sizeof *x->relevant);
    if (!x->relevant)
        return MT_ENOMEM;
    for (i = 0; i < json_array_size(rel); i++) {
        const char *s = json_string_value(json_array_get(rel, i));

        if (s && !(x->relevant[x->nrel++] = mt_strdup(s)))
            return MT_ENOMEM;
    }
    return MT_OK;
}

enum mt_status mtx_qa_items_load(const char *path, size_t limit,
                                 struct mtx_qa_item **v, size_t *n,
                                 struct mt_error *err)
{
    void *out = NULL;
    enum mt_status st =
        mtx_items_load(path, limit, sizeof **v, "query", qa_item_read,
                       qa_item_free, &out, n, err);

    *v = out;
    return st;
}

void mtx_qa_items_free(struct mtx_qa_item *v, size_t n)
{
    mtx_items_free(v, n, sizeof *v, qa_item_free);
}

/* {"id":ID,...result} or {"id":ID,"question":Q,"error":why}. */
static char *ask_one(void *user, void *item, struct mt_error *e)
{
    struct mtx_qa_item *x = item;
    struct mt_qa_result *r = NULL;
    enum mt_status st = mt_qa_ask(user, x->query, &r, e);
    char *line;

    if (st != MT_OK && !e->msg[0])
        snprintf(e->msg, sizeof e->msg, "%s", mt_status_str(st));
    e->status = st; /* MT_EMODEL: no answer, whatever r holds */
    line = mtx_work_line(x->it.id, st == MT_OK ? mt_qa_result_json(r) : NULL,
                         st == MT_OK ? NULL
                                     : json_pack("{s:s,s:s,s:s}", "id",
                                                 x->it.id, "question", x->query,
                                                 "error", e->msg));
    mt_qa_result_free(r);
    return line;
}

/* Runs the items with 'fn' and writes p->out. */
static enum mt_status run_items(void *v, size_t n, size_t size,
                                const struct mtx_qa_batch_params *p,
                                mtx_item_run_fn fn, void *user,
                                struct mtx_items_stats *stats,
                                struct mt_error *err)
{
    struct mtx_items_params ip = {NULL,     p->resume, p->jobs, p->quiet,
                                  p->label, fn,        user};
    char jpath[4200];
    enum mt_status st;

    if (p->out) {
        snprintf(jpath, sizeof jpath, "%s.journal", p->out);
        ip.journal = jpath;
    }
    st = mtx_items_run(v, n, size, &ip, stats, err);
    if (st == MT_OK && p->out)
        st = mtx_items_write(p->out, v, n, size, err);
    return st;
}

enum mt_status mtx_qa_batch_run(struct mt_qa *q, struct mtx_qa_item *v,
                                size_t n, const struct mtx_qa_batch_params *p,
                                struct mtx_items_stats *stats,
                                struct mt_error *err)
{
    return run_items(v, n, sizeof *v, p, ask_one, q, stats, err);
}

/* ==== Texts ==== */

static void verify_item_free(void *p)
{
    mt_free(((struct mtx_verify_item *)p)->text);
}

static enum mt_status verify_item_read(void *p, json_t *o)
{
    struct mtx_verify_item *x = p;

    x->text = dup_json_str(o, "text");
    return x->text ? MT_OK : MT_ENOMEM;
}

enum mt_status mtx_verify_items_load(const char *path, size_t limit,
                                     struct mtx_verify_item **v, size_t *n,
                                     struct mt_error *err)
{
    void *out = NULL;
    enum mt_status st =
        mtx_items_load(path, limit, sizeof **v, "text", verify_item_read,
                       verify_item_free, &out, n, err);

    *v = out;
    return st;
}

void mtx_verify_items_free(struct mtx_verify_item *v, size_t n)
{
    mtx_items_free(v, n, sizeof *v, verify_item_free);
}

/* {"id":ID,...result}, with "error" too when a claim FAILED (the result
 * is kept: its other verdicts stand); {"id","error"} when there is none. */
static char *verify_line(const struct mtx_verify_item *x,
                         const struct mt_verify_result *r,
                         const struct mt_error *e)
{
    char *js = r ? mt_verify_result_json(r) : NULL;
    json_t *o = js ? json_loads(js, 0, NULL) : NULL;

    mt_free(js);
    if (o && e->status != MT_OK)
        json_object_set_new(o, "error", json_string(e->msg));
    js = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return mtx_work_line(
        x->it.id, js,
        r ? NULL : json_pack("{s:s,s:s}", "id", x->it.id, "error", e->msg));
}

struct verify_run {
    struct mt_qa *q;
    const struct mt_verify_params *vp;
};

static char *verify_one(void *user, void *item, struct mt_error *e)
{
    const struct verify_run *u = user;
    struct mtx_verify_item *x = item;
    struct mt_verify_result *r = NULL;
    enum mt_status st = mt_verify_text(u->q, x->text, u->vp, &r, e);
    char *line;

    if (st != MT_OK && !e->msg[0])
        snprintf(e->msg, sizeof e->msg, "%s", mt_status_str(st));
    e->status = st; /* MT_EMODEL: journaled as failed, verified again */
    line = verify_line(x, r, e);
    mt_verify_result_free(r);
    return line;
}

enum mt_status mtx_verify_batch_run(struct mt_qa *q,
                                    const struct mt_verify_params *vp,
                                    struct mtx_verify_item *v, size_t n,
                                    const struct mtx_qa_batch_params *p,
                                    struct mtx_items_stats *stats,
                                    struct mt_error *err)
{
    struct verify_run u = {q, vp};

    return run_items(v, n, sizeof *v, p, verify_one, &u, stats, err);
}
