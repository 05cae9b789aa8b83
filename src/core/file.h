/* The one file layer. Every durable write, fsync, fdatasync and rename of
 * medtrust's own files goes through these functions (SQLite's go through
 * its VFS), so tests can fail the Nth of them (mt_io_fail_after, or
 * MEDTRUST_IO_FAIL=N[:EIO] for the binary). A failed write or sync is
 * MT_EWRITE: out of space or an I/O error, exit status 3.
 *
 * Files written whole or not at all: PATH.tmp is written, fsynced, renamed
 * over PATH and the directory fsynced, so a reader (or a crash) sees the
 * old file or the complete new one. */
#ifndef MT_CORE_FILE_H
#define MT_CORE_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "medtrust/status.h"

/* A file being replaced. Open writers of one PATH share PATH.tmp, so
 * callers keep to one writer per path at a time (the index lock, the
 * journal lock, one command). */
struct mtx_file_atomic {
    int fd; /* PATH.tmp, for write(2)/pwrite(2); -1 when released */
    char *path;
    char *tmp;
};

/* Creates (truncates) PATH.tmp with 'mode' (before the umask). On failure
 * the writer holds nothing and 'err' names the file. */
enum mt_status mtx_file_atomic_begin(struct mtx_file_atomic *a,
                                     const char *path, mode_t mode,
                                     struct mt_error *err);

/* Appends n bytes (retrying short writes and EINTR); MT_EIO naming the file. */
enum mt_status mtx_file_atomic_write(struct mtx_file_atomic *a, const void *p,
                                     size_t n, struct mt_error *err);

/* fsyncs and closes PATH.tmp, renames it over PATH and fsyncs the folder.
 * Releases the writer in every case (PATH.tmp is removed on failure). */
enum mt_status mtx_file_atomic_commit(struct mtx_file_atomic *a,
                                      struct mt_error *err);

/* Closes and removes PATH.tmp and releases the writer; safe on a writer
 * already committed or released, or zeroed with fd -1. */
void mtx_file_atomic_abort(struct mtx_file_atomic *a);

/* Replaces 'path' with the n bytes at 'data' as above, mode 0644. */
enum mt_status mtx_file_write_atomic(const char *path, const void *data,
                                     size_t n, struct mt_error *err);

/* Writes all n bytes to fd, retrying short writes and EINTR; MT_EWRITE
 * with errno set on failure. */
enum mt_status mtx_file_write_all(int fd, const void *p, size_t n);

/* As mtx_file_write_all, at offset 'off' (pwrite). */
enum mt_status mtx_file_pwrite_all(int fd, const void *p, size_t n, off_t off);

/* fsync(2), fdatasync(2) and rename(2) through the layer: 0, or -1 with
 * errno set. */
int mtx_file_fsync(int fd);
int mtx_file_fdatasync(int fd);
int mtx_file_rename(const char *from, const char *to);

/* fsyncs the folder holding 'path', so a rename or creation in it is
 * durable (a file system that cannot sync a folder is no failure). */
enum mt_status mtx_file_sync_dir(const char *path, struct mt_error *err);

/* MT_EWRITE for errno values that mean the disk failed or filled up
 * (ENOSPC, EDQUOT, EIO, EFBIG, EROFS), MT_EIO for the rest. */
enum mt_status mtx_file_errno_status(int e);

/* Opens 'path' for writing ("w"/"wb" truncates, "a"/"ab" appends; created
 * with 'perm' before the umask) as a stdio stream whose writes go through
 * mtx_file_write_all, so they are checked and can be failed by tests.
 * NULL with errno set on failure. Close with fclose. */
FILE *mtx_file_fopen(const char *path, const char *mode, mode_t perm);

/* The descriptor under a stream from mtx_file_fopen (or any stream). */
int mtx_file_fileno(FILE *f);

/* fflush(f), then fdatasync (data_only) or fsync its descriptor: 0, or -1
 * with errno set (a write error earlier on the stream is -1 too). */
int mtx_file_flush_sync(FILE *f, int data_only);

struct mt_buf;

/* Appends the whole file at 'path' to b (bounded by b's max):
 * MT_ENOTFOUND when it does not exist, MT_EIO, MT_ELIMIT or MT_ENOMEM
 * naming the path. */
enum mt_status mtx_file_read_all(const char *path, struct mt_buf *b,
                                 struct mt_error *err);

#endif
