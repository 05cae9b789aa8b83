/* The job queue in PostgreSQL (issue 19, docs/architecture.md "Past one
 * machine"): a run is a row with its kind and options, its jobs are rows
 * that workers claim with SELECT ... FOR UPDATE SKIP LOCKED under a lease
 * they extend by heartbeats. A job whose lease ran out (its worker died)
 * is claimable again; a result is accepted only from the claim that holds
 * the job's current attempt number, so no job is done twice. Internal to
 * the library; every call takes a connection that one thread uses at a
 * time (store/pg.h). */
#ifndef MTX_QUEUE_H
#define MTX_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "store/pg.h"

/* Connects to 'url' and creates or upgrades the queue's tables (component
 * "queue"); *out owns the connection (mtx_pg_close). */
enum mt_status mtx_queue_open(const char *url, struct mtx_pg **out,
                              struct mt_error *err);

/* Creates a run of 'n' jobs in one transaction: 'kind' (e.g. "mediqa"),
 * 'options' (JSON text the workers read), and each job's payload (JSON
 * text), numbered 0..n-1 in the order given. *run receives its id. */
enum mt_status mtx_queue_submit(struct mtx_pg *pg, const char *kind,
                                const char *options,
                                const char *const *payloads, size_t n,
                                int64_t *run, struct mt_error *err);

/* A claimed job; the strings belong to the caller (mtx_queue_job_free). */
struct mtx_queue_job {
    int64_t id;
    int64_t run;
    int64_t seq;
    int64_t attempt; /* the fencing token: 2 or more after a lease ran out */
    char *payload;
    char kind[32]; /* its run's kind (cut to 31 bytes) */
};

void mtx_queue_job_free(struct mtx_queue_job *j);

/* Claims the oldest job that is queued, or running with an expired
 * lease, of run 'run' (0: of any run) whose run's kind is one of 'kinds'
 * (a PostgreSQL array literal such as "{mediqa}"; NULL: any kind) for
 * 'worker' for 'lease_s' seconds. MT_ENOTFOUND when there is none. */
enum mt_status mtx_queue_claim(struct mtx_pg *pg, const char *worker,
                               double lease_s, int64_t run, const char *kinds,
                               struct mtx_queue_job *job, struct mt_error *err);

/* Extends the leases of the jobs 'ids' that 'worker' still holds by
 * 'lease_s' from now; *kept (may be NULL) receives how many it held. */
enum mt_status mtx_queue_heartbeat(struct mtx_pg *pg, const char *worker,
                                   double lease_s, const int64_t *ids, size_t n,
                                   size_t *kept, struct mt_error *err);

/* Progress of the runs a worker serves: their jobs and how many are
 * done, read from the runs' own rows (each run counts its finished jobs),
 * never by counting job rows. */
struct mtx_queue_progress {
    int64_t total, done;
};

/* One heartbeat: mtx_queue_heartbeat (n may be 0) and, in the same
 * statement, the progress of run 'run' (0: every run) of 'kinds' (NULL:
 * any) into *prog. */
enum mt_status mtx_queue_beat(struct mtx_pg *pg, const char *worker,
                              double lease_s, const int64_t *ids, size_t n,
                              int64_t run, const char *kinds, size_t *kept,
                              struct mtx_queue_progress *prog,
                              struct mt_error *err);

/* Records the job's result (JSON text) and marks it done, if 'job' still
 * holds its current attempt; MT_ECANCELED when another claim took it
 * over (the result is dropped). A repeat after an unacknowledged commit
 * finds its own result and returns MT_OK. */
enum mt_status mtx_queue_finish(struct mtx_pg *pg,
                                const struct mtx_queue_job *job,
                                const char *result, int failed,
                                struct mt_error *err);

/* Puts a job this claim holds back in the queue at once. */
enum mt_status mtx_queue_release(struct mtx_pg *pg,
                                 const struct mtx_queue_job *job,
                                 struct mt_error *err);

struct mtx_queue_counts {
    int64_t total, queued, running, done, failed;
    int64_t reclaimed; /* claims beyond the first: leases that ran out */
};

/* Counts the jobs of run 'run' (0: of every run) of 'kinds' (NULL: any
 * kind; as mtx_queue_claim). */
enum mt_status mtx_queue_counts(struct mtx_pg *pg, int64_t run,
                                const char *kinds, struct mtx_queue_counts *c,
                                struct mt_error *err);

/* The run's kind and options (the caller frees both with mt_free);
 * MT_ENOTFOUND naming the run when there is no such run. */
enum mt_status mtx_queue_run(struct mtx_pg *pg, int64_t run, char **kind,
                             char **options, struct mt_error *err);

/* Called for each finished job of a run in job order; 'result' is the
 * text the worker recorded. A non-OK return stops the walk. */
typedef enum mt_status (*mtx_queue_result_fn)(int64_t seq, const char *result,
                                              int failed, void *user);

enum mt_status mtx_queue_results(struct mtx_pg *pg, int64_t run,
                                 mtx_queue_result_fn fn, void *user,
                                 struct mt_error *err);

/* Marks "interrupted" the runs of the shared state (its runs table) that
 * are queued or running, older than older_s seconds, and that no
 * unfinished queue row holds: their server died before it queued them,
 * or their job ended without its status written. *n gets how many. */
enum mt_status mtx_queue_orphans(struct mtx_pg *pg, double older_s,
                                 const char *why, int64_t *n,
                                 struct mt_error *err);

#endif
