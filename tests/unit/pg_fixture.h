/* A throwaway PostgreSQL cluster for cmocka suites, through
 * tests/fixtures/pg_cluster.sh (initdb in a temp folder, a free loopback
 * port, an unprivileged user when run as root, removed afterwards). The
 * suites run from the repository root (tests/run.sh). */
#ifndef MT_TEST_PG_FIXTURE_H
#define MT_TEST_PG_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PGFX_SCRIPT "tests/fixtures/pg_cluster.sh"

struct pgfx {
    char dir[64];  /* the fixture's state folder */
    char url[128]; /* postgresql://medtrust@127.0.0.1:PORT/medtrust */
};

/* Runs "pg_cluster.sh CMD DIR"; returns its exit status. */
static inline int pgfx_run(const struct pgfx *f, const char *cmd)
{
    char line[256];

    snprintf(line, sizeof line, "bash " PGFX_SCRIPT " %s %s >/dev/null", cmd,
             f->dir);
    return system(line);
}

/* Starts a cluster; 0 on success (f->url is its URL). */
static inline int pgfx_start(struct pgfx *f)
{
    char line[256];
    FILE *p;
    size_t n;

    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/mt-pgfx-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(line, sizeof line, "bash " PGFX_SCRIPT " start %s", f->dir);
    p = popen(line, "r");
    if (!p)
        return -1;
    if (!fgets(f->url, sizeof f->url, p))
        f->url[0] = '\0';
    if (pclose(p) != 0 || strncmp(f->url, "postgresql://", 13) != 0)
        return -1;
    n = strcspn(f->url, "\n");
    f->url[n] = '\0';
    return 0;
}

/* A cmocka group setup's start: 0, or -1 saying why on stderr. */
static inline int pgfx_suite_start(struct pgfx *f)
{
    if (pgfx_start(f) == 0)
        return 0;
    fprintf(stderr, "could not start a PostgreSQL cluster (run make "
                    "bootstrap)\n");
    return -1;
}

/* Restarts the server (fast shutdown: every session is cut). */
static inline int pgfx_restart(const struct pgfx *f)
{
    return pgfx_run(f, "restart");
}

/* Stops the server and removes the cluster and f->dir. */
static inline void pgfx_stop(struct pgfx *f)
{
    char line[128];

    if (!f->dir[0])
        return;
    pgfx_run(f, "stop");
    snprintf(line, sizeof line, "rm -rf %s", f->dir);
    if (system(line) != 0)
        fprintf(stderr, "pgfx: could not remove %s\n", f->dir);
    f->dir[0] = '\0';
}

#endif
