/* Per-account (and, before login, per-address) rate limits: token buckets
 * of rate_per_s tokens a second up to rate_burst, in a fixed open-addressed
 * table; when it is full the longest-idle bucket is reused. */
#include <stdio.h>
#include <string.h>

#include "server/srv_int.h"

static size_t key_hash(const char *k)
{
    size_t h = 1469598103934665603ull; /* FNV-1a */

    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h;
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

unsigned mt_srv_rate_take(struct mt_server *s, const char *key)
{
    double now = mt_srv_now();
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
