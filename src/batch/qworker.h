/* The queue worker loop (batch layer): threads that claim jobs of the
 * shared queue in PostgreSQL (store/queue.h) under a lease, one heartbeat
 * thread (batch/heartbeat.h) that extends the leases of the jobs in hand,
 * and each claimed job handed to its run kind's callback on the claiming
 * thread. `medtrust worker` (its mediqa jobs) and the server's shared-
 * queue runner (checks, asks, verifications, batches) both run on it; they
 * keep only what a job of their kinds does. Names: mtx_ (internal). */
#ifndef MTX_BATCH_QWORKER_H
#define MTX_BATCH_QWORKER_H

#include <stddef.h>
#include <stdint.h>

#include "store/queue.h"

struct mtx_qworker;

/* A claimed job, lent to its kind's callback on the claiming thread until
 * the callback returns. */
struct mtx_qjob {
    struct mtx_queue_job row; /* the callback may take row.payload */
    struct mtx_qworker *w;
    struct mtx_pg *pg; /* the connection it was claimed on */
};

/* Runs one job. It ends the job with mtx_qjob_finish or mtx_qjob_release;
 * a job left neither (its claim lost) returns to the queue when its
 * lease runs out. */
typedef void (*mtx_qworker_fn)(void *user, struct mtx_qjob *job);

/* A run kind (queue_runs.kind) this worker claims and its callback. */
struct mtx_qworker_kind {
    const char *kind;
    mtx_qworker_fn run;
};

struct mtx_qworker_params {
    const char *url;  /* the queue's PostgreSQL (required) */
    const char *name; /* this worker's name in the queue (NULL: HOST:PID) */
    const char *log_prefix; /* its log lines begin "PREFIX: " ("queue") */
    const struct mtx_qworker_kind *kinds; /* required, nkinds of them */
    size_t nkinds;
    void *user;          /* for the callbacks */
    unsigned threads;    /* claiming threads, 0..512 (4); 0: only the
                            heartbeat and mtx_qworker_call */
    double lease_s;      /* a claim's lease (30) */
    double poll_s;       /* between claims while the queue is empty (1) */
    double retry_s;      /* after a failed queue call: > 0 logs it and tries
                            again after that long (a server); 0 (default)
                            ends the worker with that error */
    int64_t run;         /* only jobs of this run (0: any) */
    int drain;           /* the threads end once no job of the kinds is
                            queued, nor running elsewhere */
    int conn_per_thread; /* each thread claims on its own connection;
                            0: all share one (under a lock) */
    int wait_for_pg;     /* the first connection is tried again with backoff
                            (0.1 s doubling to 5 s) while nothing answers at
                            the URL (PostgreSQL booting) */
    int progress;        /* each heartbeat also reads the progress of the
                            run (or every run) of the kinds, for on_beat */
    /* After each heartbeat (and once more at the end when progress is
     * on); 'p' is NULL unless progress is on. On the heartbeat thread. */
    void (*on_beat)(void *user, const struct mtx_queue_progress *p);
    /* 1 when no new job should be claimed (a signal); may be NULL. */
    int (*stopping)(void *user);
    /* Waits up to s seconds, returning 1 when it should stop (woken by a
     * submit, say); NULL: sleeps, watching stopping. */
    int (*nap)(void *user, double s);
};

void mtx_qworker_default_params(struct mtx_qworker_params *p);

/* Copies the params, connects (unless retry_s > 0: then the first
 * mtx_qworker_call or heartbeat connects), starts the heartbeat and the
 * threads. On failure *out is NULL and err says why. */
enum mt_status mtx_qworker_start(const struct mtx_qworker_params *p,
                                 struct mtx_qworker **out,
                                 struct mt_error *err);

/* Waits for the threads to end (drained, stopping, or a fatal error),
 * stops the heartbeat (a last one when progress is on) and returns the
 * error that ended the worker, if any, copied into err. Safe to call
 * once; the handle stays readable (mtx_qworker_stats) until freed. */
enum mt_status mtx_qworker_stop(struct mtx_qworker *w, struct mt_error *err);

/* Stops (as mtx_qworker_stop) when not yet stopped, closes the
 * connections and frees w. NULL is a no-op. */
void mtx_qworker_free(struct mtx_qworker *w);

/* Records the job's result (JSON text) and marks it done, fenced by its
 * attempt (mtx_queue_finish). MT_ECANCELED when another claim took it
 * over (counted as dropped). Any other failure ends a worker whose
 * retry_s is 0. */
enum mt_status mtx_qjob_finish(struct mtx_qjob *j, const char *result,
                               int failed, struct mt_error *err);

/* Puts the job back in the queue at once (mtx_queue_release). */
enum mt_status mtx_qjob_release(struct mtx_qjob *j, struct mt_error *err);

/* Extends this job's lease; 1 when this claim still holds it, 0 when its
 * lease ran out and another claim took it (or the call failed: err). */
int mtx_qjob_held(struct mtx_qjob *j, struct mt_error *err);

/* Ends the worker with 'st' (its first error wins): no new job is
 * claimed, mtx_qworker_stop returns it. */
void mtx_qworker_fail(struct mtx_qworker *w, enum mt_status st,
                      const struct mt_error *err);

/* Runs fn on the worker's shared connection (opened first when needed),
 * under its lock: submits, maintenance. */
enum mt_status mtx_qworker_call(struct mtx_qworker *w,
                                enum mt_status (*fn)(struct mtx_pg *pg,
                                                     void *user,
                                                     struct mt_error *err),
                                void *user, struct mt_error *err);

/* This worker's name in the queue (as the params gave it, or HOST:PID). */
const char *mtx_qworker_name(const struct mtx_qworker *w);

struct mtx_qworker_stats {
    size_t done;         /* results recorded */
    size_t failed;       /* of them, failed jobs */
    size_t dropped;      /* results refused: the job's lease was taken over */
    double queue_s;      /* wall time in claim, finish and heartbeat calls */
    uint64_t reconnects; /* of the shared connection */
};

void mtx_qworker_stats(struct mtx_qworker *w, struct mtx_qworker_stats *s);

#endif
