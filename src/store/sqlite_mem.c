/* Routes SQLite's allocations through mt_malloc, so OOM tests reach the
 * database layer too. Installed once, before SQLite initialises. */
#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

#include "medtrust/core.h"
#include "store/store_int.h"

/* Each block carries its size in a header aligned for any type. */
#define HDR 16

static void *mem_malloc(int n)
{
    unsigned char *p = mt_malloc((size_t)n + HDR);

    if (!p)
        return NULL;
    memcpy(p, &n, sizeof n);
    return p + HDR;
}

static void mem_free(void *p)
{
    if (p)
        mt_free((unsigned char *)p - HDR);
}

static void *mem_realloc(void *p, int n)
{
    unsigned char *q;

    if (!p)
        return mem_malloc(n);
    q = mt_realloc((unsigned char *)p - HDR, (size_t)n + HDR);
    if (!q)
        return NULL;
    memcpy(q, &n, sizeof n);
    return q + HDR;
}

static int mem_size(void *p)
{
    int n;

    if (!p)
        return 0;
    memcpy(&n, (unsigned char *)p - HDR, sizeof n);
    return n;
}

static int mem_roundup(int n)
{
    return (n + 7) & ~7;
}

static int mem_init(void *app)
{
    (void)app;
    return SQLITE_OK;
}

static void mem_shutdown(void *app)
{
    (void)app;
}

static const sqlite3_mem_methods mem_methods = {
    mem_malloc,  mem_free, mem_realloc,  mem_size,
    mem_roundup, mem_init, mem_shutdown, NULL,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_rc = SQLITE_OK;

static void install(void)
{
    /* Fails harmlessly (SQLITE_MISUSE) when the host application already
     * initialised SQLite; then SQLite keeps its own allocator. */
    sqlite3_config(SQLITE_CONFIG_MALLOC, &mem_methods);
    init_rc = sqlite3_initialize();
}

int mtx_store_sqlite_init(void)
{
    pthread_once(&once, install);
    return init_rc;
}
