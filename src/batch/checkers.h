/* The checker cache (batch layer): open checkers (mt_agent) kept by a
 * key the caller chooses (the server: its model; `medtrust worker`: the
 * queued run whose settings open it), each opened on first use by the
 * caller's open function and shared by every job of that key. A checker
 * a job holds is never closed under it: when the cache is full, the
 * least recently used checker no job holds is closed to make room. */
#ifndef MTX_BATCH_CHECKERS_H
#define MTX_BATCH_CHECKERS_H

#include <stddef.h>

#include "medtrust/check.h"

struct mtx_checkers;

/* Opens the checker of 'key'; 'arg' is mtx_checkers_get's. */
typedef enum mt_status (*mtx_checkers_open_fn)(void *user, const char *key,
                                               void *arg, struct mt_agent **out,
                                               struct mt_error *err);

/* A cache of at most 'max' (>= 1) checkers opened by open(user, ...). */
enum mt_status mtx_checkers_new(size_t max, mtx_checkers_open_fn open,
                                void *user, struct mtx_checkers **out,
                                struct mt_error *err);

/* The checker of 'key', opened now when the cache has none (under the
 * cache's lock, so one key is opened once), held until mtx_checkers_put.
 * MT_ELIMIT when the cache is full of checkers that jobs hold; the open
 * function's failure as it is (nothing is kept). Thread-safe. */
enum mt_status mtx_checkers_get(struct mtx_checkers *c, const char *key,
                                void *arg, struct mt_agent **out,
                                struct mt_error *err);

/* Gives back a checker mtx_checkers_get gave; NULL is allowed. */
void mtx_checkers_put(struct mtx_checkers *c, struct mt_agent *a);

/* The number of checkers open now. Thread-safe. */
size_t mtx_checkers_count(struct mtx_checkers *c);

/* Closes every checker (no job may hold one) and frees the cache; NULL
 * is allowed. */
void mtx_checkers_free(struct mtx_checkers *c);

#endif
