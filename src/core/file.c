/* Atomic file replacement (temp file, fsync, rename, fsync of the folder)
 * and full writes to a descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "medtrust/core.h"

enum mt_status mtx_file_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return MT_EIO;
        }
        c += w;
        n -= (size_t)w;
    }
    return MT_OK;
}

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
        enum mt_status st = mt_fail(err, MT_EIO, "%s: cannot create: %s",
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
        return mt_fail(err, MT_EIO, "%s: write failed: %s", a->tmp,
                       strerror(errno));
    return MT_OK;
}

/* fsyncs the folder holding 'path' so the rename itself is durable. Some
 * file systems refuse to fsync a folder (EINVAL); that is no failure. */
static enum mt_status sync_dir(const char *path, struct mt_error *err)
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
    rc = fd < 0 ? -1 : fsync(fd);
    if (fd >= 0)
        close(fd);
    mt_free(dir);
    if (rc != 0 && errno != EINVAL)
        return mt_fail(err, MT_EIO, "%s: cannot sync its folder: %s", path,
                       strerror(errno));
    return MT_OK;
}

enum mt_status mtx_file_atomic_commit(struct mtx_file_atomic *a,
                                      struct mt_error *err)
{
    enum mt_status st = MT_OK;
    int fd = a->fd;

    a->fd = -1; /* closed below whatever happens */
    if (fsync(fd) != 0)
        st = mt_fail(err, MT_EIO, "%s: fsync failed: %s", a->tmp,
                     strerror(errno));
    if (close(fd) != 0 && st == MT_OK)
        st = mt_fail(err, MT_EIO, "%s: close failed: %s", a->tmp,
                     strerror(errno));
    if (st == MT_OK && rename(a->tmp, a->path) != 0)
        st = mt_fail(err, MT_EIO, "%s: rename failed: %s", a->path,
                     strerror(errno));
    if (st != MT_OK)
        unlink(a->tmp);
    else
        st = sync_dir(a->path, err);
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
