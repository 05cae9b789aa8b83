/* The one clock (core/clock.h). */
#include <errno.h>

#include "core/clock.h"

double mtx_clock_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct timespec mtx_clock_deadline(double secs)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)secs;
    ts.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void mtx_clock_sleep(double s)
{
    struct timespec ts;

    if (s <= 0)
        return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int mtx_clock_nap(pthread_mutex_t *mu, pthread_cond_t *cv, const int *stop,
                  double secs)
{
    struct timespec until = mtx_clock_deadline(secs);
    int stopped;

    pthread_mutex_lock(mu);
    if (!*stop)
        pthread_cond_timedwait(cv, mu, &until);
    stopped = *stop;
    pthread_mutex_unlock(mu);
    return stopped;
}
