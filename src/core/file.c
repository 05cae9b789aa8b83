/* The one file layer: every durable write, fsync and rename of our own
 * files (SQLite's go through its VFS), with I/O-fault injection for tests;
 * atomic file replacement (temp file, fsync, rename, fsync of the folder)
 * on top of it. */
#define _GNU_SOURCE /* fopencookie: streams whose writes come through here */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/file.h"
#include "core/file_int.h"
#include "medtrust/core.h"

/* ==== Fault injection ==== */

/* After io_after more operations (write, fsync, rename) every one fails
 * with io_errno, as a disk that filled up stays full; -1: off. */
static atomic_long io_after = -1;
static atomic_long io_count;
static atomic_long io_failed;
static atomic_int io_errno = ENOSPC;
static pthread_once_t io_env_once = PTHREAD_ONCE_INIT;

/* MEDTRUST_IO_FAIL=N[:ENOSPC|EIO] for tests of the real binary. */
static void io_env(void)
{
    const char *v = getenv("MEDTRUST_IO_FAIL");
    char *end;
    long n;

    if (!v || !*v)
        return;
    n = strtol(v, &end, 10);
    if (end == v || n < 0)
        return;
    if (*end == ':' && strcmp(end + 1, "EIO") == 0)
        atomic_store(&io_errno, EIO);
    atomic_store(&io_after, n);
}

void mt_io_fail_after(long n, int errnum)
{
    pthread_once(&io_env_once, io_env);
    atomic_store(&io_count, 0);
    atomic_store(&io_failed, 0);
    atomic_store(&io_errno, errnum ? errnum : ENOSPC);
    atomic_store(&io_after, n < 0 ? -1 : n);
}

void mt_io_fail_reset(void)
{
    mt_io_fail_after(-1, ENOSPC);
}

long mt_io_failures(void)
{
    return atomic_load(&io_failed);
}

long mt_io_ops(void)
{
    return atomic_load(&io_count);
}

/* Counts one operation; nonzero (errno set) when it is to fail. */
static int io_fault(void)
{
    long after;

    pthread_once(&io_env_once, io_env);
    after = atomic_load(&io_after);
    if (atomic_fetch_add(&io_count, 1) < after || after < 0)
        return 0;
    atomic_fetch_add(&io_failed, 1);
    errno = atomic_load(&io_errno);
    return 1;
}

/* ==== The operations ==== */

enum mt_status mtx_file_errno_status(int e)
{
    return e == ENOSPC || e == EIO || e == EDQUOT || e == EFBIG || e == EROFS
               ? MT_EWRITE
               : MT_EIO;
}

/* In crash-test mode (core/file_int.h) every operation runs alone and
 * may be the one at which the power goes. */
static int op_begin(void)
{
    if (!mtx_crash_on())
        return 0;
    mtx_crash_lock();
    mtx_crash_step();
    return 1;
}

static void op_end(int crash)
{
    if (crash)
        mtx_crash_unlock();
}

static enum mt_status write_at(int fd, const char *c, size_t n, off_t off,
                               int positioned)
{
    while (n > 0) {
        ssize_t w = positioned ? pwrite(fd, c, n, off) : write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return MT_EWRITE;
        }
        c += w;
        off += w;
        n -= (size_t)w;
    }
    return MT_OK;
}

static enum mt_status write_op(int fd, const void *p, size_t n, off_t off,
                               int positioned)
{
    enum mt_status st;
    int crash;

    if (n == 0)
        return MT_OK;
    crash = op_begin();
    if (crash)
        mtx_crash_track(fd);
    st = io_fault() ? MT_EWRITE : write_at(fd, p, n, off, positioned);
    op_end(crash);
    return st;
}

enum mt_status mtx_file_write_all(int fd, const void *p, size_t n)
{
    return write_op(fd, p, n, 0, 0);
}

enum mt_status mtx_file_pwrite_all(int fd, const void *p, size_t n, off_t off)
{
    return write_op(fd, p, n, off, 1);
}

static int sync_op(int fd, int data_only)
{
    int crash = op_begin();
    int rc = io_fault() ? -1 : data_only ? fdatasync(fd) : fsync(fd);
    int e = errno;

    if (crash && rc == 0)
        mtx_crash_synced(fd);
    op_end(crash);
    errno = e;
    return rc;
}

int mtx_file_fsync(int fd)
{
    return sync_op(fd, 0);
}

int mtx_file_fdatasync(int fd)
{
    return sync_op(fd, 1);
}

int mtx_file_rename(const char *from, const char *to)
{
    int crash = op_begin();
    int k = crash ? mtx_crash_rename_begin(from, to) : -1;
    int rc = io_fault() ? -1 : rename(from, to);
    int e = errno;

    if (crash)
        mtx_crash_rename_end(k, rc == 0);
    op_end(crash);
    errno = e;
    return rc;
}

/* ==== Streams ==== */

/* A stdio stream over a descriptor whose writes come through
 * mtx_file_write_all; the registry maps it back to its descriptor. */
#define STREAMS_MAX 256
static struct {
    FILE *f;
    int fd;
} streams[STREAMS_MAX];
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;

static ssize_t cookie_write(void *c, const char *p, size_t n)
{
    return mtx_file_write_all(*(int *)c, p, n) == MT_OK ? (ssize_t)n : -1;
}

static int cookie_close(void *c)
{
    int fd = *(int *)c;
    size_t i;

    pthread_mutex_lock(&streams_mu);
    for (i = 0; i < STREAMS_MAX; i++)
        if (streams[i].f && streams[i].fd == fd)
            streams[i].f = NULL;
    pthread_mutex_unlock(&streams_mu);
    mt_free(c);
    return close(fd);
}

static int stream_flags(const char *mode)
{
    int plus = strchr(mode, '+') != NULL;
    int base = plus ? O_RDWR : O_WRONLY;

    if (mode[0] == 'a')
        return base | O_CREAT | O_APPEND | O_CLOEXEC;
    return base | O_CREAT | O_TRUNC | O_CLOEXEC;
}

static void stream_register(FILE *f, int fd)
{
    size_t i;

    pthread_mutex_lock(&streams_mu);
    for (i = 0; i < STREAMS_MAX; i++)
        if (!streams[i].f) {
            streams[i].f = f;
            streams[i].fd = fd;
            break;
        }
    pthread_mutex_unlock(&streams_mu);
}

FILE *mtx_file_fopen(const char *path, const char *mode, mode_t perm)
{
    cookie_io_functions_t io = {NULL, cookie_write, NULL, cookie_close};
    int *c = mt_malloc(sizeof *c);
    FILE *f;

    if (!c || (mode[0] != 'w' && mode[0] != 'a')) {
        mt_free(c);
        errno = c ? EINVAL : ENOMEM;
        return NULL;
    }
    *c = open(path, stream_flags(mode), perm);
    if (*c < 0) {
        mt_free(c);
        return NULL;
    }
    f = fopencookie(c, mode, io);
    if (!f) {
        close(*c);
        mt_free(c);
        return NULL;
    }
    stream_register(f, *c);
    return f;
}

int mtx_file_fileno(FILE *f)
{
    int fd = -1;
    size_t i;

    pthread_mutex_lock(&streams_mu);
    for (i = 0; i < STREAMS_MAX && fd < 0; i++)
        if (streams[i].f == f)
            fd = streams[i].fd;
    pthread_mutex_unlock(&streams_mu);
    return fd >= 0 ? fd : fileno(f);
}

int mtx_file_flush_sync(FILE *f, int data_only)
{
    int fd;

    if (fflush(f) != 0 || ferror(f))
        return -1;
    fd = mtx_file_fileno(f);
    return data_only ? mtx_file_fdatasync(fd) : mtx_file_fsync(fd);
}

/* ==== Atomic replacement ==== */

void mtx_file_atomic_abort(struct mtx_file_atomic *a)
{
    if (a->fd >= 0) {
        close(a->fd);
        unlink(a->tmp);
    }
    a->fd = -1;
    mt_free(a->path);
    mt_free(a->tmp);
    a->path = NULL;
    a->tmp = NULL;
}

enum mt_status mtx_file_atomic_begin(struct mtx_file_atomic *a,
                                     const char *path, mode_t mode,
                                     struct mt_error *err)
{
    size_t n = strlen(path);

    a->fd = -1;
    a->path = mt_strdup(path);
    a->tmp = mt_malloc(n + 5);
    if (!a->path || !a->tmp) {
        mtx_file_atomic_abort(a);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    }
    memcpy(a->tmp, path, n);
    memcpy(a->tmp + n, ".tmp", 5);
    a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (a->fd < 0) {
        enum mt_status st =
            mt_fail(err, mtx_file_errno_status(errno), "%s: cannot create: %s",
                    a->tmp, strerror(errno));
        mtx_file_atomic_abort(a);
        return st;
    }
    return MT_OK;
}

enum mt_status mtx_file_atomic_write(struct mtx_file_atomic *a, const void *p,
                                     size_t n, struct mt_error *err)
{
    if (mtx_file_write_all(a->fd, p, n) != MT_OK)
        return mt_fail(err, MT_EWRITE, "%s: write failed: %s", a->tmp,
                       strerror(errno));
    return MT_OK;
}

/* fsyncs the folder holding 'path' so the rename itself is durable. Some
 * file systems refuse to fsync a folder (EINVAL); that is no failure. */
enum mt_status mtx_file_sync_dir(const char *path, struct mt_error *err)
{
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? mt_strndup(path, slash == path ? 1 : (size_t)(slash - path))
              : mt_strdup(".");
    int fd;
    int rc;

    if (!dir)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    rc = fd < 0 ? -1 : mtx_file_fsync(fd);
    if (fd >= 0)
        close(fd);
    mt_free(dir);
    if (rc != 0 && errno != EINVAL)
        return mt_fail(err, MT_EWRITE, "%s: cannot sync its folder: %s", path,
                       strerror(errno));
    return MT_OK;
}

enum mt_status mtx_file_atomic_commit(struct mtx_file_atomic *a,
                                      struct mt_error *err)
{
    enum mt_status st = MT_OK;
    int fd = a->fd;

    a->fd = -1; /* closed below whatever happens */
    if (mtx_file_fsync(fd) != 0)
        st = mt_fail(err, MT_EWRITE, "%s: fsync failed: %s", a->tmp,
                     strerror(errno));
    if (close(fd) != 0 && st == MT_OK)
        st = mt_fail(err, MT_EWRITE, "%s: close failed: %s", a->tmp,
                     strerror(errno));
    if (st == MT_OK && mtx_file_rename(a->tmp, a->path) != 0)
        st = mt_fail(err, MT_EWRITE, "%s: rename failed: %s", a->path,
                     strerror(errno));
    if (st != MT_OK)
        unlink(a->tmp);
    else
        st = mtx_file_sync_dir(a->path, err);
    mtx_file_atomic_abort(a);
    return st;
}

enum mt_status mtx_file_write_atomic(const char *path, const void *data,
                                     size_t n, struct mt_error *err)
{
    struct mtx_file_atomic a;
    enum mt_status st = mtx_file_atomic_begin(&a, path, 0644, err);

    if (st != MT_OK)
        return st;
    st = mtx_file_atomic_write(&a, data, n, err);
    if (st != MT_OK) {
        mtx_file_atomic_abort(&a);
        return st;
    }
    return mtx_file_atomic_commit(&a, err);
}

enum mt_status mtx_file_read_all(const char *path, struct mt_buf *b,
                                 struct mt_error *err)
{
    char chunk[65536];
    enum mt_status st = MT_OK;
    ssize_t k;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return mt_fail(err, errno == ENOENT ? MT_ENOTFOUND : MT_EIO,
                       "%s: cannot open: %s", path, strerror(errno));
    while (st == MT_OK && (k = read(fd, chunk, sizeof chunk)) != 0) {
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            st = mt_fail(err, MT_EIO, "%s: cannot read: %s", path,
                         strerror(errno));
        else if ((st = mtx_buf_append(b, chunk, (size_t)k)) != MT_OK)
            mt_fail(err, st, "%s: %s", path,
                    st == MT_ELIMIT ? "too large" : "out of memory");
    }
    close(fd);
    return st;
}
