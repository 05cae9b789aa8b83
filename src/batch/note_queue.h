/* A note batch on the shared queue (batch layer): `mediqa --enqueue`
 * submits a MEDEC batch's notes as the jobs of one "mediqa" run, `medtrust
 * worker` checks each and records its result, `mediqa --collect` reads the
 * results back into the notes the one-machine writer (batch/note.h)
 * writes. The job's payload and result formats live here alone. Names:
 * mtx_ (internal). */
#ifndef MTX_BATCH_NOTE_QUEUE_H
#define MTX_BATCH_NOTE_QUEUE_H

#include <stdint.h>
#include <stdio.h>

#include "batch/checkers.h"
#include "batch/note.h"
#include "batch/qworker.h"
#include "store/queue.h"

/* The run kind of a note batch. */
#define MTX_NOTE_QUEUE_KIND "mediqa"

/* Submits notes v[0..n) of the batch read from 'path' (errors name it
 * and the note) as one run carrying 'options' (JSON text the workers
 * read); *run receives its id. */
enum mt_status mtx_note_queue_submit(struct mtx_pg *pg, const char *path,
                                     const char *options,
                                     const struct mtx_note *v, size_t n,
                                     int64_t *run, struct mt_error *err);

/* A job's note, read from its payload {"id","text","sentences"?}: the
 * strings belong to 'json' (json_decref it). 0, or -1 when the payload
 * is not a note's. */
struct mtx_note_job {
    const char *id, *text, *sents;
    void *json;
};

int mtx_note_job_read(const char *payload, struct mtx_note_job *j);
void mtx_note_job_free(struct mtx_note_job *j);

/* The job's result for note 'id': {"id","line","fallback","usage",
 * "failed"? (its message),"trace"?} (mt_free), what the collector reads;
 * NULL when out of memory. */
char *mtx_note_job_result(const char *id, const struct mtx_batch_outcome *o);

/* A mediqa job on a queue worker (`medtrust worker`'s callback for
 * MTX_NOTE_QUEUE_KIND): its note checked (mtx_batch_check_note) by its
 * run's checker from 'checkers' (the key the run's number, the open
 * function's arg a pointer to it, int64_t), the result recorded
 * (mtx_note_job_result). A payload that is not a note's is finished as
 * failed with "{}" (mediqa --collect reports it). A run that cannot run
 * here gives its job back to the queue and ends the worker. */
void mtx_note_queue_job(struct mtx_checkers *checkers, struct mtx_qjob *j);

/* What a run's results come to. */
struct mtx_note_collect {
    struct mtx_note *notes; /* by job number; only id, line, failed,
                               fallback */
    size_t n, got, failed, fallback;
    struct mt_check_usage total;
};

/* Checks that 'run' is a mediqa run, then waits, when 'wait' (with a
 * progress bar unless 'quiet'), until every one of its jobs is done; *c
 * gets its counts. MT_ENOTFOUND when the run does not exist, or is not
 * finished and 'wait' is 0; MT_EINVAL when it is another kind's. */
enum mt_status mtx_note_queue_wait(struct mtx_pg *pg, int64_t run, int wait,
                                   int quiet, struct mtx_queue_counts *c,
                                   struct mt_error *err);

/* Reads the results of finished run 'run' of 'n' jobs into c, in job
 * order, each note's trace line to 'trace' (may be NULL). MT_EPARSE
 * naming the run when a result is unreadable, MT_EDB when some are
 * missing. Free c with mtx_note_collect_free. */
enum mt_status mtx_note_queue_results(struct mtx_pg *pg, int64_t run, size_t n,
                                      FILE *trace, struct mtx_note_collect *c,
                                      struct mt_error *err);

void mtx_note_collect_free(struct mtx_note_collect *c);

#endif
