/* Arena: bump allocation from chained blocks, freed in one call. Used for
 * per-request and per-batch scratch memory. */
#ifndef MT_CORE_ARENA_H
#define MT_CORE_ARENA_H

#include <stddef.h>

struct mt_arena_block;

struct mt_arena {
    struct mt_arena_block *head;
    size_t block_size; /* default size of a new block */
    size_t used;       /* bytes handed out, for stats */
};

#define MT_ARENA_INIT(bs) ((struct mt_arena){NULL, (bs), 0})

/* Returns n bytes aligned to max_align_t, or NULL when out of memory. */
void *mtx_arena_alloc(struct mt_arena *a, size_t n);
/* Returns a NUL-terminated copy of n bytes at s, or NULL. */
char *mtx_arena_strndup(struct mt_arena *a, const char *s, size_t n);
/* Frees every block except the first, which it keeps for reuse. */
void mtx_arena_reset(struct mt_arena *a);
/* Frees all memory. */
void mtx_arena_free(struct mt_arena *a);

#endif
