/* Crash-safe record of finished notes for `mediqa --resume`: an
 * append-only JSONL file, one {"id","line"} object per note (with
 * "failed" when its check failed), each write followed by fdatasync, so a
 * killed run keeps every note it finished. The open journal holds an
 * exclusive lock, so two runs on one output cannot interleave. */
#ifndef MTX_BATCH_JOURNAL_H
#define MTX_BATCH_JOURNAL_H

#include <pthread.h>
#include <stddef.h>

#include "medtrust/status.h"

struct mtx_journal;

/* Called for each finished note found when resuming (failed ones are
 * not replayed: a resumed run tries them again). */
typedef void (*mtx_journal_fn)(const char *id, const char *line, void *user);

/* Opens 'path' and locks it (flock, exclusive): MT_EIO naming the path
 * when another process holds it. With 'resume', replays its complete
 * lines through fn and cuts a torn last line (a crash mid-write);
 * without, starts it empty. */
enum mt_status mtx_journal_open(const char *path, int resume, mtx_journal_fn fn,
                                void *user, struct mtx_journal **out,
                                struct mt_error *err);

/* Appends one finished note and syncs it to disk; 'failed' (NULL when
 * it did not) says why its check failed. Thread-safe. */
enum mt_status mtx_journal_append(struct mtx_journal *j, const char *id,
                                  const char *line, const char *failed,
                                  struct mt_error *err);

/* Counts the notes an existing journal holds, without changing it: *done
 * finished, *failed journaled as failed (a torn last line is neither).
 * -1 when it cannot be read or another run holds its lock (mtx_journal_open
 * then says which). */
int mtx_journal_count(const char *path, size_t *done, size_t *failed);

void mtx_journal_close(struct mtx_journal *j);

/* The parallel half of a resumable batch (mediqa, ask --batch): worker
 * threads take items 0..n-1 in order until all are taken or one reports
 * a fatal error (a journal that cannot be written), after which no new
 * item starts. 'mu' is free for the caller's own bookkeeping. */
struct mtx_work_queue {
    pthread_mutex_t mu;
    size_t n;
    size_t next;
    enum mt_status fatal;
    struct mt_error fatal_err;
};

/* Runs one item; items already done (resumed) should return at once. */
typedef void (*mtx_work_fn)(size_t i, void *user);

void mtx_work_init(struct mtx_work_queue *q, size_t n);
void mtx_work_destroy(struct mtx_work_queue *q);

/* Records the first fatal error; call with q->mu held. */
void mtx_work_fail_locked(struct mtx_work_queue *q, enum mt_status st,
                          const struct mt_error *err);

/* Runs fn over the items with 'jobs' threads (the caller's thread alone
 * when none can start). Returns the fatal error, copied into 'err'. */
enum mt_status mtx_work_run(struct mtx_work_queue *q, unsigned jobs,
                            mtx_work_fn fn, void *user, struct mt_error *err);

#include <jansson.h>

/* One JSONL line for item 'id': {"id":ID, ...the members of 'result'} where
 * 'result' is a JSON object's text (taken), or 'failure' as it is when
 * 'result' is NULL (taken). NULL when out of memory. */
char *mtx_work_line(const char *id, char *result, json_t *failure);

/* Item i's output line, or NULL to leave item i out of the file. */
typedef const char *(*mtx_work_line_fn)(size_t i, void *user);

/* Writes a batch's output: the lines line(0..n-1) gives, in order, each
 * followed by a newline, to 'path' atomically (mtx_file_write_atomic), so
 * a reader sees the old file or the whole new one. MT_ENOMEM naming the
 * path when the lines do not fit in memory. */
enum mt_status mtx_work_write_lines(const char *path, size_t n,
                                    mtx_work_line_fn line, void *user,
                                    struct mt_error *err);

#endif
