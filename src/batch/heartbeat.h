/* The heartbeat of a queue worker (batch layer): one thread that calls
 * 'fn' at once and then every lease/3 seconds (at most 1 s apart), so
 * the leases of the jobs in hand are extended well before they run out
 * (store/queue.h). `medtrust worker` and the server's shared-queue
 * workers both run theirs on it. */
#ifndef MTX_BATCH_HEARTBEAT_H
#define MTX_BATCH_HEARTBEAT_H

#include <pthread.h>

#include "medtrust/status.h"

struct mtx_heartbeat {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int on;   /* the thread runs */
    int stop; /* under mu: asked to stop */
    double every_s;
    void (*fn)(void *user);
    void *user;
};

/* Starts the thread: fn(user) at once, then every min(lease_s / 3, 1)
 * seconds until mtx_heartbeat_stop. MT_EINTERNAL when no thread can
 * start (h is then stopped: mtx_heartbeat_stop is a no-op). */
enum mt_status mtx_heartbeat_start(struct mtx_heartbeat *h, double lease_s,
                                   void (*fn)(void *user), void *user,
                                   struct mt_error *err);

/* Wakes the thread, waits for a call of fn in progress to end and joins
 * it; fn is not called again. Safe on a zeroed or stopped heartbeat. */
void mtx_heartbeat_stop(struct mtx_heartbeat *h);

#endif
