/* The batch layer (src/batch/): the resumable journal that the CLI's batch
 * verbs and the server's POST /v1/batch share, the resumable item batch
 * of ask, qa-eval and verify, the queue workers' heartbeat thread, the
 * checker cache, the batch folder and the job runtime the server runs
 * its routes' jobs on. */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch/checkers.h"
#include "batch/folder.h"
#include "batch/heartbeat.h"
#include "batch/items.h"
#include "batch/jobs.h"
#include "batch/journal.h"
#include "medtrust/core.h"
#include "medtrust/params.h"
#include "medtrust/state.h"
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

/* A batch folder saves its upload and settings and reads them back as
 * a resume does; its upload comes back as one request body; a scores
 * file that does not parse is refused naming it; a CSV with some of
 * MEDEC's gold columns but not all is refused, one with none is
 * unlabeled. */
static void test_folder_saves_and_loads(void **state)
{
    static const char csv[] = "Text ID,Text\n1,x\n";
    struct mtx_bfolder f, g;
    struct mt_error err = {MT_OK, ""};
    char *txt = NULL, *body = NULL;
    size_t n = 0;
    json_t *o;

    (void)state;
    CHECK(tmpdir_make("mt-folder") == 0);
    memset(&f, 0, sizeof f);
    mtx_bfolder_dir(tmpl, 7, f.dir, sizeof f.dir);
    CHECK(strstr(f.dir, "/batches/run-7") != NULL);
    f.strat = MT_STRATEGY_GUARDS;
    mt_agent_default_params(&f.set);
    mt_param_set(mt_param_find(&mt_agent_param_table, "max_steps", 1), &f.set,
                 5);
    snprintf(f.name, sizeof f.name, "nightly");
    f.has_model = 1;
    snprintf(f.model, sizeof f.model, "small");
    f.has_bleurt = 1;
    CHECK_OK(mtx_bfolder_check_csv(csv, 10, &err));
    CHECK(!mtx_bfolder_labeled(csv, strlen(csv)));
    CHECK(mtx_bfolder_check_csv("Text ID,Text,Error Flag\n1,x,0\n", 10, &err) !=
          MT_OK);
    CHECK(mtx_bfolder_save(&f, csv, "x y\n", NULL, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "bleurt.txt") != NULL);
    CHECK_OK(mtx_bfolder_save(&f, csv, "1 0.5\n", NULL, &err));
    memset(&g, 0, sizeof g);
    snprintf(g.dir, sizeof g.dir, "%s", f.dir);
    CHECK_OK(mtx_bfolder_load(&g, &err));
    CHECK(g.strat == MT_STRATEGY_GUARDS && strcmp(g.name, "nightly") == 0);
    CHECK(g.has_model && strcmp(g.model, "small") == 0);
    CHECK(g.has_bleurt && !g.has_bertscore && g.set.max_steps == 5);
    CHECK_OK(mtx_bfolder_read(&g, "data.csv", &txt, &n, &err));
    CHECK(n == strlen(csv) && strcmp(txt, csv) == 0);
    mt_free(txt);
    body = mtx_bfolder_upload(&g, &err);
    o = body ? json_loads(body, 0, NULL) : NULL;
    CHECK(o && strcmp(json_string_value(json_object_get(o, "data")), csv) == 0);
    CHECK(json_number_value(json_object_get(o, "max_steps")) == 5);
    CHECK(json_object_get(o, "bleurt") && !json_object_get(o, "bertscore"));
    json_decref(o);
    mt_free(body);
    CHECK(mtx_bfolder_read(&g, "submission.txt", &txt, &n, &err) == MT_EIO);
    CHECK(tmpdir_remove() == 0);
}

static struct mt_state *lend(void *user, void **lease, struct mt_error *err)
{
    (void)lease;
    (void)err;
    return user;
}

static void give_back(void *user, void *lease)
{
    (void)user;
    (void)lease;
}

/* Emits *arg "step" events, then returns {"steps": *arg}. */
static enum mt_status steps_fn(struct mtx_job *j, void *arg, json_t **result,
                               struct mt_error *err)
{
    int i, n = *(const int *)arg;

    (void)err;
    for (i = 0; i < n; i++)
        mtx_job_emit(j, "step", json_pack("{s:i}", "i", i));
    *result = json_pack("{s:i}", "steps", n);
    return MT_OK;
}

static enum mt_status on_status(const struct mt_run *r, void *user)
{
    snprintf(user, 16, "%s", r->status);
    return MT_OK;
}

static void no_suspend(void *w)
{
    (void)w;
}

/* Everything a finished job's reader gets, from the first event. */
static size_t read_all(struct mtx_job *j, char *out, size_t max)
{
    struct mtx_job_cursor c;
    size_t n = 0, got;
    int end = 0;

    memset(&c, 0, sizeof c);
    do {
        got = mtx_job_read(j, &c, out + n, max - 1 - n, &end, NULL, no_suspend,
                           no_suspend);
        n += got;
    } while (got > 0 && !end && n + 1 < max);
    mtx_job_cursor_free(&c);
    out[n] = '\0';
    return n;
}

/* A job runs on a worker: its run goes running, then done with its
 * result; a reader gets its status, each step and "done" in order; with
 * a replay log smaller than the steps, a reader that comes late is told
 * which events it missed and still gets "done". */
static void test_jobs_run_and_replay(void **state)
{
    static int steps = 40;
    struct mtx_job_spec spec = {"steps", steps_fn, &steps, NULL};
    struct mtx_jobs_params p;
    struct mtx_jobs *js = NULL;
    struct mt_state *st = NULL;
    struct mt_error err = {MT_OK, ""};
    static const char first[] =
        "event: status\ndata: {\"status\":\"running\"}\n\n"
        "event: step\ndata: {\"i\":0}\n\n";
    struct mtx_job *j;
    char buf[16384], status[16] = "";
    int64_t run = 0, run2 = 0;

    (void)state;
    CHECK(tmpdir_make("mt-jobs") == 0);
    CHECK_OK(mt_state_open(tmpl, &st, &err));
    CHECK_OK(mt_run_create(st, 0, NULL, "steps", NULL, &run, &err));
    CHECK_OK(mt_run_create(st, 0, NULL, "steps", NULL, &run2, &err));
    mtx_jobs_default_params(&p);
    p.workers = 1;
    p.state_get = lend;
    p.state_put = give_back;
    p.user = st;
    CHECK_OK(mtx_jobs_start(&p, &js, &err));
    CHECK_OK(mtx_jobs_submit(js, run, &spec, &err));
    mtx_jobs_stop(js, 60); /* waits for the queue to drain */
    CHECK(mtx_jobs_submit(js, run2, &spec, &err) == MT_ECANCELED);
    CHECK_OK(mt_run_get(st, run, on_status, status, &err));
    CHECK(strcmp(status, "done") == 0);
    CHECK_OK(mt_run_get(st, run2, on_status, status, &err));
    CHECK(strcmp(status, "failed") == 0); /* refused: the run says so */
    j = mtx_jobs_find(js, run);
    CHECK(j != NULL);
    read_all(j, buf, sizeof buf);
    CHECK(strncmp(buf, first, strlen(first)) == 0);
    CHECK(strstr(buf, "event: step\ndata: {\"i\":39}\n\nevent: done\n") !=
          NULL);
    CHECK(strstr(buf, "\"result\":{\"steps\":40}") != NULL);
    CHECK(strstr(buf, "missed") == NULL);
    mtx_job_release(j);
    mtx_jobs_free(js);
    /* a replay log of 200 bytes keeps the last few events */
    p.replay_max = 200;
    CHECK_OK(mtx_jobs_start(&p, &js, &err));
    CHECK_OK(mt_run_create(st, 0, NULL, "steps", NULL, &run, &err));
    CHECK_OK(mtx_jobs_submit(js, run, &spec, &err));
    mtx_jobs_stop(js, 60);
    j = mtx_jobs_find(js, run);
    CHECK(j != NULL);
    read_all(j, buf, sizeof buf);
    CHECK(strncmp(buf, "event: missed\ndata: {\"events\":", 30) == 0);
    CHECK(strstr(buf, "event: done\n") != NULL);
    CHECK(strstr(buf, "{\"i\":0}") == NULL);
    mtx_job_release(j);
    mtx_jobs_free(js);
    mt_state_close(st);
    CHECK(tmpdir_remove() == 0);
}

/* A single-node runtime that gets DIR/server.lock marks the runs left
 * queued or running interrupted; a second one, which does not get it,
 * leaves them; cancelling an interrupted run ends it failed, a finished
 * one is not cancelled. */
static void test_jobs_recover_and_cancel(void **state)
{
    struct mtx_jobs_params p;
    struct mtx_jobs *js = NULL;
    struct mt_state *st = NULL;
    struct mt_error err = {MT_OK, ""};
    char status[16] = "";
    int64_t queued = 0, running = 0, later = 0;
    int fd = -1, fd2 = -1;

    (void)state;
    CHECK(tmpdir_make("mt-recover") == 0);
    CHECK_OK(mt_state_open(tmpl, &st, &err));
    CHECK_OK(mt_run_create(st, 0, NULL, "check", NULL, &queued, &err));
    CHECK_OK(mt_run_create(st, 0, NULL, "check", NULL, &running, &err));
    CHECK_OK(mt_run_update(st, running, "running", NULL, NULL, &err));
    CHECK_OK(
        mtx_jobs_recover(st, tmpl, "interrupted: test", "test", &fd, &err));
    CHECK(fd >= 0);
    CHECK_OK(mt_run_get(st, queued, on_status, status, &err));
    CHECK(strcmp(status, "interrupted") == 0);
    CHECK_OK(mt_run_get(st, running, on_status, status, &err));
    CHECK(strcmp(status, "interrupted") == 0);
    /* the lock is held: another runtime leaves the runs as they are */
    CHECK_OK(mt_run_create(st, 0, NULL, "check", NULL, &later, &err));
    CHECK_OK(
        mtx_jobs_recover(st, tmpl, "interrupted: test", "test", &fd2, &err));
    CHECK_OK(mt_run_get(st, later, on_status, status, &err));
    CHECK(strcmp(status, "queued") == 0);
    close(fd2);
    close(fd);
    mtx_jobs_default_params(&p);
    p.state_get = lend;
    p.state_put = give_back;
    p.user = st;
    CHECK_OK(mtx_jobs_start(&p, &js, &err));
    CHECK(mtx_jobs_cancel_run(js, queued) == MTX_CANCEL_ENDED);
    CHECK_OK(mt_run_get(st, queued, on_status, status, &err));
    CHECK(strcmp(status, "failed") == 0);
    CHECK(mtx_jobs_cancel_run(js, queued) == MTX_CANCEL_NONE);
    mtx_jobs_stop(js, 0);
    mtx_jobs_free(js);
    mt_state_close(st);
    CHECK(tmpdir_remove() == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_resumes_and_cuts_torn_line),
        cmocka_unit_test(test_items_run_journal_resume),
        cmocka_unit_test(test_heartbeat_beats_until_stopped),
        cmocka_unit_test(test_checker_cache_shares_and_evicts_idle),
        cmocka_unit_test(test_folder_saves_and_loads),
        cmocka_unit_test(test_jobs_run_and_replay),
        cmocka_unit_test(test_jobs_recover_and_cancel),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
