/* A queue worker's heartbeat thread (batch/heartbeat.h). */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "batch/heartbeat.h"
#include "core/clock.h"
#include "medtrust/core.h"

/* Waits up to h->every_s or until asked to stop; 1 when asked. */
static int nap(struct mtx_heartbeat *h)
{
    struct timespec until = mtx_clock_deadline(h->every_s);
    int stop;

    pthread_mutex_lock(&h->mu);
    while (!h->stop &&
           pthread_cond_timedwait(&h->wake, &h->mu, &until) != ETIMEDOUT)
        ;
    stop = h->stop;
    pthread_mutex_unlock(&h->mu);
    return stop;
}

static void *beat_main(void *arg)
{
    struct mtx_heartbeat *h = arg;

    do
        h->fn(h->user);
    while (!nap(h));
    return NULL;
}

enum mt_status mtx_heartbeat_start(struct mtx_heartbeat *h, double lease_s,
                                   void (*fn)(void *user), void *user,
                                   struct mt_error *err)
{
    memset(h, 0, sizeof *h);
    h->every_s = lease_s / 3 < 1 ? lease_s / 3 : 1;
    h->fn = fn;
    h->user = user;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->wake, NULL);
    h->on = pthread_create(&h->thread, NULL, beat_main, h) == 0;
    if (h->on)
        return MT_OK;
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->mu);
    return mt_fail(err, MT_EINTERNAL, "cannot start the heartbeat");
}

void mtx_heartbeat_stop(struct mtx_heartbeat *h)
{
    if (!h->on)
        return;
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->mu);
    h->on = 0;
}
