/* Thread pool: workers take tasks from a mutex-guarded FIFO; a counter of
 * unfinished tasks lets mtx_pool_wait sleep until the batch is done. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "core/pool.h"
#include "medtrust/core.h"

#define POOL_MAX_THREADS 1024

struct task {
    struct task *next;
    mt_pool_fn fn;
    void *arg;
};

struct mt_pool {
    pthread_t *threads;
    size_t nthreads; /* started */
    pthread_mutex_t mu;
    pthread_cond_t work; /* a task was queued, or stop */
    pthread_cond_t idle; /* pending reached 0 */
    int sync_ok;         /* mu and both conds are initialised */
    struct task *head;
    struct task *tail;
    size_t pending; /* queued plus running */
    int stop;
};

/* ==== Workers ==== */

/* Pops the next task, or returns NULL when stopping with an empty queue.
 * Called with mu held. */
static struct task *pop(struct mt_pool *p)
{
    struct task *t;

    while (!p->head && !p->stop)
        pthread_cond_wait(&p->work, &p->mu);
    t = p->head;
    if (t) {
        p->head = t->next;
        if (!p->head)
            p->tail = NULL;
    }
    return t;
}

static void *worker(void *arg)
{
    struct mt_pool *p = arg;
    struct task *t;

    pthread_mutex_lock(&p->mu);
    while ((t = pop(p)) != NULL) {
        pthread_mutex_unlock(&p->mu);
        t->fn(t->arg);
        mt_free(t);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ==== Lifecycle ==== */

size_t mtx_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n > 0 ? (size_t)n : 1;
}

static int init_sync(struct mt_pool *p)
{
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&p->work, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return -1;
    }
    if (pthread_cond_init(&p->idle, NULL) != 0) {
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        return -1;
    }
    p->sync_ok = 1;
    return 0;
}

enum mt_status mtx_pool_new(size_t nthreads, struct mt_pool **out)
{
    struct mt_pool *p;
    enum mt_status st = MT_ENOMEM;

    if (nthreads == 0)
        nthreads = mtx_online_cpus();
    if (nthreads > POOL_MAX_THREADS)
        nthreads = POOL_MAX_THREADS;
    p = mt_calloc(1, sizeof *p);
    if (!p)
        return MT_ENOMEM;
    p->threads = mt_calloc(nthreads, sizeof *p->threads);
    if (!p->threads)
        goto fail;
    st = MT_EINTERNAL;
    if (init_sync(p) != 0)
        goto fail;
    while (p->nthreads < nthreads) {
        if (pthread_create(&p->threads[p->nthreads], NULL, worker, p) != 0)
            goto fail;
        p->nthreads++;
    }
    *out = p;
    return MT_OK;
fail:
    mtx_pool_free(p);
    return st;
}

size_t mtx_pool_size(const struct mt_pool *p)
{
    return p->nthreads;
}

void mtx_pool_free(struct mt_pool *p)
{
    size_t i;

    if (!p)
        return;
    if (p->sync_ok) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&p->mu);
    }
    for (i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    if (p->sync_ok) {
        pthread_cond_destroy(&p->idle);
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
    }
    mt_free(p->threads);
    mt_free(p);
}

/* ==== Tasks ==== */

enum mt_status mtx_pool_submit(struct mt_pool *p, mt_pool_fn fn, void *arg)
{
    struct task *t = mt_malloc(sizeof *t);

    if (!t)
        return MT_ENOMEM;
    t->next = NULL;
    t->fn = fn;
    t->arg = arg;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    p->pending++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    return MT_OK;
}

void mtx_pool_wait(struct mt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* ==== Parallel for ==== */

struct pfor {
    atomic_size_t next; /* next index to hand out */
    size_t n;
    mt_pool_index_fn fn;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t helpers; /* queued or running helper tasks */
};

static void pfor_loop(struct pfor *f)
{
    size_t i;

    while ((i = atomic_fetch_add(&f->next, 1)) < f->n)
        f->fn(i, f->arg);
}

static void pfor_helper(void *arg)
{
    struct pfor *f = arg;

    pfor_loop(f);
    pthread_mutex_lock(&f->mu);
    if (--f->helpers == 0)
        pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void pfor_serial(size_t n, mt_pool_index_fn fn, void *arg)
{
    size_t i;

    for (i = 0; i < n; i++)
        fn(i, arg);
}

/* Queues up to k helpers for f; stops early when out of memory. */
static void pfor_spawn(struct mt_pool *p, struct pfor *f, size_t k)
{
    while (k-- > 0) {
        pthread_mutex_lock(&f->mu);
        f->helpers++;
        pthread_mutex_unlock(&f->mu);
        if (mtx_pool_submit(p, pfor_helper, f) == MT_OK)
            continue;
        pthread_mutex_lock(&f->mu);
        f->helpers--;
        pthread_mutex_unlock(&f->mu);
        return; /* out of memory: the caller does the rest itself */
    }
}

void mtx_pool_parallel_for(struct mt_pool *p, size_t n, mt_pool_index_fn fn,
                           void *arg)
{
    struct pfor f;
    size_t want = p->nthreads < n ? p->nthreads : n;
    int sync_ok = 0;

    if (want > 1 && pthread_mutex_init(&f.mu, NULL) == 0) {
        sync_ok = pthread_cond_init(&f.cv, NULL) == 0;
        if (!sync_ok)
            pthread_mutex_destroy(&f.mu);
    }
    if (!sync_ok) {
        pfor_serial(n, fn, arg);
        return;
    }
    atomic_init(&f.next, 0);
    f.n = n;
    f.fn = fn;
    f.arg = arg;
    f.helpers = 0;
    pfor_spawn(p, &f, want - 1); /* the caller is the want-th thread */
    pfor_loop(&f);
    pthread_mutex_lock(&f.mu);
    while (f.helpers > 0)
        pthread_cond_wait(&f.cv, &f.mu);
    pthread_mutex_unlock(&f.mu);
    pthread_cond_destroy(&f.cv);
    pthread_mutex_destroy(&f.mu);
}
