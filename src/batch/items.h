/* A resumable batch of JSONL items (batch layer): items read from a
 * JSONL file ({"id", FIELD, ...}), run on threads by a caller's function
 * that makes each one's output line, each line journaled (fdatasync) as
 * it finishes so a killed run resumes, a progress bar, and the output
 * written atomically, one line an item in input order. `ask --batch` and
 * `qa-eval --queries` (batch/qa_batch.h) and `verify --batch` run on it.
 * Names: mtx_ (internal). */
#ifndef MTX_BATCH_ITEMS_H
#define MTX_BATCH_ITEMS_H

#include <stddef.h>

#include <jansson.h>

#include "medtrust/status.h"

/* The head of each item: a caller's item struct starts with it, and the
 * runner steps through the caller's array by the struct's size. */
struct mtx_item {
    char *id;
    char *line; /* its output line, once done */
    int resumed;
    int failed; /* its run failed: 'line' holds the "error" */
};

/* The item at index i of an array of items of 'size' bytes each. */
#define MTX_ITEM(v, size, i) ((struct mtx_item *)((char *)(v) + (i) * (size)))

/* Reads the fields after "id" and 'field' from line 'o' into item x
 * (zeroed, its id set); MT_EPARSE or MT_ENOMEM. */
typedef enum mt_status (*mtx_item_read_fn)(void *x, json_t *o);
/* Frees what an item holds besides its head. May be NULL. */
typedef void (*mtx_item_free_fn)(void *x);

/* Reads up to 'limit' (0 = all) items of 'size' bytes from a JSONL file
 * whose lines each need a string "id" and a string 'field' (an error
 * names the file and line otherwise). *out and *n are the caller's
 * (mtx_items_free) whatever the result. */
enum mt_status mtx_items_load(const char *path, size_t limit, size_t size,
                              const char *field, mtx_item_read_fn read,
                              mtx_item_free_fn free_fn, void **out, size_t *n,
                              struct mt_error *err);
void mtx_items_free(void *v, size_t n, size_t size, mtx_item_free_fn free_fn);

/* Item i's output line (new; NULL when out of memory). Sets e->status:
 * not MT_OK marks the item failed (journaled with e->msg, so a resume
 * runs it again). Runs on the worker threads. */
typedef char *(*mtx_item_run_fn)(void *user, void *item, struct mt_error *e);

struct mtx_items_params {
    const char *journal; /* OUT.journal, or NULL for none */
    int resume;          /* keep the items the journal holds */
    unsigned jobs;       /* items at once (0: 1) */
    int quiet;           /* no progress bar */
    const char *label;   /* progress label */
    mtx_item_run_fn run;
    void *user;
};

struct mtx_items_stats {
    size_t resumed;
    size_t done;
    size_t failed; /* items whose run failed, journaled as failed */
};

/* Runs every item not resumed; every item's line is set (NULL only when
 * out of memory). Returns the fatal error (a journal that cannot be
 * opened or written). */
enum mt_status mtx_items_run(void *v, size_t n, size_t size,
                             const struct mtx_items_params *p,
                             struct mtx_items_stats *stats,
                             struct mt_error *err);

/* Writes each item's line to 'path' atomically, in order ({} for an item
 * with none, so the output keeps one line an input item). */
enum mt_status mtx_items_write(const char *path, const void *v, size_t n,
                               size_t size, struct mt_error *err);

#endif
