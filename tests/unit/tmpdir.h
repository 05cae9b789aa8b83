/* A temporary folder for a suite: its setup calls tmpdir_make("mt-NAME"),
 * which makes /tmp/mt-NAME-XXXXXX into tmpl, and teardown (or the suite's
 * own, through tmpdir_remove) removes it with everything in it. */
#ifndef MT_TEST_TMPDIR_H
#define MT_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpl[64];

static inline int tmpdir_make(const char *prefix)
{
    snprintf(tmpl, sizeof tmpl, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(tmpl) ? 0 : -1;
}

/* Removes tmpl (if made) and what it holds; 0 or -1. */
static inline int tmpdir_remove(void)
{
    char cmd[128];

    if (!tmpl[0])
        return 0;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    tmpl[0] = '\0';
    return system(cmd) == 0 ? 0 : -1;
}

static inline int teardown(void **state)
{
    (void)state;
    return tmpdir_remove();
}

#endif
