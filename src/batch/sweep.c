/* A sweep (batch/sweep.h): a grid over mediqa's options, every cell run
 * on the same sampled notes and repeated with different seeds, each run
 * scored, summarised from its trace and drawn in one report. Every run is
 * a medtrust command the caller runs (`medtrust sweep` runs the real
 * `mediqa` and `score` verbs in a child process, so a cell's numbers are
 * exactly what those verbs print for its files, and resume, journaling
 * and the call cache are theirs). See sweep.h for the folder layout. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch/sweep_int.h"
#include "core/buf.h"
#include "core/csv.h"
#include "core/file.h"
#include "medtrust/check.h"
#include "medtrust/core.h"
#include "medtrust/store.h"

#define MAX_ARGS 160

/* Names the papers' figures use for mediqa's options. */
static const char *const aliases[][2] = {
    {"eval_avg", "accept-mean"},
    {"eval_min", "accept-min"},
    {"model", "llm"},
    {"react_steps", "steps"},
    {"reflection_rounds", "rounds"},
    {NULL, NULL},
};

/* ==== The grid ==== */

/* 'key' as a mediqa option name: an alias, or '_' read as '-'. */
static char *option_of(const char *key)
{
    char *o;
    size_t i;

    for (i = 0; aliases[i][0]; i++)
        if (strcmp(aliases[i][0], key) == 0)
            return mt_strdup(aliases[i][1]);
    o = mt_strdup(key);
    for (i = 0; o && o[i]; i++)
        if (o[i] == '_')
            o[i] = '-';
    return o;
}

static enum mt_status axis_values(struct axis *x, const char *list,
                                  struct mt_error *err)
{
    char *dup = mt_strdup(list), *save = NULL, *tok;

    if (!dup)
        return MT_ENOMEM;
    for (tok = strtok_r(dup, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char **nv = mt_realloc(x->vals, (x->nvals + 1) * sizeof *nv);

        if (!nv || !(nv[x->nvals] = mt_strdup(tok))) {
            mt_free(nv ? NULL : dup);
            x->vals = nv ? nv : x->vals;
            mt_free(dup);
            return MT_ENOMEM;
        }
        x->vals = nv;
        x->nvals++;
    }
    mt_free(dup);
    if (x->nvals == 0)
        return mt_fail(err, MT_EINVAL, "--grid %s: no values", x->key);
    return MT_OK;
}

static enum mt_status axis_parse(struct sweep *s, const char *spec,
                                 struct mt_error *err)
{
    const char *eq = strchr(spec, '=');
    struct axis *x = &s->ax[s->nax];
    size_t i;

    if (!eq || eq == spec)
        return mt_fail(err, MT_EINVAL, "--grid '%s': write KEY=V1,V2,...",
                       spec);
    if (s->nax == MAX_AXES)
        return mt_fail(err, MT_EINVAL, "at most %d --grid keys", MAX_AXES);
    x->key = mt_strndup(spec, (size_t)(eq - spec));
    x->option = x->key ? option_of(x->key) : NULL;
    if (!x->option)
        return MT_ENOMEM;
    s->nax++;
    if (!s->p->option_ok(s->p->user, x->option))
        return mt_fail(err, MT_EINVAL,
                       "--grid %s: not a mediqa option with a value a sweep "
                       "can vary (see medtrust mediqa --help)",
                       x->key);
    for (i = 0; i + 1 < s->nax; i++)
        if (strcmp(s->ax[i].option, x->option) == 0)
            return mt_fail(err, MT_EINVAL, "--grid %s given twice", x->key);
    return axis_values(x, eq + 1, err);
}

/* Value index of axis k in cell c (the last axis varies fastest). */
static size_t cell_value(const struct sweep *s, size_t c, size_t k)
{
    size_t j;

    for (j = s->nax; j-- > k + 1;)
        c /= s->ax[j].nvals;
    return c % s->ax[k].nvals;
}

static void axes_free(struct sweep *s)
{
    size_t i, j;

    for (i = 0; i < s->nax; i++) {
        for (j = 0; j < s->ax[i].nvals; j++)
            mt_free(s->ax[i].vals[j]);
        mt_free(s->ax[i].vals);
        mt_free(s->ax[i].key);
        mt_free(s->ax[i].option);
    }
    s->nax = 0;
}

/* ==== Arguments of a cell's mediqa run ==== */

struct argv_buf {
    const char *v[MAX_ARGS + 1];
    char *owned[MAX_ARGS];
    size_t n, nowned;
};

static int argv_push(struct argv_buf *b, const char *s)
{
    if (b->n >= MAX_ARGS)
        return -1;
    b->v[b->n++] = s;
    b->v[b->n] = NULL;
    return 0;
}

static int argv_own(struct argv_buf *b, char *s)
{
    if (!s || b->nowned >= MAX_ARGS) {
        mt_free(s);
        return -1;
    }
    b->owned[b->nowned++] = s;
    return argv_push(b, s);
}

static void argv_free(struct argv_buf *b)
{
    size_t i;

    for (i = 0; i < b->nowned; i++)
        mt_free(b->owned[i]);
    memset(b, 0, sizeof *b);
}

static int swept(const struct sweep *s, const char *option)
{
    size_t k;

    for (k = 0; k < s->nax; k++)
        if (strcmp(s->ax[k].option, option) == 0)
            return 1;
    return 0;
}

/* "--NAME[=VALUE]"'s option name, cut into buf. */
static const char *arg_option(const char *arg, char *buf, size_t n)
{
    size_t k = strcspn(arg + 2, "=");

    snprintf(buf, n, "%.*s", (int)k, arg + 2);
    return buf;
}

/* The options every run shares: what the sweep was given (less what it
 * sets itself: the caller's base), less what the grid varies. */
static int push_base(struct argv_buf *b, const struct sweep *s)
{
    char name[256];
    size_t i;

    for (i = 0; i < s->p->nbase; i++) {
        const char *arg = s->p->base[i];

        if (swept(s, arg_option(arg, name, sizeof name)))
            continue;
        if (argv_push(b, arg) < 0)
            return -1;
    }
    return 0;
}

static int push_cell(struct argv_buf *b, const struct sweep *s, size_t c)
{
    size_t k;

    for (k = 0; k < s->nax; k++)
        if (argv_own(b, mtx_str_printf("--%s=%s", s->ax[k].option,
                                       s->ax[k].vals[cell_value(s, c, k)])) < 0)
            return -1;
    return 0;
}

/* ==== Files ==== */

static char *run_dir(const char *out, size_t c, unsigned long r)
{
    return mtx_str_printf("%s/cell-%03zu/run-%lu", out, c + 1, r + 1);
}

static enum mt_status mkdirs(const char *path, struct mt_error *err)
{
    char p[4096];
    size_t i, n = strlen(path);

    if (n >= sizeof p)
        return mt_fail(err, MT_EINVAL, "%s: path too long", path);
    memcpy(p, path, n + 1);
    for (i = 1; i <= n; i++)
        if (p[i] == '/' || p[i] == '\0') {
            char ch = p[i];

            p[i] = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST)
                return mt_fail(err, MT_EIO, "%s: cannot create (%s)", p,
                               strerror(errno));
            p[i] = ch;
        }
    return MT_OK;
}

int mtx_sweep_exists(const char *dir, const char *name)
{
    char p[4200];
    struct stat st;

    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

enum mt_status mtx_sweep_json_write(const char *path, const json_t *o,
                                    struct mt_error *err)
{
    char *s = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    enum mt_status st;

    if (!s)
        return MT_ENOMEM;
    st = mtx_file_write_atomic(path, s, strlen(s), err);
    free(s);
    return st;
}

json_t *mtx_sweep_json_read(const char *path, struct mt_error *err)
{
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);

    if (!o)
        mt_fail(err, MT_EPARSE, "%s:%d: %s", path, je.line, je.text);
    return o;
}

/* ==== The sample ==== */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The current record as one RFC 4180 line, quoting where needed. */
static enum mt_status record_line(struct mt_csv *c, struct mt_buf *b)
{
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < mtx_csv_nfields(c); i++) {
        struct mt_str f = mtx_csv_field(c, i);

        if (i)
            st = mtx_buf_putc(b, ',');
        if (st == MT_OK)
            st = mtx_csv_put_field(b, f.p, f.n);
    }
    return st == MT_OK ? mtx_buf_append(b, "\r\n", 2) : st;
}

void mtx_sweep_rows_free(struct rows *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        mt_free(r->line[i]);
        mt_free(r->id[i]);
    }
    mt_free(r->line);
    mt_free(r->id);
    memset(r, 0, sizeof *r);
}

static enum mt_status rows_push(struct rows *r, struct mt_csv *c, long idcol)
{
    struct mt_buf b = MT_BUF_INIT(SWEEP_BUF_MAX);
    char **nl = mt_realloc(r->line, (r->n + 1) * sizeof *nl);
    char **ni = nl ? mt_realloc(r->id, (r->n + 1) * sizeof *ni) : NULL;
    struct mt_str id;

    if (nl)
        r->line = nl;
    if (ni)
        r->id = ni;
    if (!nl || !ni || record_line(c, &b) != MT_OK) {
        mtx_buf_free(&b);
        return MT_ENOMEM;
    }
    id = (size_t)idcol < mtx_csv_nfields(c) ? mtx_csv_field(c, (size_t)idcol)
                                            : mtx_str_from("");
    r->id[r->n] = mt_strndup(id.p, id.n);
    r->line[r->n++] = mtx_buf_take(&b);
    return r->id[r->n - 1] ? MT_OK : MT_ENOMEM;
}

enum mt_status mtx_sweep_rows_read(const char *path, struct rows *r,
                                   struct mt_error *err)
{
    struct mt_csv *c = NULL;
    long idcol = -1;
    int got = 1;
    enum mt_status st = mtx_csv_open(path, NULL, &c, err);

    while (st == MT_OK && (st = mtx_csv_next(c, &got, err)) == MT_OK && got) {
        if (r->n == 0 && (idcol = mtx_csv_find(c, "Text ID")) < 0)
            st = mt_fail(err, MT_EPARSE,
                         "%s:1: no \"Text ID\" column: not a MEDEC-format CSV",
                         path);
        if (st == MT_OK)
            st = rows_push(r, c, idcol);
    }
    mtx_csv_close(c);
    if (st == MT_OK && r->n < 2)
        st = mt_fail(err, MT_EPARSE, "%s: no notes", path);
    return st;
}

/* Writes the header and rows 'pick' (in file order) to path. */
enum mt_status mtx_sweep_rows_write(const struct rows *r, const size_t *pick,
                                    size_t n, const char *path,
                                    struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT(SWEEP_BUF_MAX);
    enum mt_status st = mtx_buf_append_str(&b, r->line[0]);
    size_t i;

    for (i = 0; st == MT_OK && i < n; i++)
        st = mtx_buf_append_str(&b, r->line[pick[i]]);
    if (st == MT_OK)
        st = mtx_file_write_atomic(path, b.data, b.len, err);
    mtx_buf_free(&b);
    return st;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return x < y ? -1 : x > y;
}

/* Draws 'sample' notes (all when 0 or more than there are) with the seed,
 * a partial Fisher-Yates shuffle, kept in file order. *ids gets them. */
static enum mt_status sample_write(struct sweep *s, json_t **ids,
                                   struct mt_error *err)
{
    struct rows r = {0};
    size_t *pick = NULL, n, i, k;
    uint64_t x = s->seed;
    enum mt_status st = mtx_sweep_rows_read(s->p->data, &r, err);

    n = r.n > 0 ? r.n - 1 : 0;
    k = s->sample && s->sample < n ? s->sample : n;
    if (st == MT_OK && !(pick = mt_malloc((n ? n : 1) * sizeof *pick)))
        st = MT_ENOMEM;
    for (i = 0; st == MT_OK && i < n; i++)
        pick[i] = i + 1;
    for (i = 0; st == MT_OK && i < k; i++) {
        size_t j = i + (size_t)(splitmix64(&x) % (n - i)), t = pick[i];

        pick[i] = pick[j];
        pick[j] = t;
    }
    if (st == MT_OK) {
        qsort(pick, k, sizeof *pick, cmp_size);
        st = mtx_sweep_rows_write(&r, pick, k, s->sample_csv, err);
    }
    *ids = json_array();
    for (i = 0; st == MT_OK && i < k; i++)
        json_array_append_new(*ids, json_string(r.id[pick[i]]));
    mt_free(pick);
    mtx_sweep_rows_free(&r);
    return st;
}

/* ==== The plan: OUT/sweep.json ==== */

static json_t *strs_json(const char *const *v, size_t n)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

json_t *mtx_sweep_axes_json(const struct sweep *s)
{
    json_t *a = json_array();
    size_t k;

    for (k = 0; a && k < s->nax; k++)
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:o}", "key", s->ax[k].key, "option",
                         s->ax[k].option, "values",
                         strs_json((const char *const *)s->ax[k].vals,
                                   s->ax[k].nvals)));
    return a;
}

/* One cell: {"params":{key:value},"args":["--opt=value",...]}. */
json_t *mtx_sweep_cell_json(const struct sweep *s, size_t c)
{
    struct argv_buf b = {0};
    json_t *params = json_object(), *o;
    size_t k;

    for (k = 0; k < s->nax; k++)
        json_object_set_new(params, s->ax[k].key,
                            json_string(s->ax[k].vals[cell_value(s, c, k)]));
    if (push_cell(&b, s, c) < 0) {
        argv_free(&b);
        json_decref(params);
        return NULL;
    }
    o = json_pack("{s:o,s:o}", "params", params, "args", strs_json(b.v, b.n));
    argv_free(&b);
    return o;
}

static json_t *plan_new(const struct sweep *s)
{
    struct argv_buf b = {0};
    json_t *cells = json_array(), *plan;
    size_t c;

    for (c = 0; cells && c < s->ncell; c++)
        json_array_append_new(cells, mtx_sweep_cell_json(s, c));
    if (push_base(&b, s) < 0) {
        argv_free(&b);
        json_decref(cells);
        return NULL;
    }
    plan = json_pack("{s:i,s:s,s:I,s:I,s:I,s:o,s:o,s:o}", "version", 1, "data",
                     s->p->data, "sample", (json_int_t)s->sample, "seed",
                     (json_int_t)s->seed, "runs", (json_int_t)s->runs, "axes",
                     mtx_sweep_axes_json(s), "base", strs_json(b.v, b.n),
                     "cells", cells);
    argv_free(&b);
    return plan;
}

/* Writes the plan and the sample, or on a rerun checks that OUT holds
 * the same sweep. */
static enum mt_status plan_settle(struct sweep *s, json_t *plan,
                                  struct mt_error *err)
{
    char path[4200];
    json_t *old, *ids = NULL;
    enum mt_status st;

    snprintf(path, sizeof path, "%s/sweep.json", s->out);
    if (mtx_sweep_exists(s->out, "sweep.json") &&
        mtx_sweep_exists(s->out, "sample.csv")) {
        if (!(old = mtx_sweep_json_read(path, err)))
            return MT_EPARSE;
        json_object_del(old, "notes");
        st = json_equal(old, plan)
                 ? MT_OK
                 : mt_fail(err, MT_EINVAL,
                           "%s holds a different sweep (other options, grid, "
                           "sample or seed): give another --out",
                           path);
        json_decref(old);
        return st;
    }
    st = s->replay ? MT_OK : sample_write(s, &ids, err);
    if (st == MT_OK && s->replay)
        ids = json_array();
    if (st == MT_OK) {
        json_t *w = json_deep_copy(plan);

        json_object_set_new(w, "notes", ids);
        ids = NULL;
        st = mtx_sweep_json_write(path, w, err);
        json_decref(w);
    }
    json_decref(ids);
    return st;
}

/* ==== Running a cell ==== */

static void push_json_strs(struct argv_buf *b, const json_t *a)
{
    size_t i;

    for (i = 0; i < json_array_size(a); i++)
        argv_push(b, json_string_value(json_array_get(a, i)));
}

/* mediqa over 'data' with the cell's options and the run's seed. */
int mtx_sweep_mediqa_run(const struct job *j, const char *data, const char *sub,
                         const char *trace)
{
    struct argv_buf b = {0};
    char seed[32], *out = mtx_str_printf("%s/mediqa.json", j->dir);
    int rc;

    snprintf(seed, sizeof seed, "--seed=%llu",
             (unsigned long long)json_integer_value(
                 json_object_get(j->plan, "seed")) +
                 j->r);
    argv_push(&b, "mediqa");
    push_json_strs(&b, json_object_get(j->plan, "base"));
    push_json_strs(&b, json_object_get(j->cell, "args"));
    argv_push(&b, seed);
    argv_push(&b, "--data");
    argv_push(&b, data);
    argv_push(&b, "--out");
    argv_push(&b, sub);
    argv_push(&b, "--trace");
    argv_push(&b, trace);
    argv_push(&b, "--resume");
    argv_push(&b, "--no-progress");
    if (argv_push(&b, "--json") < 0 || !out)
        rc = -1;
    else
        rc = j->s->p->run(j->s->p->user, b.v, out);
    mt_free(out);
    argv_free(&b);
    return rc;
}

/* `score --json` on the run's submission into score.json (atomically). */
static int score_run(const struct job *j)
{
    struct argv_buf b = {0};
    const char *const *x = j->s->p->score_args;
    char tmp[4300];
    int rc;

    snprintf(tmp, sizeof tmp, "%s.part", j->path[P_SCORE]);
    argv_push(&b, "score");
    argv_push(&b, "--ref");
    argv_push(&b, j->s->sample_csv);
    argv_push(&b, "--pred");
    argv_push(&b, j->path[P_SUB]);
    argv_push(&b, "--json");
    for (; x && *x; x++)
        argv_push(&b, *x);
    rc = j->s->p->run(j->s->p->user, b.v, tmp);
    if (rc == 0 && mtx_file_rename(tmp, j->path[P_SCORE]) != 0)
        rc = -1;
    argv_free(&b);
    return rc;
}

static enum mt_status stats_run(const struct job *j, struct mt_error *err)
{
    json_t *st = NULL;
    enum mt_status s = mtx_sweep_trace_stats(j->path[P_TRACE], &st, err);

    if (s == MT_OK)
        s = mtx_sweep_json_write(j->path[P_STATS], st, err);
    json_decref(st);
    return s;
}

/* What a child's exit status means for the sweep. */
enum mt_status mtx_sweep_child_status(const char *what, const struct job *j,
                                      int rc, struct mt_error *err)
{
    if (rc == 0 || (rc == 1 && strcmp(what, "mediqa") == 0))
        return MT_OK;
    if (rc >= 128)
        return mt_fail(err, MT_ECANCELED,
                       "%s of %s stopped by signal %d: rerun the same "
                       "command to finish the sweep",
                       what, j->dir, rc - 128);
    return mt_fail(err, MT_EINVAL, "%s of %s failed (exit %d): see above", what,
                   j->dir, rc);
}

static enum mt_status job_run(struct job *j, struct mt_error *err)
{
    int rc = 0;
    enum mt_status st = mkdirs(j->dir, err);
    char done[4200];

    if (st == MT_OK && json_object_get(j->cell, "replay_of"))
        st = mtx_sweep_replay_run(j, &rc, err);
    else if (st == MT_OK) {
        rc = mtx_sweep_mediqa_run(j, j->s->sample_csv, j->path[P_SUB],
                                  j->path[P_TRACE]);
        st = mtx_sweep_child_status("mediqa", j, rc, err);
    }
    if (st == MT_OK && rc == 1 && !mtx_sweep_exists(j->dir, "submission.txt"))
        st = mt_fail(err, MT_EINVAL,
                     "mediqa wrote no submission in %s: see its message "
                     "above",
                     j->dir);
    if (st == MT_OK && rc == 1)
        j->s->failed = 1; /* some notes failed: mediqa named them */
    if (st == MT_OK)
        st = mtx_sweep_child_status("score", j, score_run(j), err);
    if (st == MT_OK)
        st = stats_run(j, err);
    snprintf(done, sizeof done, "%s/done", j->dir);
    if (st == MT_OK)
        st = mtx_file_write_atomic(done, rc ? "failed\n" : "done\n", rc ? 7 : 5,
                                   err);
    return st;
}

/* ==== The summary and the report ==== */

static json_t *read_opt(const char *dir, const char *name)
{
    char path[4300];
    json_t *o;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    o = json_load_file(path, 0, NULL);
    return o ? o : json_null();
}

static json_t *run_summary(const struct sweep *s, const json_t *plan, size_t c,
                           unsigned long r)
{
    char *dir = run_dir(s->out, c, r);
    json_t *o;
    char done[16] = "";
    char path[4300];
    FILE *f;

    snprintf(path, sizeof path, "%s/done", dir ? dir : "");
    if ((f = fopen(path, "r"))) {
        if (!fgets(done, sizeof done, f))
            done[0] = '\0';
        fclose(f);
    }
    done[strcspn(done, "\n")] = '\0';
    o = json_pack(
        "{s:I,s:s,s:o,s:o,s:o}", "seed",
        json_integer_value(json_object_get(plan, "seed")) + (json_int_t)r,
        "status", done[0] ? done : "missing", "score",
        read_opt(dir, "score.json"), "stats", read_opt(dir, "stats.json"),
        "replay", read_opt(dir, "replay.json"));
    mt_free(dir);
    return o;
}

static enum mt_status corpus_count(const struct mt_store_counts *c, void *u)
{
    if (c->source)
        json_object_set_new(u, c->source, json_integer((json_int_t)c->chunks));
    return MT_OK;
}

/* Chunks per source of the corpus the runs searched, when there is one. */
static json_t *corpus_json(const struct sweep *s)
{
    const char *db = s->p->db;
    struct mt_store *st = NULL;
    struct mt_error err = {MT_OK, ""};
    json_t *o = json_object();

    if (!db || !mtx_sweep_exists(db, "store.db"))
        return o;
    if (mt_store_open(db, NULL, &st, &err) == MT_OK)
        mt_store_stats(st, corpus_count, o, &err);
    mt_store_close(st);
    return o;
}

static enum mt_status summary_write(const struct sweep *s, const json_t *plan,
                                    struct mt_error *err)
{
    const json_t *cells = json_object_get(plan, "cells");
    json_t *out = json_array(), *sum;
    char path[4200];
    size_t c;
    unsigned long r,
        runs = (unsigned long)json_integer_value(json_object_get(plan, "runs"));
    enum mt_status st;

    for (c = 0; c < json_array_size(cells); c++) {
        json_t *rs = json_array();

        for (r = 0; r < runs; r++)
            json_array_append_new(rs, run_summary(s, plan, c, r));
        json_array_append_new(
            out,
            json_pack("{s:I,s:O,s:O*,s:o}", "cell", (json_int_t)c + 1, "params",
                      json_object_get(json_array_get(cells, c), "params"),
                      "replay_of",
                      json_object_get(json_array_get(cells, c), "replay_of"),
                      "runs", rs));
    }
    sum = json_pack("{s:O,s:O,s:o,s:o}", "axes", json_object_get(plan, "axes"),
                    "runs", json_object_get(plan, "runs"), "cells", out,
                    "corpus", corpus_json(s));
    snprintf(path, sizeof path, "%s/summary.json", s->out);
    st = mtx_sweep_json_write(path, sum, err);
    snprintf(path, sizeof path, "%s/report.html", s->out);
    if (st == MT_OK)
        st = mtx_sweep_report_write(path, sum, err);
    json_decref(sum);
    return st;
}

/* ==== The sweep ==== */

static void progress(const struct sweep *s, uint64_t done, uint64_t total)
{
    if (s->p->on_progress)
        s->p->on_progress(s->p->user, done, total);
}

static enum mt_status run_all(struct sweep *s, const json_t *plan,
                              struct mt_error *err)
{
    const json_t *cells = json_object_get(plan, "cells");
    unsigned long runs =
        (unsigned long)json_integer_value(json_object_get(plan, "runs"));
    uint64_t total = (uint64_t)json_array_size(cells) * runs, done = 0;
    enum mt_status st = MT_OK;
    size_t c;
    unsigned long r;

    progress(s, 0, total);
    for (c = 0; st == MT_OK && c < json_array_size(cells); c++)
        for (r = 0; st == MT_OK && r < runs; r++) {
            struct job j = {s,    plan, json_array_get(cells, c), c, r,
                            NULL, {""}};

            if (!(j.dir = run_dir(s->out, c, r)))
                return MT_ENOMEM;
            snprintf(j.path[P_SUB], sizeof j.path[0], "%s/submission.txt",
                     j.dir);
            snprintf(j.path[P_TRACE], sizeof j.path[0], "%s/trace.jsonl",
                     j.dir);
            snprintf(j.path[P_SCORE], sizeof j.path[0], "%s/score.json", j.dir);
            snprintf(j.path[P_STATS], sizeof j.path[0], "%s/stats.json", j.dir);
            if (!mtx_sweep_exists(j.dir, "done"))
                st = job_run(&j, err);
            mt_free(j.dir);
            progress(s, ++done, total);
        }
    return st;
}

static enum mt_status sweep_setup(struct sweep *s,
                                  const struct mtx_sweep_params *p,
                                  struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t i;

    s->p = p;
    s->out = p->out;
    s->replay = p->replay;
    s->runs = p->runs ? p->runs : 1;
    s->sample = p->sample;
    s->seed = p->seed;
    if (!s->out || (!s->replay && !p->data))
        return mt_fail(err, MT_EINVAL,
                       "--out and --data (or --replay DIR) are required");
    for (i = 0; st == MT_OK && i < p->ngrid; i++)
        st = axis_parse(s, p->grid[i], err);
    for (s->ncell = 1, i = 0; st == MT_OK && i < s->nax; i++)
        s->ncell *= s->ax[i].nvals;
    if (st == MT_OK && s->ncell > 10000)
        st = mt_fail(err, MT_EINVAL, "the grid has %zu cells: at most 10000",
                     s->ncell);
    snprintf(s->sample_csv, sizeof s->sample_csv, "%s/sample.csv", s->out);
    return st == MT_OK ? mkdirs(s->out, err) : st;
}

enum mt_status mtx_sweep_run(const struct mtx_sweep_params *p, int *failed,
                             size_t *cells, unsigned long *runs,
                             struct mt_error *err)
{
    struct sweep s;
    json_t *plan = NULL;
    enum mt_status st;

    memset(&s, 0, sizeof s);
    st = sweep_setup(&s, p, err);
    if (st == MT_OK && s.replay)
        st = mtx_sweep_plan_replay(&s, &plan, err);
    else if (st == MT_OK && !(plan = plan_new(&s)))
        st = MT_ENOMEM;
    if (st == MT_OK && s.replay)
        st = mtx_sweep_replay_sample(&s, err);
    if (st == MT_OK)
        st = plan_settle(&s, plan, err);
    if (st == MT_OK)
        st = run_all(&s, plan, err);
    if (st == MT_OK)
        st = summary_write(&s, plan, err);
    *failed = s.failed;
    *cells = json_array_size(json_object_get(plan, "cells"));
    *runs = (unsigned long)json_integer_value(json_object_get(plan, "runs"));
    json_decref(plan);
    axes_free(&s);
    return st;
}
