/* Arena allocator: chained blocks, one free. */
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "core/arena.h"
#include "medtrust/core.h"

struct mt_arena_block {
    struct mt_arena_block *next;
    size_t cap;
    size_t off;
    alignas(max_align_t) unsigned char mem[];
};

#define ARENA_ALIGN (alignof(max_align_t))

static struct mt_arena_block *block_new(size_t cap)
{
    struct mt_arena_block *b = mt_malloc(sizeof *b + cap);

    if (!b)
        return NULL;
    b->next = NULL;
    b->cap = cap;
    b->off = 0;
    return b;
}

void *mtx_arena_alloc(struct mt_arena *a, size_t n)
{
    struct mt_arena_block *b = a->head;
    size_t need = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
    void *p;

    if (need < n)
        return NULL; /* overflow */
    if (!b || b->cap - b->off < need) {
        size_t cap = a->block_size ? a->block_size : 64 * 1024;
        if (cap < need)
            cap = need;
        b = block_new(cap);
        if (!b)
            return NULL;
        b->next = a->head;
        a->head = b;
    }
    p = b->mem + b->off;
    b->off += need;
    a->used += need;
    return p;
}

char *mtx_arena_strndup(struct mt_arena *a, const char *s, size_t n)
{
    char *d = mtx_arena_alloc(a, n + 1);

    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void mtx_arena_reset(struct mt_arena *a)
{
    struct mt_arena_block *b = a->head;
    struct mt_arena_block *last = NULL;

    while (b) {
        struct mt_arena_block *next = b->next;
        if (!next) {
            last = b;
            break;
        }
        mt_free(b);
        b = next;
    }
    a->head = last;
    if (last)
        last->off = 0;
    a->used = 0;
}

void mtx_arena_free(struct mt_arena *a)
{
    struct mt_arena_block *b = a->head;

    while (b) {
        struct mt_arena_block *next = b->next;
        mt_free(b);
        b = next;
    }
    a->head = NULL;
    a->used = 0;
}
