/* The note batch runner (medtrust/batch.h): notes -> checker -> trace and
 * journal -> submission. Notes are checked on mtx_work_run's threads; each
 * finished note's trace line is written and synced, then its journal
 * line, so a killed run resumes without redoing or losing one and its
 * trace ends with one line per note. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "batch/journal.h"
#include "batch/note.h"
#include "core/buf.h"
#include "core/file.h"
#include "medtrust/batch.h"
#include "medtrust/core.h"

struct mt_batch {
    struct mtx_note *notes;
    size_t n;
    struct mt_batch_progress prog;
};

/* One run's state; q.mu guards the notes' results, the counts and the
 * trace file. */
struct run {
    struct mt_batch *b;
    struct mt_agent *agent;
    const struct mt_batch_params *p;
    struct mtx_work_queue q;
    struct mtx_journal *journal;
    FILE *trace;
};

void mt_batch_default_params(struct mt_batch_params *p)
{
    memset(p, 0, sizeof *p);
    p->jobs = 4;
    p->journal_failed = 1;
}

/* ==== Notes ==== */

static enum mt_status batch_take(struct mtx_note *v, size_t n,
                                 struct mt_batch **out, struct mt_error *err)
{
    *out = mt_calloc(1, sizeof **out);
    if (!*out) {
        mtx_notes_free(v, n);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    (*out)->notes = v;
    (*out)->n = n;
    (*out)->prog.total = n;
    return MT_OK;
}

enum mt_status mt_batch_open_csv(const char *path, size_t limit,
                                 struct mt_batch **out, struct mt_error *err)
{
    struct mtx_note *v = NULL;
    size_t n = 0;
    enum mt_status st = mtx_batch_notes_load(path, limit, &v, &n, err);

    *out = NULL;
    return st == MT_OK ? batch_take(v, n, out, err) : st;
}

enum mt_status mt_batch_open_csv_text(const char *name, const char *text,
                                      size_t len, size_t max,
                                      struct mt_batch **out,
                                      struct mt_error *err)
{
    struct mtx_note *v = NULL;
    size_t n = 0;
    enum mt_status st =
        mtx_batch_notes_load_text(name, text, len, max, &v, &n, err);

    *out = NULL;
    return st == MT_OK ? batch_take(v, n, out, err) : st;
}

void mt_batch_free(struct mt_batch *b)
{
    if (!b)
        return;
    mtx_notes_free(b->notes, b->n);
    mt_free(b);
}

size_t mt_batch_count(const struct mt_batch *b)
{
    return b->n;
}

void mt_batch_progress_get(const struct mt_batch *b,
                           struct mt_batch_progress *out)
{
    *out = b->prog;
}

static void note_view(const struct mtx_note *x, struct mt_batch_note *out)
{
    out->id = x->id;
    out->line = x->line;
    out->error = x->error;
    out->failed = x->failed;
    out->fallback = x->fallback;
    out->resumed = x->resumed;
}

enum mt_status mt_batch_note_get(const struct mt_batch *b, size_t i,
                                 struct mt_batch_note *out)
{
    if (i >= b->n)
        return MT_EINVAL;
    note_view(&b->notes[i], out);
    return MT_OK;
}

/* ==== The submission ==== */

enum mt_status mt_batch_submission(const struct mt_batch *b, int with_failed,
                                   char **out, struct mt_error *err)
{
    struct mt_buf s = MT_BUF_INIT((size_t)1 << 31);
    enum mt_status st = mtx_buf_reserve(&s, 1); /* "" when no line */
    size_t i;

    for (i = 0; st == MT_OK && i < b->n; i++)
        if (b->notes[i].line && (with_failed || !b->notes[i].failed))
            st = mtx_buf_printf(&s, "%s\n", b->notes[i].line);
    *out = st == MT_OK ? mtx_buf_take(&s) : NULL;
    mtx_buf_free(&s);
    return st == MT_OK ? MT_OK
                       : mt_fail(err, st, "the submission: out of memory");
}

enum mt_status mt_batch_write_submission(const struct mt_batch *b,
                                         const char *path, int with_failed,
                                         struct mt_error *err)
{
    return mtx_batch_notes_write(b->notes, b->n, path, with_failed, err);
}

/* ==== Checking ==== */

/* The note's trace line, written and synced before its journal line: a
 * note whose trace line could not be written stays out of the journal,
 * so a resume checks it again and the trace misses nothing. */
static enum mt_status trace_write(struct run *r, const char *line,
                                  struct mt_error *err)
{
    int bad;

    pthread_mutex_lock(&r->q.mu);
    bad = fprintf(r->trace, "%s\n", line) < 0 ||
          mtx_file_flush_sync(r->trace, 1) != 0;
    pthread_mutex_unlock(&r->q.mu);
    if (!bad)
        return MT_OK;
    return mt_fail(err, mtx_file_errno_status(errno),
                   "--trace %s: cannot write: %s: free space on its disk, "
                   "then run again with --resume",
                   r->p->trace_path, strerror(errno));
}

static enum mt_status journal_write(struct run *r, const struct mtx_note *x,
                                    const struct mtx_batch_outcome *o,
                                    struct mt_error *err)
{
    if (!r->journal || (o->failed && !r->p->journal_failed))
        return MT_OK;
    return mtx_journal_append(r->journal, x->id, o->line,
                              o->failed ? o->err.msg : NULL, err);
}

/* Gives note x its outcome; call with q.mu held. */
static void note_set(struct run *r, struct mtx_note *x,
                     struct mtx_batch_outcome *o, enum mt_status st)
{
    struct mt_batch_progress *p = &r->b->prog;

    mt_free(x->line);
    x->line = st == MT_OK ? o->line : NULL;
    if (st == MT_OK)
        o->line = NULL;
    x->failed = o->failed;
    x->fallback = o->fallback;
    mt_free(x->error);
    x->error = o->failed ? mt_strdup(o->err.msg) : NULL;
    mtx_batch_usage_add(&p->usage, &o->usage);
    p->failed += (size_t)o->failed;
    p->fallback += (size_t)o->fallback;
    p->checked++;
}

static void record(struct run *r, struct mtx_note *x,
                   struct mtx_batch_outcome *o)
{
    struct mt_error err = {MT_OK, ""};
    struct mt_batch_note view;
    enum mt_status st =
        o->line ? MT_OK : mt_fail(&err, MT_ENOMEM, "out of memory");

    if (st == MT_OK && r->trace)
        st = o->trace ? trace_write(r, o->trace, &err)
                      : mt_fail(&err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = journal_write(r, x, o, &err);
    pthread_mutex_lock(&r->q.mu);
    note_set(r, x, o, st);
    mtx_work_fail_locked(&r->q, st, &err);
    note_view(x, &view);
    if (r->p->on_progress)
        r->p->on_progress(r->p->user, &r->b->prog, &view);
    pthread_mutex_unlock(&r->q.mu);
}

/* Stops the run before note i when the caller asks: no new note starts. */
static int stop_asked(struct run *r)
{
    struct mt_error err = {MT_OK, ""};

    if (!r->p->cancelled || !r->p->cancelled(r->p->user))
        return 0;
    mt_fail(&err, MT_ECANCELED, "cancelled");
    pthread_mutex_lock(&r->q.mu);
    mtx_work_fail_locked(&r->q, MT_ECANCELED, &err);
    pthread_mutex_unlock(&r->q.mu);
    return 1;
}

static void check_note(size_t i, void *user)
{
    struct run *r = user;
    struct mtx_note *x = &r->b->notes[i];
    struct mtx_batch_outcome o;

    if (x->resumed || stop_asked(r))
        return;
    mtx_batch_check_note(r->agent, r->p->check, x->id, x->text, x->sents,
                         r->trace != NULL, &o);
    record(r, x, &o);
    mtx_batch_outcome_free(&o);
}

/* ==== Resuming ==== */

static void on_resumed(const char *id, const char *line, void *user)
{
    struct mt_batch *b = user;
    size_t i;

    for (i = 0; i < b->n; i++) {
        if (b->notes[i].resumed || strcmp(b->notes[i].id, id) != 0)
            continue;
        b->notes[i].line = mt_strdup(line);
        b->notes[i].resumed = b->notes[i].line != NULL;
        b->prog.resumed += (size_t)b->notes[i].resumed;
        return;
    }
}

/* Whether trace line 'l' (n bytes) belongs to a note the journal kept. */
static int trace_keep(const struct mt_batch *b, const char *l, size_t n)
{
    json_t *o = json_loadb(l, n, 0, NULL);
    const char *id = json_string_value(json_object_get(o, "id"));
    size_t i;
    int keep = 0;

    for (i = 0; id && !keep && i < b->n; i++)
        keep = b->notes[i].resumed && strcmp(b->notes[i].id, id) == 0;
    json_decref(o);
    return keep;
}

/* A resumed run keeps the trace lines of the notes it replayed from the
 * journal and drops the rest (a torn last line of a killed run, the line
 * of a note whose journal line was never written, a failed note checked
 * again), so the trace ends with one line per note, as an unbroken run's.
 * The file is replaced atomically. */
static enum mt_status trace_prune(const struct mt_batch *b, const char *path,
                                  struct mt_error *err)
{
    struct mt_buf in = MT_BUF_INIT((size_t)1 << 32);
    struct mt_buf out = MT_BUF_INIT((size_t)1 << 32);
    enum mt_status st = mtx_file_read_all(path, &in, err);
    size_t i = 0;

    if (st == MT_ENOTFOUND)
        return MT_OK;
    while (st == MT_OK && i < in.len) {
        const char *nl = memchr(in.data + i, '\n', in.len - i);
        size_t n = nl ? (size_t)(nl - in.data) - i : 0;
        if (!nl)
            break; /* torn */
        if (trace_keep(b, in.data + i, n))
            st = mtx_buf_append(&out, in.data + i, n + 1);
        i += n + 1;
    }
    if (st == MT_OK)
        st =
            mtx_file_write_atomic(path, out.data ? out.data : "", out.len, err);
    else if (st == MT_ENOMEM)
        mt_fail(err, st, "--trace %s: out of memory", path);
    mtx_buf_free(&in);
    mtx_buf_free(&out);
    return st;
}

/* Forgets what an earlier run on this batch found, so a run starts from
 * the notes alone (and, resuming, from the journal). */
static void batch_reset(struct mt_batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        struct mtx_note *x = &b->notes[i];

        mt_free(x->line);
        mt_free(x->error);
        x->line = x->error = NULL;
        x->resumed = x->failed = x->fallback = 0;
    }
    memset(&b->prog, 0, sizeof b->prog);
    b->prog.total = b->n;
}

/* Opens the journal (replaying it when resuming) and the trace. */
static enum mt_status run_open(struct run *r, struct mt_error *err)
{
    const struct mt_batch_params *p = r->p;
    const char *tp = p->trace_path;
    enum mt_status st = MT_OK;

    if (p->journal_path)
        st = mtx_journal_open(p->journal_path, p->resume, on_resumed, r->b,
                              &r->journal, err);
    if (st == MT_OK && tp && p->resume)
        st = trace_prune(r->b, tp, err);
    if (st == MT_OK && tp &&
        !(r->trace = mtx_file_fopen(tp, p->resume ? "a" : "w", 0644)))
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "--trace %s: cannot open: %s", tp, strerror(errno));
    return st;
}

/* Closes the journal and the trace; a trace that cannot be flushed fails
 * a run that had not failed. */
static enum mt_status run_close(struct run *r, enum mt_status st,
                                struct mt_error *err)
{
    int bad = r->trace && mtx_file_flush_sync(r->trace, 1) != 0;
    int e = errno;

    /* closed whether or not the flush failed, so its stream is freed */
    if (r->trace && fclose(r->trace) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    mtx_journal_close(r->journal);
    if (bad && st == MT_OK)
        st = mt_fail(err, mtx_file_errno_status(e),
                     "--trace %s: cannot write: %s", r->p->trace_path,
                     strerror(e));
    return st;
}

enum mt_status mt_batch_run(struct mt_batch *b, struct mt_agent *agent,
                            const struct mt_batch_params *p,
                            struct mt_error *err)
{
    struct mt_batch_params dp;
    struct run r;
    enum mt_status st;

    if (!p) {
        mt_batch_default_params(&dp);
        p = &dp;
    }
    if (p->jobs < 1 || p->jobs > 512)
        return mt_fail(err, MT_EINVAL, "jobs is %u: give 1..512", p->jobs);
    memset(&r, 0, sizeof r);
    r.b = b;
    r.agent = agent;
    r.p = p;
    batch_reset(b);
    mtx_work_init(&r.q, b->n);
    st = run_open(&r, err);
    if (st == MT_OK && p->on_progress)
        p->on_progress(p->user, &b->prog, NULL);
    if (st == MT_OK)
        st = mtx_work_run(&r.q, p->jobs, check_note, &r, err);
    st = run_close(&r, st, err);
    mtx_work_destroy(&r.q);
    return st;
}
