/* Files written whole or not at all: PATH.tmp is written, fsynced, renamed
 * over PATH and the directory fsynced, so a reader (or a crash) sees the
 * old file or the complete new one. The one helper every layer uses. */
#ifndef MT_CORE_FILE_H
#define MT_CORE_FILE_H

#include <stddef.h>
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

/* Writes all n bytes to fd, retrying short writes and EINTR; MT_EIO with
 * errno set on failure. */
enum mt_status mtx_file_write_all(int fd, const void *p, size_t n);

#endif
