/* Append-only JSONL journal with fdatasync per record, and atomic file
 * replacement for the final submission. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <jansson.h>

#include "batch/journal.h"
#include "core/buf.h"
#include "core/file.h"
#include "medtrust/core.h"

struct mtx_journal {
    int fd;
    char *path;
    pthread_mutex_t mu;
};

/* Replays complete lines; returns the length of the good prefix. */
static size_t replay(const char *d, size_t n, mtx_journal_fn fn, void *user)
{
    size_t i = 0;
    size_t good = 0;

    while (i < n) {
        const char *nl = memchr(d + i, '\n', n - i);
        json_t *o;

        if (!nl)
            break; /* torn: the crash came mid-write */
        o = json_loadb(d + i, (size_t)(nl - (d + i)), 0, NULL);
        if (o && json_is_string(json_object_get(o, "id")) &&
            json_is_string(json_object_get(o, "line")) &&
            !json_object_get(o, "failed"))
            fn(json_string_value(json_object_get(o, "id")),
               json_string_value(json_object_get(o, "line")), user);
        json_decref(o);
        i = (size_t)(nl - d) + 1;
        good = i;
    }
    return good;
}

static enum mt_status load(int fd, mtx_journal_fn fn, void *user,
                           struct mt_error *err, const char *path)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 31);
    char chunk[65536];
    ssize_t k;
    size_t good;
    enum mt_status st = MT_OK;

    while (st == MT_OK && (k = read(fd, chunk, sizeof chunk)) > 0)
        st = mtx_buf_append(&b, chunk, (size_t)k);
    if (st == MT_OK && b.len > 0) {
        good = replay(b.data, b.len, fn, user);
        if (good < b.len && ftruncate(fd, (off_t)good) != 0)
            st = MT_EIO;
    }
    mtx_buf_free(&b);
    if (st != MT_OK)
        return mt_fail(err, st, "%s: cannot read the journal", path);
    return lseek(fd, 0, SEEK_END) < 0 ? mt_fail(err, MT_EIO, "%s: seek", path)
                                      : MT_OK;
}

/* Opens without O_TRUNC, so a run refused by the lock leaves the
 * other's journal whole, then empties it once the lock is held. */
static enum mt_status open_locked(struct mtx_journal *j, const char *path,
                                  struct mt_error *err)
{
    j->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (j->fd < 0)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    if (flock(j->fd, LOCK_EX | LOCK_NB) != 0)
        return mt_fail(err, MT_EIO, "%s: %s", path,
                       errno == EWOULDBLOCK
                           ? "another run is writing this output (its "
                             "journal is locked); wait for it to finish"
                           : strerror(errno));
    return MT_OK;
}

enum mt_status mtx_journal_open(const char *path, int resume, mtx_journal_fn fn,
                                void *user, struct mtx_journal **out,
                                struct mt_error *err)
{
    struct mtx_journal *j = mt_calloc(1, sizeof *j);
    enum mt_status st;

    if (!j || !(j->path = mt_strdup(path))) {
        mt_free(j);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&j->mu, NULL);
    st = open_locked(j, path, err);
    if (st == MT_OK && resume)
        st = load(j->fd, fn, user, err, path);
    else if (st == MT_OK && ftruncate(j->fd, 0) != 0)
        st = mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    if (st != MT_OK) {
        mtx_journal_close(j);
        return st;
    }
    *out = j;
    return MT_OK;
}

/* Counts one line of a journal being surveyed. */
static void count_line(const char *line, size_t n, size_t *done, size_t *failed)
{
    json_t *o = json_loadb(line, n, 0, NULL);

    if (o && json_is_string(json_object_get(o, "id")))
        *(json_object_get(o, "failed") ? failed : done) += 1;
    json_decref(o);
}

int mtx_journal_count(const char *path, size_t *done, size_t *failed)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;

    *done = *failed = 0;
    if (!f)
        return -1;
    if (flock(fileno(f), LOCK_SH | LOCK_NB) != 0) {
        fclose(f); /* a run holds it: mtx_journal_open says so */
        return -1;
    }
    while ((n = getline(&line, &cap, f)) > 0)
        if (line[n - 1] == '\n') /* a torn last line is no note */
            count_line(line, (size_t)n - 1, done, failed);
    free(line);
    fclose(f);
    return 0;
}

enum mt_status mtx_journal_append(struct mtx_journal *j, const char *id,
                                  const char *line, const char *failed,
                                  struct mt_error *err)
{
    json_t *o = json_pack("{s:s,s:s}", "id", id, "line", line);

    if (o && failed) { /* true when the reason is not valid UTF-8 */
        json_t *f = json_string(failed);

        json_object_set_new(o, "failed", f ? f : json_true());
    }
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 30);
    enum mt_status st = s ? mtx_buf_printf(&b, "%s\n", s) : MT_ENOMEM;
    int e = 0;

    json_decref(o);
    mt_free(s);
    if (st == MT_OK) {
        pthread_mutex_lock(&j->mu);
        st = mtx_file_write_all(j->fd, b.data, b.len);
        if (st == MT_OK && mtx_file_fdatasync(j->fd) != 0)
            st = MT_EWRITE;
        e = errno;
        if (st == MT_EWRITE) /* a part line is cut off again on --resume */
            st = mtx_file_errno_status(e);
        pthread_mutex_unlock(&j->mu);
    }
    mtx_buf_free(&b);
    if (st == MT_ENOMEM)
        return mt_fail(err, st, "%s: cannot record note %s: out of memory",
                       j->path, id);
    if (st != MT_OK)
        return mt_fail(err, st, "%s: cannot record note %s: %s", j->path, id,
                       strerror(e));
    return MT_OK;
}

void mtx_journal_close(struct mtx_journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    pthread_mutex_destroy(&j->mu);
    mt_free(j->path);
    mt_free(j);
}

/* ==== Work queue ==== */

void mtx_work_init(struct mtx_work_queue *q, size_t n)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    q->n = n;
}

void mtx_work_destroy(struct mtx_work_queue *q)
{
    pthread_mutex_destroy(&q->mu);
}

void mtx_work_fail_locked(struct mtx_work_queue *q, enum mt_status st,
                          const struct mt_error *err)
{
    if (st == MT_OK || q->fatal != MT_OK)
        return;
    q->fatal = st;
    q->fatal_err = *err;
}

struct work_arg {
    struct mtx_work_queue *q;
    mtx_work_fn fn;
    void *user;
};

static void *work_thread(void *arg)
{
    struct work_arg *w = arg;

    for (;;) {
        size_t i;

        pthread_mutex_lock(&w->q->mu);
        i = w->q->fatal == MT_OK && w->q->next < w->q->n ? w->q->next++
                                                         : (size_t)-1;
        pthread_mutex_unlock(&w->q->mu);
        if (i == (size_t)-1)
            return NULL;
        w->fn(i, w->user);
    }
}

enum mt_status mtx_work_run(struct mtx_work_queue *q, unsigned jobs,
                            mtx_work_fn fn, void *user, struct mt_error *err)
{
    struct work_arg w = {q, fn, user};
    pthread_t *t = mt_calloc(jobs ? jobs : 1, sizeof *t);
    unsigned started = 0;
    unsigned i;

    if (!t)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < jobs; i++)
        if (pthread_create(&t[started], NULL, work_thread, &w) == 0)
            started++;
    if (started == 0)
        work_thread(&w);
    for (i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    mt_free(t);
    if (q->fatal != MT_OK)
        *err = q->fatal_err;
    return q->fatal;
}

char *mtx_work_line(const char *id, char *result, json_t *failure)
{
    json_t *jid = json_string(id);
    char *ids = jid ? json_dumps(jid, JSON_ENCODE_ANY) : NULL;
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 30);
    char *s = NULL;

    if (!result && failure)
        s = json_dumps(failure, JSON_COMPACT | JSON_PRESERVE_ORDER);
    else if (ids && result && result[0] == '{' &&
             mtx_buf_printf(&b, "{\"id\":%s,%s", ids, result + 1) == MT_OK)
        s = mtx_buf_take(&b);
    json_decref(failure);
    json_decref(jid);
    mt_free(ids);
    mt_free(result);
    mtx_buf_free(&b);
    return s;
}

enum mt_status mtx_work_write_lines(const char *path, size_t n,
                                    mtx_work_line_fn line, void *user,
                                    struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 31);
    enum mt_status st = mtx_buf_reserve(&b, 1);
    size_t i;

    for (i = 0; st == MT_OK && i < n; i++) {
        const char *s = line(i, user);

        if (s)
            st = mtx_buf_printf(&b, "%s\n", s);
    }
    if (st == MT_OK)
        st = mtx_file_write_atomic(path, b.data, b.len, err);
    else
        mt_fail(err, st, "%s: out of memory", path);
    mtx_buf_free(&b);
    return st;
}
