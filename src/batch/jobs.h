/* The job runtime (batch layer): model-bound runs on a fixed set of
 * worker threads (their number is the cap on concurrent model jobs),
 * never on the caller's threads. Each job records its run in the state
 * (mt_run_update: running, then done or failed) and keeps its events as
 * Server-Sent Event text in a bounded replay log that readers follow with
 * cursors (the server's event streams). With a shared state
 * (PostgreSQL) there are no local workers: the queue worker loop
 * (batch/qworker.h) claims rows and runs each here with mtx_jobs_run_row;
 * every event is also a row of the run, a cancel may come from another
 * node through the run's flag, and a run that another node holds is
 * followed from its rows (mtx_jobs_mirror). The server's routes submit
 * the jobs and stream their events; the runtime holds no HTTP. */
#ifndef MTX_BATCH_JOBS_H
#define MTX_BATCH_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "medtrust/accounts.h"
#include "medtrust/status.h"

struct mtx_jobs;
struct mtx_job;
struct mtx_qjob;

/* A job function: does the work, emitting steps with mtx_job_emit,
 * checking mtx_job_canceled, and returns its result object in *result
 * (taken) or fails. */
typedef enum mt_status (*mtx_job_fn)(struct mtx_job *j, void *arg,
                                     json_t **result, struct mt_error *err);

struct mtx_job_spec {
    const char *kind; /* "check", "ask", "sleep", ... */
    mtx_job_fn fn;
    void *arg; /* taken: freed with arg_free */
    void (*arg_free)(void *arg);
};

/* Finished jobs whose events stay replayable. */
#define MTX_JOBS_KEPT 64

struct mtx_jobs_params {
    size_t workers;         /* local worker threads (0: none) */
    size_t max_queued;      /* local jobs waiting, at most (256) */
    size_t replay_max;      /* bytes of event text a job keeps (1 MiB) */
    double job_timeout_s;   /* a job's time (600) */
    size_t streams_max;     /* readers attached to one job (64) */
    int shared;             /* the state is shared (see above) */
    const char *log_prefix; /* "jobs" */
    /* The state, lent for one use: *lease is given back to state_put. */
    struct mt_state *(*state_get)(void *user, void **lease,
                                  struct mt_error *err);
    void (*state_put)(void *user, void *lease);
    void *user;
};

void mtx_jobs_default_params(struct mtx_jobs_params *p);

/* Starts the runtime and its workers. */
enum mt_status mtx_jobs_start(const struct mtx_jobs_params *p,
                              struct mtx_jobs **out, struct mt_error *err);
/* Stops taking jobs, waits up to grace_s for queued and running jobs,
 * cancels the rest, waits for the mirrors and joins the workers. */
void mtx_jobs_stop(struct mtx_jobs *js, double grace_s);
/* Lets go of the finished jobs kept for replay (after mtx_jobs_stop and
 * after the queue worker loop's threads are gone). */
void mtx_jobs_forget(struct mtx_jobs *js);
/* Frees the runtime (stopped, no reader left); NULL is allowed. */
void mtx_jobs_free(struct mtx_jobs *js);

/* Jobs queued and running now. */
void mtx_jobs_counts(struct mtx_jobs *js, size_t *queued, size_t *running);
/* 1 once mtx_jobs_stop has begun. */
int mtx_jobs_stopping(struct mtx_jobs *js);
/* Waits up to secs seconds for mtx_jobs_poke or the stop; 1 when
 * stopping (a queue worker loop's nap). */
int mtx_jobs_nap(struct mtx_jobs *js, double secs);
/* Wakes the threads in mtx_jobs_nap (a row was just queued here). */
void mtx_jobs_poke(struct mtx_jobs *js);

/* Queues a job for run 'run_id' on the local workers. MT_ELIMIT when the
 * queue is full, MT_ECANCELED when stopping; the run is then failed. The
 * spec's arg is taken even on failure. */
enum mt_status mtx_jobs_submit(struct mtx_jobs *js, int64_t run_id,
                               const struct mtx_job_spec *spec,
                               struct mt_error *err);
/* Runs the claimed row 'row' (lent until this returns) of run 'run' on
 * the calling thread: 'spec' as built, or NULL to fail the run with
 * 'why'. A later attempt first replays the rows the earlier ones wrote. */
void mtx_jobs_run_row(struct mtx_jobs *js, int64_t run, struct mtx_qjob *row,
                      const struct mtx_job_spec *spec,
                      const struct mt_error *why);
/* With a shared state: when no job here holds run 'run_id', starts a
 * mirror job that replays the run's events from the state's rows
 * (another node runs it, or ran it), so that mtx_jobs_find finds it. */
void mtx_jobs_mirror(struct mtx_jobs *js, int64_t run_id);
/* Asks the live job of run 'run_id' to stop; returns 1 when one was
 * running or queued, 0 when there is none (finished or unknown). */
int mtx_jobs_cancel(struct mtx_jobs *js, int64_t run_id);
/* The live job of run 'run_id' with a reference taken, or NULL. */
struct mtx_job *mtx_jobs_find(struct mtx_jobs *js, int64_t run_id);
/* The job the calling worker thread is running, with a reference taken,
 * or NULL: routes a library callback that runs on the job's thread to
 * its job. */
struct mtx_job *mtx_jobs_self(struct mtx_jobs *js);
/* Wakes every waiting reader (shutdown); NULL is allowed. */
void mtx_jobs_wake_all(struct mtx_jobs *js);

/* With a shared state a job is a row of the queue (store/queue.h) whose
 * kind is the job's and whose payload is {"kind","run","body"}: its run
 * and the request body the claiming node rebuilds the job from. Queues
 * run 'run' so through the queue worker loop qw (body NULL: "") and wakes
 * the threads in mtx_jobs_nap. */
struct mtx_qworker;
enum mt_status mtx_jobs_row_submit(struct mtx_jobs *js, struct mtx_qworker *qw,
                                   const char *kind, int64_t run,
                                   const char *body, struct mt_error *err);
/* A claimed row's run and body (*payload holds the body: json_decref it);
 * 0 when it is not a row a node wrote: the row is then finished as
 * failed ("unreadable payload"). */
int mtx_jobs_row_read(struct mtx_qjob *qj, int64_t *run, const char **body,
                      json_t **payload);
/* Deletes the event rows of runs that ended over keep_s seconds ago
 * (keep_s <= 0: keeps them), 1,000 runs a call, when due: each minute, or
 * every keep_s / 2 under two minutes. The queue worker loop's heartbeat
 * calls it. */
void mtx_jobs_prune(struct mtx_jobs *js, double keep_s);

/* What mtx_jobs_cancel_run did. */
enum {
    MTX_CANCEL_NONE,   /* the run has already finished (or is unknown) */
    MTX_CANCEL_LIVE,   /* its job here was asked to stop */
    MTX_CANCEL_ENDED,  /* it was interrupted (no job holds it): it is
                          failed now, "cancelled (it was interrupted)" */
    MTX_CANCEL_FLAGGED /* shared state: the run is flagged for the node
                          that runs it (its job reads the flag within a
                          second) */
};
/* Asks run 'run_id' to stop: its live job here, else an interrupted run
 * is ended, else (shared state) an unfinished run is flagged. */
int mtx_jobs_cancel_run(struct mtx_jobs *js, int64_t run_id);

/* Runs left unfinished by a runtime that stopped, single node: the
 * runtime on store folder 'dir' holds DIR/server.lock (flock, *lock_fd;
 * close it to let go) while it runs; the one that gets it knows no other
 * runs jobs on this store, so every queued or running run has lost its
 * job (its process died, was killed with -9, or could not write the
 * final status) and is marked "interrupted" with error 'why' (an end
 * state that a batch resumes from its journal). When another holds the
 * lock, the runs are left as they are (logged). */
enum mt_status mtx_jobs_recover(struct mt_state *st, const char *dir,
                                const char *why, const char *log_prefix,
                                int *lock_fd, struct mt_error *err);
/* With a shared state: runs that no node's job holds any more (a dead
 * node's claimed rows go back to the queue when their lease runs out;
 * these have no row, or only a finished one) are marked interrupted with
 * 'why'. Older than two leases and a minute: a run is queued within
 * milliseconds of its creation. Failures are logged. */
struct mtx_pg;
void mtx_jobs_orphans(struct mtx_pg *pg, double lease_s, const char *why,
                      const char *log_prefix);

/* Gives back a reference (NULL is allowed). */
void mtx_job_release(struct mtx_job *j);
/* Appends an event ("step", ...) with 'data' (taken) and wakes readers. */
void mtx_job_emit(struct mtx_job *j, const char *type, json_t *data);
/* mtx_job_emit with 'data' already JSON text (borrowed). */
void mtx_job_emit_text(struct mtx_job *j, const char *type, const char *data);
/* 1 when the job should stop (timeout, shutdown or a user's cancel). */
int mtx_job_canceled(struct mtx_job *j);
/* Sleeps up to ms milliseconds, waking early on cancellation. */
void mtx_job_sleep(struct mtx_job *j, unsigned ms);

/* Counts a reader on j: 1, or 0 when streams_max are attached. */
int mtx_job_attach(struct mtx_job *j);
void mtx_job_detach(struct mtx_job *j);

/* Where one reader is in a job's events: 'ev' the seq of the next event
 * to load, 'cur' (owned) the rest of the one being sent. Zero it to start
 * from the first event; free it with mtx_job_cursor_free. */
struct mtx_job_cursor {
    size_t ev;
    char *cur;
    size_t len, off;
};
void mtx_job_cursor_free(struct mtx_job_cursor *c);

/* Copies up to max bytes of the events at cursor c: when the events it
 * wants were dropped from the replay log (replay_max) it first gets a
 * "missed" event ({"events","first","reason"}). Returns bytes copied; 0
 * with *end set when the events are over; 0 with *end clear when nothing
 * is ready (then 'waiter' is registered and 'wake(waiter)' is called,
 * under the runtime's lock, once there is more). */
size_t mtx_job_read(struct mtx_job *j, struct mtx_job_cursor *c, char *buf,
                    size_t max, int *end, void *waiter,
                    void (*suspend)(void *waiter), void (*wake)(void *waiter));
/* Removes 'waiter' if it waits on j; returns 1 when it did and 'wake' was
 * called for it (the reader then reads again). */
int mtx_job_poke(struct mtx_job *j, void *waiter);
/* Removes 'waiter' from the job (when a reader goes away). */
void mtx_job_unwait(struct mtx_job *j, void *waiter);

#endif
