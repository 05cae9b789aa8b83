/* Log files under --data-dir: access.log (one JSON line per response) and
 * audit.log (who searched, scored or checked what, with hashes of the
 * input; never note text, passwords or tokens). Account events also go to
 * the store's audit table. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "medtrust/core.h"
#include "server/srv_int.h"

/* The data folder holds logs, batch uploads and results: an existing one
 * open to others is tightened to 0700, as a new one is made. */
static enum mt_status make_private(const char *dir, struct mt_error *err)
{
    struct stat sb;

    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return mt_fail(err, MT_EINVAL, "--data-dir %s: not a folder", dir);
    if ((sb.st_mode & 077) == 0)
        return MT_OK;
    if (chmod(dir, 0700) != 0)
        return mt_fail(err, MT_EIO,
                       "--data-dir %s: mode %03o lets others read it and "
                       "chmod 0700 failed: %s: give a folder you own",
                       dir, (unsigned)(sb.st_mode & 0777), strerror(errno));
    mt_log(MT_LOG_WARN, "--data-dir %s: mode was %03o; made it 0700", dir,
           (unsigned)(sb.st_mode & 0777));
    return MT_OK;
}

static enum mt_status open_one(struct mt_server *s, struct srv_log *l,
                               const char *name, struct mt_error *err)
{
    char path[4096];
    int fd;

    snprintf(path, sizeof path, "%s/%s", s->data_dir, name);
    /* 0600: the logs name accounts and addresses */
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        (void)fchmod(fd, 0600);
    l->f = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (fd >= 0 && !l->f)
        close(fd);
    if (!l->f)
        return mt_fail(err, MT_EIO, "%s: cannot open: %s", path,
                       strerror(errno));
    return MT_OK;
}

enum mt_status mtx_srv_logs_open(struct mt_server *s, struct mt_error *err)
{
    enum mt_status st;

    pthread_mutex_init(&s->access.mu, NULL);
    pthread_mutex_init(&s->audit.mu, NULL);
    if (!s->data_dir)
        return MT_OK;
    if (mkdir(s->data_dir, 0700) != 0 && errno != EEXIST)
        return mt_fail(err, MT_EIO, "%s: cannot create: %s", s->data_dir,
                       strerror(errno));
    st = make_private(s->data_dir, err);
    if (st == MT_OK)
        st = open_one(s, &s->access, "access.log", err);
    if (st == MT_OK)
        st = open_one(s, &s->audit, "audit.log", err);
    return st;
}

void mtx_srv_logs_close(struct mt_server *s)
{
    if (s->access.f)
        fclose(s->access.f);
    if (s->audit.f)
        fclose(s->audit.f);
    s->access.f = s->audit.f = NULL;
    pthread_mutex_destroy(&s->access.mu);
    pthread_mutex_destroy(&s->audit.mu);
}

static void timestamp(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ts.tv_nsec / 1000000 % 1000));
}

/* Writes o as one line and frees it. */
static void write_line(struct srv_log *l, json_t *o)
{
    size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;

    if (o && l->f) {
        pthread_mutex_lock(&l->mu);
        json_dumpf(o, l->f, flags);
        fputc('\n', l->f);
        fflush(l->f);
        pthread_mutex_unlock(&l->mu);
    }
    json_decref(o);
}

void mtx_srv_log_access(struct mt_server *s, const struct srv_req *rq,
                        const struct srv_resp *rs)
{
    /* milliseconds, rounded to microseconds */
    double ms = (double)(long)((mtx_clock_now() - rq->t0) * 1e6) / 1000.0;
    char ts[96];

    if (!s->access.f)
        return;
    timestamp(ts, sizeof ts);
    write_line(&s->access,
               json_pack("{s:s,s:s,s:s,s:s,s:i,s:I,s:f,s:s?}", "ts", ts,
                         "remote", rq->remote ? rq->remote : "", "method",
                         rq->method, "path", rq->path, "status",
                         (int)rs->status, "bytes", (json_int_t)rs->len, "ms",
                         ms, "user", rq->authed ? rq->user.name : NULL));
}

void mtx_srv_audit(struct mt_server *s, struct srv_lease *l,
                   const struct srv_req *rq, const char *action, json_t *detail)
{
    const char *who = rq->authed ? rq->user.name : NULL;
    char *txt = NULL;
    char ts[96];
    json_t *o;

    if (!detail)
        detail = json_object();
    if (l && detail) {
        txt = json_dumps(detail, JSON_COMPACT | JSON_PRESERVE_ORDER);
        mt_audit_add(l->state, rq->authed ? rq->user.id : 0, who, action, txt,
                     NULL);
    }
    if (txt) {
        json_malloc_t m;
        json_free_t f;
        json_get_alloc_funcs(&m, &f);
        f(txt);
    }
    timestamp(ts, sizeof ts);
    o = json_pack("{s:s,s:s?,s:s,s:s,s:o?}", "ts", ts, "user", who, "remote",
                  rq->remote ? rq->remote : "", "action", action, "detail",
                  detail);
    write_line(&s->audit, o);
}
