/* Power loss for tests, as SQLite's crash tests simulate it: with
 * MEDTRUST_IO_CRASH=N the Nth file operation of the layer (core/file.h)
 * does not happen; instead every file loses what was written to it after
 * its last fsync, every rename not yet made durable by an fsync of its
 * folder is undone, and the process dies of SIGKILL. Linux only (the
 * descriptor's path comes from /proc/self/fd); test mode only. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file_int.h"
#include "medtrust/core.h"

#define CRASH_FILES 512
#define CRASH_RENAMES 512

/* A file written since the run began: what survives a crash is its first
 * 'synced' bytes (what it held before our first write, then what each
 * fsync covered). */
struct cfile {
    dev_t dev;
    ino_t ino;
    off_t synced;
};

/* A rename not yet durable: undone at a crash (the old target comes back
 * from a hard link to it). */
struct crename {
    char from[4096], to[4096], bak[4096];
    int have_bak;
    int live;
};

static long crash_at = -1;
static long crash_ops;
static pthread_once_t crash_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t crash_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cfile files[CRASH_FILES];
static size_t nfiles;
static struct crename *renames; /* CRASH_RENAMES of them, made on demand */
static size_t nrenames;

static void crash_env(void)
{
    const char *v = getenv("MEDTRUST_IO_CRASH");
    char *end;
    long n;

    if (!v || !*v)
        return;
    n = strtol(v, &end, 10);
    if (end != v && !*end && n >= 0)
        crash_at = n;
}

int mtx_crash_on(void)
{
    pthread_once(&crash_once, crash_env);
    return crash_at >= 0;
}

void mt_io_crash_after(long n)
{
    pthread_once(&crash_once, crash_env);
    pthread_mutex_lock(&crash_mu);
    crash_ops = 0;
    crash_at = n < 0 ? -1 : n;
    pthread_mutex_unlock(&crash_mu);
}

void mtx_crash_lock(void)
{
    pthread_mutex_lock(&crash_mu);
}

void mtx_crash_unlock(void)
{
    pthread_mutex_unlock(&crash_mu);
}

static struct cfile *find(dev_t dev, ino_t ino)
{
    size_t i;

    for (i = 0; i < nfiles; i++)
        if (files[i].dev == dev && files[i].ino == ino)
            return &files[i];
    return NULL;
}

void mtx_crash_track(int fd)
{
    struct stat sb;

    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        find(sb.st_dev, sb.st_ino) || nfiles == CRASH_FILES)
        return;
    files[nfiles].dev = sb.st_dev;
    files[nfiles].ino = sb.st_ino;
    files[nfiles].synced = sb.st_size; /* there before: durable */
    nfiles++;
}

/* The folder holding 'path' ("." for a bare name) into out. */
static void parent(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

static int same_dir(const char *path, const struct stat *dir)
{
    char d[4096];
    struct stat sb;

    parent(path, d, sizeof d);
    return stat(d, &sb) == 0 && sb.st_dev == dir->st_dev &&
           sb.st_ino == dir->st_ino;
}

void mtx_crash_synced(int fd)
{
    struct stat sb;
    struct cfile *f;
    size_t i;

    if (fstat(fd, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) { /* its renames are durable now */
        for (i = 0; renames && i < nrenames; i++)
            if (renames[i].live && same_dir(renames[i].to, &sb)) {
                if (renames[i].have_bak)
                    unlink(renames[i].bak);
                renames[i].live = 0;
            }
        return;
    }
    if ((f = find(sb.st_dev, sb.st_ino)))
        f->synced = sb.st_size;
}

int mtx_crash_rename_begin(const char *from, const char *to)
{
    struct crename *r;

    if (!renames)
        renames = calloc(CRASH_RENAMES, sizeof *renames);
    if (!renames || nrenames == CRASH_RENAMES)
        return -1;
    r = &renames[nrenames];
    memset(r, 0, sizeof *r);
    snprintf(r->from, sizeof r->from, "%s", from);
    snprintf(r->to, sizeof r->to, "%s", to);
    snprintf(r->bak, sizeof r->bak, "%s.crash-bak-%ld-%zu", to, (long)getpid(),
             nrenames);
    r->have_bak = link(to, r->bak) == 0; /* a file's old version */
    return (int)nrenames++;
}

void mtx_crash_rename_end(int k, int ok)
{
    if (k < 0)
        return;
    renames[k].live = ok;
    if (!ok && renames[k].have_bak)
        unlink(renames[k].bak);
}

/* Truncates every tracked file that still exists to what it synced. */
static void drop_unsynced(void)
{
    char link[64], path[4096];
    size_t i;
    int fd;

    /* a tracked file is found again through any descriptor still open on
     * it, else by inode among the renames' and the open names */
    for (fd = 0; fd < 4096; fd++) {
        struct stat sb;
        struct cfile *f;
        ssize_t n;
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof path - 1);
        if (n <= 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        f = find(sb.st_dev, sb.st_ino);
        if (f && sb.st_size > f->synced)
            (void)ftruncate(fd, f->synced);
    }
    for (i = 0; renames && i < nrenames; i++) {
        struct stat sb;
        struct cfile *f;
        const char *p = renames[i].live ? renames[i].from : renames[i].to;
        if (stat(p, &sb) == 0 && (f = find(sb.st_dev, sb.st_ino)) &&
            sb.st_size > f->synced)
            (void)truncate(p, f->synced);
    }
}

static void power_loss(void)
{
    size_t i;

    for (i = nrenames; renames && i-- > 0;) {
        struct crename *r = &renames[i];
        if (!r->live)
            continue;
        (void)rename(r->to, r->from);
        if (r->have_bak)
            (void)rename(r->bak, r->to);
    }
    drop_unsynced();
    fprintf(stderr,
            "medtrust: MEDTRUST_IO_CRASH: power lost at file "
            "operation %ld\n",
            crash_at);
    kill(getpid(), SIGKILL);
    _exit(137);
}

void mtx_crash_step(void)
{
    if (crash_ops++ == crash_at)
        power_loss();
}
