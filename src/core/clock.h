/* The one clock: elapsed time from CLOCK_MONOTONIC, absolute deadlines on
 * CLOCK_REALTIME for pthread_cond_timedwait (whose default clock it is),
 * sleeping, and a nap on a condition variable that a stop flag cuts short.
 * Every timer, timeout and timed wait in src/ goes through these. */
#ifndef MT_CORE_CLOCK_H
#define MT_CORE_CLOCK_H

#include <pthread.h>
#include <time.h>

/* Seconds on the monotonic clock (an arbitrary origin: only differences
 * mean anything). */
double mtx_clock_now(void);

/* The CLOCK_REALTIME time 'secs' (>= 0) from now, normalised, for
 * pthread_cond_timedwait. */
struct timespec mtx_clock_deadline(double secs);

/* Sleeps 's' seconds, resuming after a signal; nothing when s <= 0. */
void mtx_clock_sleep(double s);

/* With 'mu' held only inside: waits on 'cv' up to 'secs' seconds unless
 * *stop is already set (one wait: a broadcast or spurious wake-up ends it
 * early). Returns *stop as read under 'mu' afterwards. */
int mtx_clock_nap(pthread_mutex_t *mu, pthread_cond_t *cv, const int *stop,
                  double secs);

#endif
