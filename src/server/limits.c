/* Per-account (and, before login, per-address) rate limits: token buckets
 * of rate_per_s tokens a second up to rate_burst, in a fixed open-addressed
 * table; when it is full the longest-idle bucket is reused. Also the
 * failed-login throttle, per account name and per client address, in a
 * table of the same shape, or with a shared state in its rows. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/buf.h"
#include "core/clock.h"
#include "server/srv_int.h"

static size_t key_hash(const char *k)
{
    return (size_t)mtx_fnv1a(MTX_FNV1A_INIT, k, strlen(k));
}

/* Finds key's bucket or claims an empty or the longest-idle one. */
static struct srv_bucket *bucket(struct mt_server *s, const char *key,
                                 double now)
{
    size_t h = key_hash(key);
    struct srv_bucket *oldest = NULL;
    size_t i;

    for (i = 0; i < 16; i++) {
        struct srv_bucket *b = &s->buckets[(h + i) % SRV_RL_SLOTS];
        if (strcmp(b->key, key) == 0)
            return b;
        if (!b->key[0] || !oldest || b->last < oldest->last)
            oldest = b;
        if (!b->key[0])
            break;
    }
    snprintf(oldest->key, sizeof oldest->key, "%s", key);
    oldest->tokens = s->p.rate_burst;
    oldest->last = now;
    return oldest;
}

unsigned mtx_srv_rate_take(struct mt_server *s, const char *key)
{
    double now = mtx_clock_now();
    double rate = s->p.rate_per_s;
    unsigned wait = 0;
    struct srv_bucket *b;

    if (rate <= 0 || !s->buckets)
        return 0;
    pthread_mutex_lock(&s->rl_mu);
    b = bucket(s, key, now);
    b->tokens += (now - b->last) * rate;
    if (b->tokens > s->p.rate_burst)
        b->tokens = s->p.rate_burst;
    b->last = now;
    if (b->tokens >= 1.0)
        b->tokens -= 1.0;
    else
        wait = (unsigned)((1.0 - b->tokens) / rate) + 1;
    pthread_mutex_unlock(&s->rl_mu);
    return wait;
}

/* ==== Failed logins ==== */

/* Finds key's entry or claims an empty or the longest-idle one. */
static struct srv_throttle *throttle(struct mt_server *s, const char *key)
{
    size_t h = key_hash(key);
    struct srv_throttle *oldest = NULL;
    size_t i;

    for (i = 0; i < 16; i++) {
        struct srv_throttle *t = &s->throttle[(h + i) % SRV_RL_SLOTS];
        if (strcmp(t->key, key) == 0)
            return t;
        if (!t->key[0] || !oldest || t->last < oldest->last)
            oldest = t;
        if (!t->key[0])
            break;
    }
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->key, sizeof oldest->key, "%s", key);
    return oldest;
}

static void keys(const char *name, const char *remote, char *ka, char *kb,
                 size_t n)
{
    snprintf(ka, n, "a:%.70s", name ? name : "");
    snprintf(kb, n, "ip:%.70s", remote ? remote : "");
}

static unsigned left(const struct srv_throttle *t, double now)
{
    return t->until > now ? (unsigned)(t->until - now) + 1 : 0;
}

/* The lock after 'fails' failures against 'limit': login_lock_s, doubled
 * with each failure past the limit (to login_lock_max_s); 0 below it. */
static double lock_for(const struct mt_server *s, uint32_t fails,
                       uint32_t limit)
{
    double lock = s->p.login_lock_s;
    uint32_t k;

    if (fails < limit)
        return 0;
    for (k = limit; k < fails && lock < s->p.login_lock_max_s; k++)
        lock *= 2;
    return lock > s->p.login_lock_max_s ? s->p.login_lock_max_s : lock;
}

/* Counts a failure; returns the new lock's seconds, or 0. */
static unsigned fail_one(struct mt_server *s, struct srv_throttle *t,
                         uint32_t limit, double now)
{
    double lock;

    t->last = now;
    lock = lock_for(s, ++t->fails, limit);
    if (lock > 0)
        t->until = now + lock;
    return (unsigned)lock;
}

/* ==== Failed logins with a shared state ====
 * With --state postgresql://... the counts and locks are rows, so that a
 * guesser spread over every server behind the balancer meets one limit;
 * locks are whole wall-clock seconds there. A state error lets the login
 * through to the password check (which stays as slow as ever). */

static unsigned shared_wait(struct mt_server *s, const char *ka, const char *kb)
{
    struct srv_lease *l = NULL;
    int64_t a = 0, b = 0, now = (int64_t)time(NULL);

    if (mtx_srv_lease_get(s, &l, NULL) == MT_OK &&
        mt_login_locked_until(l->state, ka, &a, NULL) == MT_OK)
        mt_login_locked_until(l->state, kb, &b, NULL);
    mtx_srv_lease_put(s, l);
    a = a > b ? a : b;
    return a > now ? (unsigned)(a - now) : 0;
}

static unsigned shared_fail_one(struct mt_server *s, struct srv_lease *l,
                                const char *key, uint32_t limit)
{
    int64_t fails = 0;
    double lock;

    if (mt_login_fail(l->state, key, &fails, NULL) != MT_OK || fails <= 0)
        return 0;
    lock =
        lock_for(s, fails > UINT32_MAX ? UINT32_MAX : (uint32_t)fails, limit);
    if (lock <= 0)
        return 0;
    mt_login_lock(l->state, key, (int64_t)time(NULL) + (int64_t)lock + 1, NULL);
    return (unsigned)lock;
}

static unsigned shared_failed(struct mt_server *s, const char *ka,
                              const char *kb)
{
    struct srv_lease *l = NULL;
    unsigned a = 0, b = 0;

    if (mtx_srv_lease_get(s, &l, NULL) == MT_OK) {
        a = shared_fail_one(s, l, ka, s->p.login_failures);
        b = shared_fail_one(s, l, kb, s->p.login_failures * 4);
    }
    mtx_srv_lease_put(s, l);
    return a > b ? a : b;
}

static void shared_ok(struct mt_server *s, const char *ka, const char *kb)
{
    struct srv_lease *l = NULL;

    if (mtx_srv_lease_get(s, &l, NULL) == MT_OK &&
        mt_login_reset(l->state, ka, NULL) == MT_OK)
        mt_login_reset(l->state, kb, NULL);
    mtx_srv_lease_put(s, l);
}

unsigned mtx_srv_login_wait(struct mt_server *s, const char *name,
                            const char *remote)
{
    char ka[80], kb[80];
    unsigned a, b;
    double now = mtx_clock_now();

    if (!s->p.login_failures)
        return 0;
    keys(name, remote, ka, kb, sizeof ka);
    if (s->p.state_url)
        return shared_wait(s, ka, kb);
    pthread_mutex_lock(&s->rl_mu);
    a = left(throttle(s, ka), now);
    b = left(throttle(s, kb), now);
    pthread_mutex_unlock(&s->rl_mu);
    return a > b ? a : b;
}

unsigned mtx_srv_login_failed(struct mt_server *s, const char *name,
                              const char *remote)
{
    char ka[80], kb[80];
    unsigned a, b;
    double now = mtx_clock_now();

    if (!s->p.login_failures)
        return 0;
    keys(name, remote, ka, kb, sizeof ka);
    if (s->p.state_url)
        return shared_failed(s, ka, kb);
    pthread_mutex_lock(&s->rl_mu);
    a = fail_one(s, throttle(s, ka), s->p.login_failures, now);
    /* one address may hold many users (NAT): four times the allowance */
    b = fail_one(s, throttle(s, kb), s->p.login_failures * 4, now);
    pthread_mutex_unlock(&s->rl_mu);
    return a > b ? a : b;
}

void mtx_srv_login_ok(struct mt_server *s, const char *name, const char *remote)
{
    char ka[80], kb[80];

    keys(name, remote, ka, kb, sizeof ka);
    if (s->p.state_url) {
        shared_ok(s, ka, kb);
        return;
    }
    pthread_mutex_lock(&s->rl_mu);
    throttle(s, ka)->fails = 0;
    throttle(s, kb)->fails = 0;
    pthread_mutex_unlock(&s->rl_mu);
}

/* ==== Descriptors ==== */

/* Descriptors kept for everything but client connections: stdio, the
 * listen socket, logs, store and state handles (a few per lease), model
 * sockets and MHD's own per thread. */
#define SRV_FD_RESERVE 64
#define SRV_FD_PER_THREAD 8
#define SRV_CONN_MAX 65536
#define SRV_NOFILE_INFINITY ((rlim_t)1 << 20)

/* Raises the soft RLIMIT_NOFILE to the hard one (a soft limit of 256 or
 * 1024 is common and far below what a server needs). */
static uint64_t raise_nofile(void)
{
    struct rlimit r;
    rlim_t want;

    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return 1024;
    want = r.rlim_max == RLIM_INFINITY ? SRV_NOFILE_INFINITY : r.rlim_max;
    if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
        struct rlimit n = {want, r.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &n) == 0)
            r.rlim_cur = want;
        else
            mt_log(MT_LOG_WARN,
                   "server: cannot raise the open-file limit from %llu to "
                   "%llu",
                   (unsigned long long)r.rlim_cur, (unsigned long long)want);
    }
    return r.rlim_cur == RLIM_INFINITY ? SRV_NOFILE_INFINITY : r.rlim_cur;
}

void mtx_srv_size_conns(struct mt_server *s)
{
    uint64_t reserve =
        SRV_FD_RESERVE +
        SRV_FD_PER_THREAD * ((uint64_t)s->p.threads + s->p.llm_jobs);
    uint64_t cap;

    s->nofile = raise_nofile();
    cap = s->nofile > 2 * reserve ? s->nofile - reserve : s->nofile / 2;
    if (cap > SRV_CONN_MAX)
        cap = SRV_CONN_MAX;
    if (cap < 2 * (uint64_t)s->p.threads)
        cap = 2 * (uint64_t)s->p.threads;
    s->conn_cap = (uint32_t)cap;
    mt_log(MT_LOG_INFO, "server: %llu open files, at most %u connections",
           (unsigned long long)s->nofile, s->conn_cap);
}
