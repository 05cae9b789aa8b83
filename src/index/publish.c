/* Publishing a corpus to other nodes: a snapshot folder that checks
 * itself (SNAPSHOT lists every file and its size, written last) and the
 * CURRENT file that names it, replaced atomically. Segments are immutable,
 * so the index's files are hard-linked when they can be. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "core/file.h"
#include "index/index_int.h"
#include "index/manifest.h"
#include "medtrust/core.h"
#include "medtrust/publish.h"
#include "medtrust/store.h"

#define PUB_PATH 4096
#define PUB_FORMAT 1
#define COPY_BUF (1u << 20)
#define INDEX_TRIES 3 /* a build may replace the index while we link it */

void mt_publish_default_params(struct mt_publish_params *p)
{
    p->keep = 2;
}

/* ==== Names and folders ==== */

/* The N of "snap-N" (digits only), else 0; 'tmp' accepts "snap-N.tmp". */
static uint32_t snap_number(const char *name, int tmp)
{
    const char *p = name + 5;
    char *end = NULL;
    unsigned long v;

    if (strncmp(name, "snap-", 5) != 0 || *p < '0' || *p > '9')
        return 0;
    v = strtoul(p, &end, 10);
    if (v == 0 || v > 0xffffffffUL)
        return 0;
    if (*end == '\0' || (tmp && strcmp(end, ".tmp") == 0))
        return (uint32_t)v;
    return 0;
}

static enum mt_status path_join(char *buf, const char *a, const char *b,
                                struct mt_error *err)
{
    if (snprintf(buf, PUB_PATH, "%s/%s", a, b) >= PUB_PATH)
        return mt_fail(err, MT_EINVAL, "%s/%s: path too long", a, b);
    return MT_OK;
}

/* fsyncs a folder so the names made in it are durable (EINVAL: the file
 * system cannot, which is no failure). */
static enum mt_status sync_folder(const char *dir, struct mt_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? -1 : mtx_file_fsync(fd);
    int e = errno;

    if (fd >= 0)
        close(fd);
    if (rc != 0 && e != EINVAL)
        return mt_fail(err, mtx_file_errno_status(e), "%s: cannot sync: %s",
                       dir, strerror(e));
    return MT_OK;
}

/* Removes a snapshot folder: its files, index/ and what is in it (two
 * levels are all a snapshot has; SQLite may have left -wal/-shm files). */
static void remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PUB_PATH];
    struct stat sb;

    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            path_join(path, dir, e->d_name, NULL) != MT_OK)
            continue;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && depth > 0)
            remove_tree(path, depth - 1);
        else
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The highest snapshot number in pub (finished or not); removes the
 * unfinished ones, which a publisher that died left (we hold the lock). */
static uint32_t scan_snapshots(const char *pub)
{
    DIR *d = opendir(pub);
    struct dirent *e;
    char path[PUB_PATH];
    uint32_t max = 0;

    while (d && (e = readdir(d)) != NULL) {
        uint32_t n = snap_number(e->d_name, 1);

        if (n > max)
            max = n;
        if (n && strstr(e->d_name, ".tmp") &&
            path_join(path, pub, e->d_name, NULL) == MT_OK)
            remove_tree(path, 1);
    }
    if (d)
        closedir(d);
    return max;
}

/* Removes finished snapshots older than the newest 'keep' (cur is the
 * newest); returns how many. */
static uint32_t prune(const char *pub, uint32_t cur, uint32_t keep)
{
    DIR *d = opendir(pub);
    struct dirent *e;
    char path[PUB_PATH];
    uint32_t removed = 0;

    while (d && (e = readdir(d)) != NULL) {
        uint32_t n = snap_number(e->d_name, 0);

        if (n == 0 || (uint64_t)n + keep > cur ||
            path_join(path, pub, e->d_name, NULL) != MT_OK)
            continue;
        remove_tree(path, 1);
        removed++;
    }
    if (d)
        closedir(d);
    return removed;
}

static enum mt_status lock_pub(const char *pub, int *fd, struct mt_error *err)
{
    char path[PUB_PATH];
    enum mt_status st;

    if (mkdir(pub, 0755) != 0 && errno != EEXIST)
        return mt_fail(err, MT_EIO, "%s: cannot create: %s", pub,
                       strerror(errno));
    st = path_join(path, pub, ".lock", err);
    if (st != MT_OK)
        return st;
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return mt_fail(err, MT_EIO, "%s: cannot open: %s", path,
                       strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        close(*fd);
        *fd = -1;
        return mt_fail(err, MT_EIO,
                       "%s: another publish into this folder is running", pub);
    }
    return MT_OK;
}

/* ==== Copying the index ==== */

/* Copies src to dst (written aside, fsynced, renamed). */
static enum mt_status copy_file(const char *src, const char *dst,
                                struct mt_error *err)
{
    struct mtx_file_atomic a;
    char *buf = mt_malloc(COPY_BUF);
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    enum mt_status st = MT_OK;
    ssize_t n = 0;

    if (!buf || fd < 0)
        st = !buf ? mt_fail(err, MT_ENOMEM, "%s: out of memory", src)
                  : mt_fail(err, errno == ENOENT ? MT_ENOTFOUND : MT_EIO,
                            "%s: cannot open: %s", src, strerror(errno));
    if (st == MT_OK)
        st = mtx_file_atomic_begin(&a, dst, 0644, err);
    while (st == MT_OK && (n = read(fd, buf, COPY_BUF)) > 0)
        st = mtx_file_atomic_write(&a, buf, (size_t)n, err);
    if (st == MT_OK && n < 0)
        st = mt_fail(err, MT_EIO, "%s: read failed: %s", src, strerror(errno));
    if (st == MT_OK)
        st = mtx_file_atomic_commit(&a, err);
    else if (fd >= 0 && buf)
        mtx_file_atomic_abort(&a);
    if (fd >= 0)
        close(fd);
    mt_free(buf);
    return st;
}

/* Links (or, across file systems, copies) one index file. */
static enum mt_status put_file(const char *src, const char *dst,
                               struct mt_publish_result *res,
                               struct mt_error *err)
{
    if (link(src, dst) == 0) {
        res->linked++;
        return MT_OK;
    }
    if (errno == ENOENT)
        return mt_fail(err, MT_ENOTFOUND, "%s: gone", src);
    return copy_file(src, dst, err);
}

/* Whether index file 'name' belongs to a segment the manifest names
 * ("seg-000002.bm25" for seg-000002), not a build's .tmp. */
static int in_manifest(const struct mt_manifest *m, const char *name)
{
    size_t i;

    if (strstr(name, ".tmp"))
        return 0;
    for (i = 0; i < m->nsegs; i++) {
        size_t l = strlen(m->segs[i].name);

        if (strncmp(name, m->segs[i].name, l) == 0 && name[l] == '.')
            return 1;
    }
    return 0;
}

static enum mt_status put_segments(const char *idir, const char *out,
                                   const struct mt_manifest *m,
                                   struct mt_publish_result *res,
                                   struct mt_error *err)
{
    DIR *d = opendir(idir);
    struct dirent *e;
    char src[PUB_PATH], dst[PUB_PATH];
    enum mt_status st = MT_OK;

    if (!d)
        return mt_fail(err, MT_ENOTFOUND, "%s: cannot open: %s", idir,
                       strerror(errno));
    while (st == MT_OK && (e = readdir(d)) != NULL) {
        if (!in_manifest(m, e->d_name))
            continue;
        st = path_join(src, idir, e->d_name, err);
        if (st == MT_OK)
            st = path_join(dst, out, e->d_name, err);
        if (st == MT_OK)
            st = put_file(src, dst, res, err);
    }
    closedir(d);
    return st;
}

/* One attempt at out/index: the manifest as read now, its segments'
 * files, the manifest itself last. */
static enum mt_status put_index_once(const char *db_dir, const char *out,
                                     struct mt_publish_result *res,
                                     struct mt_error *err)
{
    char idir[PUB_PATH];
    struct mt_manifest m;
    int found = 0;
    enum mt_status st;

    mtx_index_dir(db_dir, idir, sizeof idir);
    st = mtx_manifest_load(idir, &m, &found, err);
    if (st != MT_OK)
        return st;
    if (!found)
        st = mt_fail(err, MT_EINVAL,
                     "%s: the store has no search index to publish; build "
                     "it with 'medtrust index --db %s'",
                     db_dir, db_dir);
    if (st == MT_OK && mkdir(out, 0755) != 0)
        st =
            mt_fail(err, MT_EIO, "%s: cannot create: %s", out, strerror(errno));
    if (st == MT_OK)
        st = put_segments(idir, out, &m, res, err);
    if (st == MT_OK)
        st = mtx_manifest_save(out, &m, err);
    if (st == MT_OK)
        st = sync_folder(out, err);
    mtx_manifest_free(&m);
    return st;
}

/* The index, tried again when a build removed a segment meanwhile. */
static enum mt_status put_index(const char *db_dir, const char *snap,
                                struct mt_publish_result *res,
                                struct mt_error *err)
{
    char out[PUB_PATH];
    enum mt_status st = path_join(out, snap, "index", err);
    int i;

    for (i = 0; st == MT_OK && i < INDEX_TRIES; i++) {
        st = put_index_once(db_dir, out, res, err);
        if (st != MT_ENOTFOUND)
            break;
        remove_tree(out, 0);
        res->linked = 0;
        st = i + 1 < INDEX_TRIES ? MT_OK : st;
    }
    return st;
}

/* ==== The SNAPSHOT list ==== */

/* Appends {"path": rel, "size": N} for each file of folder dir/rel
 * (index/ one level down); counts them into res. */
static enum mt_status list_files(const char *snap, const char *rel,
                                 json_t *files, struct mt_publish_result *res,
                                 struct mt_error *err)
{
    char dir[PUB_PATH], path[PUB_PATH], name[PUB_PATH];
    DIR *d;
    struct dirent *e;
    struct stat sb;
    enum mt_status st = rel ? path_join(dir, snap, rel, err) : MT_OK;

    if (st == MT_OK && !rel)
        snprintf(dir, sizeof dir, "%s", snap);
    d = st == MT_OK ? opendir(dir) : NULL;
    if (st == MT_OK && !d)
        st = mt_fail(err, MT_EIO, "%s: cannot open: %s", dir, strerror(errno));
    while (st == MT_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || path_join(path, dir, e->d_name, err) ||
            lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        snprintf(name, sizeof name, "%s%s%s", rel ? rel : "", rel ? "/" : "",
                 e->d_name);
        if (json_array_append_new(files,
                                  json_pack("{s:s,s:I}", "path", name, "size",
                                            (json_int_t)sb.st_size)) != 0)
            st = mt_fail(err, MT_ENOMEM, "%s: out of memory", snap);
        res->files++;
        res->bytes += (uint64_t)sb.st_size;
    }
    if (d)
        closedir(d);
    return st;
}

/* Writes snap/SNAPSHOT, the last file of a snapshot: a node switches to
 * it only when every file listed is there at its size. */
static enum mt_status write_list(const char *snap, const char *name,
                                 struct mt_publish_result *res,
                                 struct mt_error *err)
{
    json_t *files = json_array();
    json_t *o = NULL;
    char *txt = NULL;
    char path[PUB_PATH];
    enum mt_status st = files ? MT_OK : MT_ENOMEM;

    if (st == MT_OK)
        st = list_files(snap, NULL, files, res, err);
    if (st == MT_OK)
        st = list_files(snap, "index", files, res, err);
    if (st == MT_OK)
        o = json_pack("{s:i,s:s,s:I,s:O}", "format", PUB_FORMAT, "name", name,
                      "created", (json_int_t)time(NULL), "files", files);
    txt = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    if (st == MT_OK && !txt)
        st = mt_fail(err, MT_ENOMEM, "%s: out of memory", snap);
    if (st == MT_OK)
        st = path_join(path, snap, MT_PUBLISH_SNAPSHOT, err);
    if (st == MT_OK)
        st = mtx_file_write_atomic(path, txt, strlen(txt), err);
    mt_free(txt);
    json_decref(o);
    json_decref(files);
    return st;
}

/* ==== Publishing ==== */

static enum mt_status put_store(const char *db_dir, const char *snap,
                                struct mt_error *err)
{
    struct mt_store_params sp;
    struct mt_store *s = NULL;
    char path[PUB_PATH];
    enum mt_status st = path_join(path, snap, "store.db", err);

    mt_store_default_params(&sp);
    sp.create = 0;
    sp.read_only = 1;
    if (st == MT_OK)
        st = mt_store_open(db_dir, &sp, &s, err);
    if (st == MT_OK)
        st = mt_store_backup(s, path, err);
    mt_store_close(s);
    return st;
}

/* Builds PUB/snap-N.tmp whole, then renames it to PUB/snap-N. */
static enum mt_status build_snapshot(const char *db_dir, const char *pub,
                                     const char *name,
                                     struct mt_publish_result *res,
                                     struct mt_error *err)
{
    char tmp[PUB_PATH], snap[PUB_PATH];
    enum mt_status st = path_join(snap, pub, name, err);

    if (st == MT_OK && snprintf(tmp, sizeof tmp, "%s.tmp", snap) >= PUB_PATH)
        st = mt_fail(err, MT_EINVAL, "%s: path too long", snap);
    if (st == MT_OK && mkdir(tmp, 0755) != 0)
        st =
            mt_fail(err, MT_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    /* the index first: the store then holds every chunk it names */
    if (st == MT_OK)
        st = put_index(db_dir, tmp, res, err);
    if (st == MT_OK)
        st = put_store(db_dir, tmp, err);
    if (st == MT_OK)
        st = write_list(tmp, name, res, err);
    if (st == MT_OK && mtx_file_rename(tmp, snap) != 0)
        st = mt_fail(err, mtx_file_errno_status(errno), "%s: rename failed: %s",
                     snap, strerror(errno));
    if (st != MT_OK)
        remove_tree(tmp, 1);
    return st;
}

static enum mt_status write_current(const char *pub, const char *name,
                                    struct mt_error *err)
{
    char path[PUB_PATH], line[MT_PUBLISH_NAME_MAX + 2];
    enum mt_status st = path_join(path, pub, MT_PUBLISH_CURRENT, err);

    snprintf(line, sizeof line, "%s\n", name);
    if (st == MT_OK)
        st = mtx_file_write_atomic(path, line, strlen(line), err);
    return st;
}

enum mt_status mt_publish(const char *db_dir, const char *pub_dir,
                          const struct mt_publish_params *p,
                          struct mt_publish_result *res, struct mt_error *err)
{
    struct mt_publish_params defaults;
    struct mt_publish_result r;
    int fd = -1;
    uint32_t n;
    enum mt_status st;

    if (!p) {
        mt_publish_default_params(&defaults);
        p = &defaults;
    }
    if (p->keep < 1)
        return mt_fail(err, MT_EINVAL, "keep: at least 1 snapshot, not %u",
                       p->keep);
    memset(&r, 0, sizeof r);
    st = lock_pub(pub_dir, &fd, err);
    if (st != MT_OK)
        return st;
    n = scan_snapshots(pub_dir) + 1;
    snprintf(r.name, sizeof r.name, "snap-%06u", n);
    st = build_snapshot(db_dir, pub_dir, r.name, &r, err);
    if (st == MT_OK)
        st = write_current(pub_dir, r.name, err);
    if (st == MT_OK)
        r.removed = prune(pub_dir, n, p->keep);
    close(fd); /* releases the lock */
    if (st == MT_OK && res)
        *res = r;
    return st;
}

/* ==== Following CURRENT ==== */

/* Reads dir/CURRENT into name; *found = 0 when there is none. */
static enum mt_status read_current(const char *dir, char *name, size_t n,
                                   int *found, struct mt_error *err)
{
    char path[PUB_PATH];
    FILE *f;
    size_t len;
    enum mt_status st = path_join(path, dir, MT_PUBLISH_CURRENT, err);

    *found = 0;
    if (st != MT_OK)
        return st;
    f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? MT_OK
                               : mt_fail(err, MT_EIO, "%s: cannot read: %s",
                                         path, strerror(errno));
    *found = 1;
    len = fread(name, 1, n - 1, f);
    fclose(f);
    name[len] = '\0';
    while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == '\r'))
        name[--len] = '\0';
    if (snap_number(name, 0) == 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: names no snapshot (want one line "
                       "\"snap-NNNNNN\")",
                       path);
    return MT_OK;
}

/* Every file SNAPSHOT lists is in snap at its size. */
static enum mt_status check_files(const char *snap, json_t *files,
                                  const char *list, struct mt_error *err)
{
    char path[PUB_PATH];
    struct stat sb;
    size_t i;

    for (i = 0; i < json_array_size(files); i++) {
        const char *rel = NULL;
        json_int_t size = -1;

        if (json_unpack(json_array_get(files, i), "{s:s,s:I}", "path", &rel,
                        "size", &size) != 0 ||
            rel[0] == '/' || strstr(rel, ".."))
            return mt_fail(err, MT_EPARSE, "%s: file entry %zu is malformed",
                           list, i + 1);
        if (path_join(path, snap, rel, err) != MT_OK)
            return MT_EINVAL;
        if (stat(path, &sb) != 0 || (json_int_t)sb.st_size != size)
            return mt_fail(err, MT_ENOTFOUND,
                           "%s: incomplete: %s is %s (a copy still "
                           "arriving?)",
                           snap, rel,
                           stat(path, &sb) != 0 ? "missing"
                                                : "not at its listed size");
    }
    return MT_OK;
}

static enum mt_status check_snapshot(const char *snap, struct mt_error *err)
{
    char list[PUB_PATH];
    json_error_t je;
    json_t *o;
    json_t *files = NULL;
    int format = 0;
    enum mt_status st = path_join(list, snap, MT_PUBLISH_SNAPSHOT, err);

    if (st != MT_OK)
        return st;
    if (access(list, F_OK) != 0)
        return mt_fail(err, MT_ENOTFOUND,
                       "%s: incomplete: no %s yet (a copy still arriving?)",
                       snap, MT_PUBLISH_SNAPSHOT);
    o = json_load_file(list, 0, &je);
    if (!o)
        return mt_fail(err, MT_EPARSE, "%s:%d: %s", list, je.line, je.text);
    if (json_unpack(o, "{s:i,s:o}", "format", &format, "files", &files) != 0 ||
        format != PUB_FORMAT || !json_is_array(files))
        st = mt_fail(err, MT_EPARSE, "%s: want format %d and a \"files\" list",
                     list, PUB_FORMAT);
    else
        st = check_files(snap, files, list, err);
    json_decref(o);
    return st;
}

enum mt_status mt_publish_resolve(const char *dir, char *buf, size_t n,
                                  struct mt_error *err)
{
    char name[MT_PUBLISH_NAME_MAX];
    char snap[PUB_PATH];
    int found = 0;
    enum mt_status st = read_current(dir, name, sizeof name, &found, err);

    if (st == MT_OK && !found) {
        if (snprintf(buf, n, "%s", dir) >= (int)n)
            return mt_fail(err, MT_EINVAL, "%s: path too long", dir);
        return MT_OK;
    }
    if (st == MT_OK)
        st = path_join(snap, dir, name, err);
    if (st == MT_OK)
        st = check_snapshot(snap, err);
    if (st == MT_OK && snprintf(buf, n, "%s", snap) >= (int)n)
        st = mt_fail(err, MT_EINVAL, "%s: path too long", snap);
    return st;
}

enum mt_status mt_publish_refuse_writes(const char *dir, struct mt_error *err)
{
    static const char *const marks[][2] = {
        {MT_PUBLISH_CURRENT, "a publish folder"},
        {MT_PUBLISH_SNAPSHOT, "a published snapshot"},
    };
    char path[PUB_PATH];
    size_t i;

    for (i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        if (path_join(path, dir, marks[i][0], err) != MT_OK)
            return MT_EINVAL;
        if (access(path, F_OK) == 0)
            return mt_fail(err, MT_EINVAL,
                           "%s is %s (it has %s): nodes serve it as "
                           "'medtrust publish' wrote it. Write to the store "
                           "it was published from, then run 'medtrust "
                           "publish --db STORE --to PUBDIR' again",
                           dir, marks[i][1], marks[i][0]);
    }
    return MT_OK;
}
