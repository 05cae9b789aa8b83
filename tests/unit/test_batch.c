/* The batch layer (src/batch/): the resumable journal that the CLI's batch
 * verbs and the server's POST /v1/batch share, the resumable item batch
 * of ask, qa-eval and verify, the queue workers' heartbeat thread, and the
 * checker cache. */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch/checkers.h"
#include "batch/heartbeat.h"
#include "batch/items.h"
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

/* ==== The item batch ==== */

struct word_item {
    struct mtx_item it;
    char *word;
};

static enum mt_status word_read(void *p, json_t *o)
{
    struct word_item *x = p;

    x->word = mt_strdup(json_string_value(json_object_get(o, "word")));
    return x->word ? MT_OK : MT_ENOMEM;
}

static void word_free(void *p)
{
    mt_free(((struct word_item *)p)->word);
}

struct word_run {
    pthread_mutex_t mu;
    int calls;
    int fail_bad; /* "bad" fails while set */
};

/* {"id":ID,"upper":WORD} or, for "bad" while fail_bad, a failure. */
static char *word_line(void *user, void *item, struct mt_error *e)
{
    struct word_run *u = user;
    struct word_item *x = item;
    char buf[64];

    pthread_mutex_lock(&u->mu);
    u->calls++;
    pthread_mutex_unlock(&u->mu);
    if (u->fail_bad && strcmp(x->word, "bad") == 0) {
        mt_fail(e, MT_EMODEL, "the model was down");
        snprintf(buf, sizeof buf, "{\"id\":\"%s\",\"error\":\"down\"}",
                 x->it.id);
        return mt_strdup(buf);
    }
    snprintf(buf, sizeof buf, "{\"id\":\"%s\",\"len\":%zu}", x->it.id,
             strlen(x->word));
    return mt_strdup(buf);
}

static char *slurp(const char *path)
{
    static char buf[512];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;

    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Items are read with the fields they need (a line without one named by
 * file and line), run on threads, each line journaled; a failed item is
 * journaled as failed, so a resume runs it alone again; the output keeps
 * the input's order. */
static void test_items_run_journal_resume(void **state)
{
    char in[128], out[128], jpath[160];
    struct mt_error err = {MT_OK, ""};
    struct word_run u = {PTHREAD_MUTEX_INITIALIZER, 0, 1};
    struct mtx_items_params p = {NULL, 0, 2, 1, "words", word_line, &u};
    struct mtx_items_stats st;
    void *v = NULL;
    size_t n = 0;
    FILE *f;

    (void)state;
    CHECK(tmpdir_make("mt-items") == 0);
    snprintf(in, sizeof in, "%s/in.jsonl", tmpl);
    snprintf(out, sizeof out, "%s/out.jsonl", tmpl);
    snprintf(jpath, sizeof jpath, "%s.journal", out);
    CHECK((f = fopen(in, "w")) != NULL);
    fputs("{\"id\":\"a\",\"word\":\"gout\"}\n{\"id\":\"b\",\"word\":"
          "\"bad\"}\n{\"id\":\"c\",\"word\":\"fever\"}\n{\"id\":\"d\"}\n",
          f);
    fclose(f);
    CHECK(mtx_items_load(in, 0, sizeof(struct word_item), "word", word_read,
                         word_free, &v, &n, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "in.jsonl:4: each line needs string \"id\" and "
                          "\"word\" fields") != NULL &&
          v == NULL && n == 0);
    CHECK_OK(mtx_items_load(in, 3, sizeof(struct word_item), "word", word_read,
                            word_free, &v, &n, &err));
    CHECK(n == 3);
    p.journal = jpath;
    CHECK_OK(mtx_items_run(v, n, sizeof(struct word_item), &p, &st, &err));
    CHECK(st.resumed == 0 && st.done == 2 && st.failed == 1 && u.calls == 3);
    CHECK(MTX_ITEM(v, sizeof(struct word_item), 1)->failed);
    CHECK_OK(mtx_items_write(out, v, n, sizeof(struct word_item), &err));
    CHECK(strcmp(slurp(out),
                 "{\"id\":\"a\",\"len\":4}\n{\"id\":\"b\","
                 "\"error\":\"down\"}\n{\"id\":\"c\",\"len\":5}\n") == 0);
    mtx_items_free(v, n, sizeof(struct word_item), word_free);
    /* resumed: a and c kept from the journal, b run again */
    CHECK_OK(mtx_items_load(in, 3, sizeof(struct word_item), "word", word_read,
                            word_free, &v, &n, &err));
    u.calls = 0;
    u.fail_bad = 0;
    p.resume = 1;
    CHECK_OK(mtx_items_run(v, n, sizeof(struct word_item), &p, &st, &err));
    CHECK(st.resumed == 2 && st.done == 1 && st.failed == 0 && u.calls == 1);
    CHECK_OK(mtx_items_write(out, v, n, sizeof(struct word_item), &err));
    CHECK(strcmp(slurp(out), "{\"id\":\"a\",\"len\":4}\n{\"id\":\"b\","
                             "\"len\":3}\n{\"id\":\"c\",\"len\":5}\n") == 0);
    mtx_items_free(v, n, sizeof(struct word_item), word_free);
    CHECK(tmpdir_remove() == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_resumes_and_cuts_torn_line),
        cmocka_unit_test(test_items_run_journal_resume),
        cmocka_unit_test(test_heartbeat_beats_until_stopped),
        cmocka_unit_test(test_checker_cache_shares_and_evicts_idle),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
