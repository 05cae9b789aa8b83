/* Test helper: runs tests/fixtures/stub_server (built under
 * $MEDTRUST_BUILD/fixtures) with a script, and reads its request log. */
#ifndef MT_TEST_STUB_H
#define MT_TEST_STUB_H

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

struct stub {
    pid_t pid;
    int port;
    char dir[256];
    char log[300];
    char url[64];
};

/* Starts the stub with 'script' (its actions, one a line). Fails the test
 * when the stub binary is not built. */
static inline void stub_start(struct stub *s, const char *script)
{
    const char *b = getenv("MEDTRUST_BUILD");
    char bin[512];
    char sp[300];
    int fd[2];
    FILE *f;

    snprintf(bin, sizeof bin, "%s/fixtures/stub_server", b ? b : "build");
    if (access(bin, X_OK) != 0)
        MISSING(bin);
    snprintf(s->dir, sizeof s->dir, "/tmp/mt-stub-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(sp, sizeof sp, "%s/script", s->dir);
    snprintf(s->log, sizeof s->log, "%s/log", s->dir);
    f = fopen(sp, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    assert_int_equal(pipe(fd), 0);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
        dup2(fd[1], 1);
        close(fd[0]);
        execl(bin, bin, sp, s->log, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    f = fdopen(fd[0], "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &s->port), 1);
    fclose(f);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->port);
}

/* Number of requests logged; *max_active gets the highest concurrency.
 * If 'body' is not NULL, the last request's line is copied there. */
static inline int stub_requests(const struct stub *s, int *max_active,
                                char *body, size_t n)
{
    char line[8192];
    int count = 0;
    int act;
    FILE *f = fopen(s->log, "r");

    if (max_active)
        *max_active = 0;
    while (f && fgets(line, sizeof line, f)) {
        count++;
        if (sscanf(line, "%*u %d", &act) == 1 && max_active &&
            act > *max_active)
            *max_active = act;
        if (body)
            snprintf(body, n, "%s", line);
    }
    if (f)
        fclose(f);
    return count;
}

static inline void stub_stop(struct stub *s)
{
    char p[300];

    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    snprintf(p, sizeof p, "%s/script", s->dir);
    unlink(p);
    unlink(s->log);
    snprintf(p, sizeof p, "%s/cache.db", s->dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/cache.db-wal", s->dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/cache.db-shm", s->dir);
    unlink(p);
    rmdir(s->dir);
}

#endif
