/* The checker cache (batch/checkers.h): a small array kept in order of
 * use, most recent last; a lookup is a scan (a cache holds a handful). */
#include <pthread.h>
#include <string.h>

#include "batch/checkers.h"
#include "medtrust/core.h"

struct entry {
    char *key;
    struct mt_agent *agent;
    size_t users; /* jobs holding it */
};

struct mtx_checkers {
    pthread_mutex_t mu;
    mtx_checkers_open_fn open;
    void *user;
    size_t max, n;
    struct entry *v; /* max of them, v[0..n) in use, least recent first */
};

enum mt_status mtx_checkers_new(size_t max, mtx_checkers_open_fn open,
                                void *user, struct mtx_checkers **out,
                                struct mt_error *err)
{
    struct mtx_checkers *c = mt_calloc(1, sizeof *c);

    *out = NULL;
    if (c && max)
        c->v = mt_calloc(max, sizeof *c->v);
    if (!c || !c->v) {
        mt_free(c);
        return max ? mt_fail(err, MT_ENOMEM, "out of memory")
                   : mt_fail(err, MT_EINVAL, "a checker cache holds >= 1");
    }
    pthread_mutex_init(&c->mu, NULL);
    c->open = open;
    c->user = user;
    c->max = max;
    *out = c;
    return MT_OK;
}

static void entry_close(struct entry *e)
{
    mt_agent_close(e->agent);
    mt_free(e->key);
    memset(e, 0, sizeof *e);
}

/* Moves entry i to the end (the most recently used); returns it. */
static struct entry *touch(struct mtx_checkers *c, size_t i)
{
    struct entry e = c->v[i];

    memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof *c->v);
    c->v[c->n - 1] = e;
    return &c->v[c->n - 1];
}

/* Closes the least recently used checker no job holds: -1 when all are
 * held. */
static int evict(struct mtx_checkers *c)
{
    size_t i;

    for (i = 0; i < c->n && c->v[i].users; i++)
        ;
    if (i == c->n)
        return -1;
    entry_close(&c->v[i]);
    memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof *c->v);
    c->n--;
    return 0;
}

/* The entry of 'key', opened into a new one when there is none. */
static enum mt_status find(struct mtx_checkers *c, const char *key, void *arg,
                           struct entry **out, struct mt_error *err)
{
    struct entry e = {NULL, NULL, 0};
    enum mt_status st;
    size_t i;

    for (i = 0; i < c->n; i++)
        if (strcmp(c->v[i].key, key) == 0) {
            *out = touch(c, i);
            return MT_OK;
        }
    if (c->n == c->max && evict(c) != 0)
        return mt_fail(err, MT_ELIMIT,
                       "more than %zu checkers in use at once: wait for a "
                       "job to end",
                       c->max);
    if (!(e.key = mt_strdup(key)))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = c->open(c->user, key, arg, &e.agent, err);
    if (st != MT_OK) {
        entry_close(&e);
        return st;
    }
    c->v[c->n++] = e;
    *out = &c->v[c->n - 1];
    return MT_OK;
}

enum mt_status mtx_checkers_get(struct mtx_checkers *c, const char *key,
                                void *arg, struct mt_agent **out,
                                struct mt_error *err)
{
    struct entry *e = NULL;
    enum mt_status st;

    *out = NULL;
    pthread_mutex_lock(&c->mu);
    st = find(c, key, arg, &e, err);
    if (st == MT_OK && e) {
        e->users++;
        *out = e->agent;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

void mtx_checkers_put(struct mtx_checkers *c, struct mt_agent *a)
{
    size_t i;

    if (!c || !a)
        return;
    pthread_mutex_lock(&c->mu);
    for (i = 0; i < c->n; i++)
        if (c->v[i].agent == a && c->v[i].users > 0) {
            c->v[i].users--;
            break;
        }
    pthread_mutex_unlock(&c->mu);
}

size_t mtx_checkers_count(struct mtx_checkers *c)
{
    size_t n;

    pthread_mutex_lock(&c->mu);
    n = c->n;
    pthread_mutex_unlock(&c->mu);
    return n;
}

void mtx_checkers_free(struct mtx_checkers *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < c->n; i++)
        entry_close(&c->v[i]);
    pthread_mutex_destroy(&c->mu);
    mt_free(c->v);
    mt_free(c);
}
