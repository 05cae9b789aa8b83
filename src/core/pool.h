/* Fixed-size thread pool (pthreads) for batch work: a FIFO of tasks, a wait
 * for all of them, and a parallel for over an index range. */
#ifndef MT_CORE_POOL_H
#define MT_CORE_POOL_H

#include <stddef.h>

#include "medtrust/status.h"

struct mt_pool;

/* A task; 'arg' is whatever was passed to mtx_pool_submit. */
typedef void (*mt_pool_fn)(void *arg);

/* One iteration of mtx_pool_parallel_for: index i in [0, n). */
typedef void (*mt_pool_index_fn)(size_t i, void *arg);

/* The online CPUs (sysconf; at least 1). */
size_t mtx_online_cpus(void);

/* Starts 'nthreads' workers (0 = the number of online CPUs; capped at 1024).
 * On success *out owns the pool (free with mtx_pool_free); on failure *out
 * is unchanged and the result is MT_ENOMEM, or MT_EINTERNAL when a thread
 * cannot be started. */
enum mt_status mtx_pool_new(size_t nthreads, struct mt_pool **out);

/* Number of worker threads. */
size_t mtx_pool_size(const struct mt_pool *p);

/* Queues fn(arg) to run on a worker. 'arg' is borrowed: it must stay valid
 * until the task has run. Returns MT_OK or MT_ENOMEM (nothing queued).
 * Thread-safe; tasks may submit further tasks. */
enum mt_status mtx_pool_submit(struct mt_pool *p, mt_pool_fn fn, void *arg);

/* Blocks until every task submitted so far (and any they submit) has
 * finished. Thread-safe, but must not be called from inside a task. */
void mtx_pool_wait(struct mt_pool *p);

/* Calls fn(i, arg) exactly once for each i in [0, n), spread over the
 * workers and the calling thread, and returns when all calls are done.
 * Iterations must be independent. Needs no memory per index; if queuing
 * helpers fails, the calling thread does the work itself, so it always
 * completes. Thread-safe, but must not be called from inside a task (its
 * helpers could then wait behind the very workers that wait for them). */
void mtx_pool_parallel_for(struct mt_pool *p, size_t n, mt_pool_index_fn fn,
                           void *arg);

/* Runs the tasks still queued, joins the workers and frees the pool. NULL
 * and partly built pools are allowed. Must not be called from a task. */
void mtx_pool_free(struct mt_pool *p);

#endif
