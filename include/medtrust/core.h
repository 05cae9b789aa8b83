/* medtrust core services shared by every layer: fault-injectable
 * allocation, logging through a callback, and the library version. */
#ifndef MEDTRUST_CORE_H
#define MEDTRUST_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_VERSION_STRING "0.1.0"

/* A borrowed view of n bytes at p (not NUL-terminated in general). */
struct mt_str {
    const char *p;
    size_t n;
};

/* Returns MT_VERSION_STRING. */
const char *mt_version(void);

/* sizeof(struct NAME) for a struct of the public headers ("mt_agent_params",
 * "mt_search_hit"...), 0 for a name it does not know: a binding that lays
 * the structs out itself (the Python package) checks its layout against
 * the library it loaded before it passes one. Thread-safe. */
size_t mt_struct_size(const char *name);

/* ==== Allocation ====
 * Every allocation in medtrust goes through these, so tests can make the
 * n-th allocation fail. They behave as malloc/calloc/realloc/free. */
void *mt_malloc(size_t n);
void *mt_calloc(size_t count, size_t size);
void *mt_realloc(void *p, size_t n);
void mt_free(void *p);
/* Returns a copy of s (or of its first n bytes, NUL-terminated) that the
 * caller frees with mt_free, or NULL when out of memory. */
char *mt_strdup(const char *s);
char *mt_strndup(const char *s, size_t n);

/* Testing: after 'n' more successful allocations, every allocation fails
 * until mt_alloc_fail_reset(). n < 0 disables injection. Thread-safe. */
void mt_alloc_fail_after(long n);
void mt_alloc_fail_reset(void);
/* Returns how many allocations failed by injection since the last reset. */
long mt_alloc_failures(void);

/* Testing: after 'n' more successful file operations (a write, fsync,
 * fdatasync or rename of medtrust's own files; SQLite's are not counted)
 * every one fails with 'errnum' (ENOSPC or EIO; 0 means ENOSPC) until
 * mt_io_fail_reset(), as a disk that filled up stays full. n < 0 disables
 * injection. The binary reads MEDTRUST_IO_FAIL=N[:EIO] at its first file
 * operation. Thread-safe. */
void mt_io_fail_after(long n, int errnum);
void mt_io_fail_reset(void);
/* File operations counted and failed by injection since the last
 * mt_io_fail_after. */
long mt_io_ops(void);
long mt_io_failures(void);

/* Testing, power loss as SQLite's crash tests simulate it: the file
 * operation after 'n' more (counted as above) does not happen; instead
 * every file written through the layer loses what no fsync covered,
 * renames no fsync of their folder made durable are undone, and the
 * process is killed (SIGKILL). n < 0 disables it. The binary reads
 * MEDTRUST_IO_CRASH=N. Linux only; for tests, never for use. */
void mt_io_crash_after(long n);

/* ==== Logging ==== */
enum mt_log_level {
    MT_LOG_DEBUG,
    MT_LOG_INFO,
    MT_LOG_WARN,
    MT_LOG_ERROR,
};

/* Receives every message at or above the threshold. 'msg' has no trailing
 * newline and is valid only during the call. */
typedef void (*mt_log_fn)(enum mt_log_level level, const char *msg, void *user);

/* Sets the process-wide log sink (NULL silences the library) and the
 * threshold. The library itself never prints. Not thread-safe against
 * concurrent logging: set it once at start-up. */
void mt_log_set(mt_log_fn fn, void *user, enum mt_log_level threshold);

/* Logs a printf-style message through the sink. Thread-safe when the sink
 * is. */
void mt_log(enum mt_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns "debug", "info", "warn" or "error". */
const char *mt_log_level_str(enum mt_log_level level);

#ifdef __cplusplus
}
#endif
#endif
