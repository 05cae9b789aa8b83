/* The batch layer (src/batch/): the resumable journal that the CLI's batch
 * verbs and the server's POST /v1/batch share, the queue workers'
 * heartbeat thread, and the checker cache. */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch/checkers.h"
#include "batch/heartbeat.h"
#include "batch/journal.h"
#include "medtrust/core.h"
#include "tmpdir.h"

struct seen {
    char ids[8][16];
    size_t n;
};

static void on_line(const char *id, const char *line, void *user)
{
    struct seen *s = user;

    (void)line;
    if (s->n < 8)
        snprintf(s->ids[s->n++], sizeof s->ids[0], "%s", id);
}

static off_t file_size(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* A journal resumes its finished records, not a failed one, and a torn
 * last line (a crash mid-write) is cut so the next record starts clean. */
static void test_journal_resumes_and_cuts_torn_line(void **state)
{
    char path[128];
    struct mtx_journal *j = NULL, *k = NULL;
    struct mt_error err = {MT_OK, ""};
    struct seen s = {{{0}}, 0};
    off_t good;
    int fd;

    (void)state;
    CHECK(tmpdir_make("mt-batch") == 0);
    snprintf(path, sizeof path, "%s/journal.jsonl", tmpl);
    CHECK_OK(mtx_journal_open(path, 1, on_line, &s, &j, &err));
    CHECK(s.n == 0); /* a new journal holds nothing */
    CHECK_OK(mtx_journal_append(j, "n1", "n1 0 -1 NA", NULL, &err));
    CHECK_OK(mtx_journal_append(j, "n2", "", "the model was down", &err));
    CHECK_OK(mtx_journal_append(j, "n3", "n3 1 2 Fixed.", NULL, &err));
    /* a second run on the same journal is refused while it is open */
    CHECK(mtx_journal_open(path, 1, on_line, &s, &k, &err) == MT_EIO);
    CHECK(strstr(err.msg, "another run") != NULL && k == NULL);
    mtx_journal_close(j);
    good = file_size(path);
    fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, "{\"id\":\"n4\",\"li", 14) == 14);
    close(fd);
    err = (struct mt_error){MT_OK, ""};
    CHECK_OK(mtx_journal_open(path, 1, on_line, &s, &j, &err));
    CHECK(s.n == 2 && strcmp(s.ids[0], "n1") == 0 &&
          strcmp(s.ids[1], "n3") == 0);
    CHECK(file_size(path) == good); /* the torn line is gone */
    CHECK_OK(mtx_journal_append(j, "n4", "n4 0 -1 NA", NULL, &err));
    mtx_journal_close(j);
    s.n = 0;
    CHECK_OK(mtx_journal_open(path, 1, on_line, &s, &j, &err));
    CHECK(s.n == 3 && strcmp(s.ids[2], "n4") == 0);
    mtx_journal_close(j);
    /* without resume it starts empty */
    s.n = 0;
    CHECK_OK(mtx_journal_open(path, 0, on_line, &s, &j, &err));
    CHECK(s.n == 0 && file_size(path) == 0);
    mtx_journal_close(j);
    CHECK(tmpdir_remove() == 0);
}

struct beats {
    pthread_mutex_t mu;
    int n;
};

static void beat(void *user)
{
    struct beats *b = user;

    pthread_mutex_lock(&b->mu);
    b->n++;
    pthread_mutex_unlock(&b->mu);
}

static int beats_of(struct beats *b)
{
    int n;

    pthread_mutex_lock(&b->mu);
    n = b->n;
    pthread_mutex_unlock(&b->mu);
    return n;
}

/* Waits (polling, bounded) until at least 'want' beats; returns the count.
 * No timing threshold: the bound only keeps a broken heartbeat from
 * hanging the suite. */
static int wait_beats(struct beats *b, int want)
{
    int i;

    for (i = 0; i < 3000 && beats_of(b) < want; i++)
        usleep(10 * 1000);
    return beats_of(b);
}

/* The heartbeat calls at once and then keeps calling; after stop it
 * never calls again; stop on a heartbeat never started is harmless. */
static void test_heartbeat_beats_until_stopped(void **state)
{
    struct beats b = {PTHREAD_MUTEX_INITIALIZER, 0};
    struct mtx_heartbeat h, never;
    int after;

    (void)state;
    memset(&never, 0, sizeof never);
    mtx_heartbeat_stop(&never);
    CHECK_OK(mtx_heartbeat_start(&h, 0.3, beat, &b, NULL));
    CHECK(wait_beats(&b, 3) >= 3);
    mtx_heartbeat_stop(&h);
    after = beats_of(&b);
    usleep(300 * 1000); /* three periods: a live thread would beat */
    CHECK(beats_of(&b) == after);
    mtx_heartbeat_stop(&h); /* twice: a no-op */
}

/* ==== The checker cache ==== */

struct opens {
    int n;         /* checkers opened */
    int fail_next; /* the next open fails */
    char last[16]; /* the key opened last */
};

/* Opens a real checker (guards: no corpus; the model is never called). */
static enum mt_status open_checker(void *user, const char *key, void *arg,
                                   struct mt_agent **out, struct mt_error *err)
{
    struct opens *o = user;
    struct mt_agent_params p;

    (void)arg;
    if (o->fail_next) {
        o->fail_next = 0;
        return mt_fail(err, MT_EMODEL, "key %s: cannot open", key);
    }
    mt_agent_default_params(&p);
    p.strategy = MT_STRATEGY_GUARDS;
    p.llm_spec = "openai:http://127.0.0.1:9/v1#none";
    o->n++;
    snprintf(o->last, sizeof o->last, "%s", key);
    return mt_agent_open(&p, out, err);
}

/* One checker a key, opened once and shared; when full, the least
 * recently used one no job holds is closed, never one in use; a failed
 * open keeps nothing. */
static void test_checker_cache_shares_and_evicts_idle(void **state)
{
    struct opens o = {0, 0, ""};
    struct mtx_checkers *c = NULL;
    struct mt_agent *a = NULL, *a2 = NULL, *b = NULL, *x = NULL;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    CHECK(mtx_checkers_new(0, open_checker, &o, &c, &err) == MT_EINVAL);
    CHECK_OK(mtx_checkers_new(2, open_checker, &o, &c, &err));
    CHECK_OK(mtx_checkers_get(c, "a", NULL, &a, &err));
    CHECK_OK(mtx_checkers_get(c, "a", NULL, &a2, &err));
    CHECK(a && a == a2 && o.n == 1);
    CHECK_OK(mtx_checkers_get(c, "b", NULL, &b, &err));
    CHECK(b && b != a && o.n == 2 && mtx_checkers_count(c) == 2);
    /* full, and both held: a third key waits for a job to end */
    CHECK(mtx_checkers_get(c, "x", NULL, &x, &err) == MT_ELIMIT && !x);
    CHECK(o.n == 2);
    mtx_checkers_put(c, b); /* b idle, a still held twice */
    mtx_checkers_put(c, a);
    CHECK_OK(mtx_checkers_get(c, "x", NULL, &x, &err));
    CHECK(o.n == 3 && strcmp(o.last, "x") == 0); /* b was closed */
    CHECK(mtx_checkers_count(c) == 2);
    CHECK_OK(mtx_checkers_get(c, "a", NULL, &a2, &err));
    CHECK(a2 == a && o.n == 3); /* a stayed open */
    mtx_checkers_put(c, a2);
    mtx_checkers_put(c, x);
    o.fail_next = 1;
    CHECK(mtx_checkers_get(c, "y", NULL, &x, &err) == MT_EMODEL && !x);
    CHECK(strstr(err.msg, "key y") != NULL);
    CHECK(mtx_checkers_count(c) == 1); /* x made room, y kept nothing */
    mtx_checkers_put(c, a);
    mtx_checkers_put(c, NULL);
    mtx_checkers_free(c);
    mtx_checkers_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_resumes_and_cuts_torn_line),
        cmocka_unit_test(test_heartbeat_beats_until_stopped),
        cmocka_unit_test(test_checker_cache_shares_and_evicts_idle),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
