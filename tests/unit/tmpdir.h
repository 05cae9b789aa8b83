/* A temporary folder for each test of a suite: the suite's setup calls
 * tmpdir_make("mt-NAME"), which makes /tmp/mt-NAME-XXXXXX into tmpl, and
 * teardown removes it with everything in it. */
#ifndef MT_TEST_TMPDIR_H
#define MT_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpl[64];

static int tmpdir_make(const char *prefix)
{
    snprintf(tmpl, sizeof tmpl, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(tmpl) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    return system(cmd);
}

#endif
