/* The file layer's power-loss simulation for tests (core/file_crash.c),
 * used by core/file.c alone. Names: mtx_ (cross-file internals). */
#ifndef MT_CORE_FILE_INT_H
#define MT_CORE_FILE_INT_H

/* Whether MEDTRUST_IO_CRASH=N is set; then every operation of the layer
 * runs under mtx_crash_lock and first calls mtx_crash_step, which at the
 * Nth drops what no fsync covered, undoes renames no folder fsync made
 * durable, and kills the process with SIGKILL. */
int mtx_crash_on(void);
void mtx_crash_lock(void);
void mtx_crash_unlock(void);
void mtx_crash_step(void);

/* Before a write to fd: remembers the file and its size until then. */
void mtx_crash_track(int fd);
/* After a successful fsync or fdatasync of fd (a file or a folder). */
void mtx_crash_synced(int fd);
/* Around a rename: a token for _end (-1 when not tracked). */
int mtx_crash_rename_begin(const char *from, const char *to);
void mtx_crash_rename_end(int token, int ok);

#endif
