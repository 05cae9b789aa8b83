/* Shared helpers for cmocka unit tests: CHECK works regardless of NDEBUG,
 * and data paths come from $MEDTRUST_DATA. */
#ifndef MT_TEST_CHECK_H
#define MT_TEST_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CHECK(cond) assert_true(cond)
#define CHECK_OK(expr) assert_int_equal((expr), MT_OK)

/* Skips the running test and says why on a "# SKIP" line, which
 * tests/run.sh prints beside the test's name. Only for what no setup can
 * provide (a random model's output too short to test, say): a missing
 * prerequisite that `make bootstrap` or `make unit-build` provides is a
 * failure, MISSING. */
#define SKIP_BECAUSE(why)                                                      \
    do {                                                                       \
        print_message("# SKIP %s\n", (why));                                   \
        skip();                                                                \
    } while (0)

/* Fails the running test: 'what' (a file, a fixture, a model) should be
 * here and is not. */
#define MISSING(what)                                                          \
    fail_msg("missing %s: run `make bootstrap` and `make unit-build`", (what))

/* Writes "$MEDTRUST_DATA/rel" into buf. The data sets are required: a
 * test that needs a missing file fails, naming the path. */
static inline const char *test_data_path(char *buf, size_t n, const char *rel)
{
    const char *d = getenv("MEDTRUST_DATA");

    if (!d)
        d = "../shared/data";
    snprintf(buf, n, "%s/%s", d, rel);
    return buf;
}

#endif
