/* Allocation wrappers with failure injection for OOM tests. The counter is
 * atomic so thread-pool workers can allocate while a test injects. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"

static atomic_long fail_after = -1; /* < 0: injection off */
static atomic_long fail_count = 0;

static int should_fail(void)
{
    long n = atomic_load(&fail_after);

    if (n < 0)
        return 0;
    for (;;) {
        if (n == 0) {
            atomic_fetch_add(&fail_count, 1);
            return 1;
        }
        if (atomic_compare_exchange_weak(&fail_after, &n, n - 1))
            return 0;
        if (n < 0)
            return 0;
    }
}

void mt_alloc_fail_after(long n)
{
    atomic_store(&fail_count, 0);
    atomic_store(&fail_after, n < 0 ? -1 : n);
}

void mt_alloc_fail_reset(void)
{
    atomic_store(&fail_after, -1);
}

long mt_alloc_failures(void)
{
    return atomic_load(&fail_count);
}

void *mt_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *mt_calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *mt_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void mt_free(void *p)
{
    free(p);
}

char *mt_strndup(const char *s, size_t n)
{
    char *d = mt_malloc(n + 1);

    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *mt_strdup(const char *s)
{
    return mt_strndup(s, strlen(s));
}
