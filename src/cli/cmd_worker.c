/* medtrust worker: checks queued jobs (mediqa --state URL --enqueue) from
 * PostgreSQL without serving HTTP. Threads claim jobs with
 * SELECT ... FOR UPDATE SKIP LOCKED under a lease that a heartbeat thread
 * extends; a worker that dies leaves its jobs to be claimed again when
 * their leases run out (store/queue.h). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "batch/heartbeat.h"
#include "cli/agent_opts.h"
#include "check/usage.h"
#include "cli/mediqa.h"
#include "core/progress.h"
#include "medtrust/core.h"
#include "medtrust/server.h"
#include "store/queue.h"

static const struct cli_opt worker_opts[] = {
    {"state", 0, "URL",
     "the queue's PostgreSQL, postgresql://USER@HOST:PORT/DB (default "
     "MEDTRUST_STATE; required)",
     0},
    {"db", 'd', "DIR",
     "this node's copy of the corpus store that react-reflex jobs search "
     "(default: the path the run was queued with)",
     0},
    {"llm", 'l', "SPEC",
     "the model endpoints this worker calls for every role, replacing the "
     "run's --llm (default: the run's, else MEDTRUST_LLM)",
     0},
    CLI_LORA_OPT,
    {"cache", 0, "FILE|URL",
     "call cache replacing the run's --cache (a postgresql:// URL is "
     "shared by every worker)",
     0},
    {"jobs", 'J', "N", "jobs checked at once, 1..512 (default 4)", 0},
    {"lease", 0, "S",
     "seconds a claimed job stays ours without a heartbeat; a dead "
     "worker's jobs are claimed again after it, 1..3600 (default 30)",
     0},
    {"run", 0, "RUN", "only jobs of this run (default: any run)", 0},
    {"drain", 0, NULL,
     "exit once no job is left queued or running (default: wait for new "
     "runs until SIGTERM)",
     0},
    {"poll", 0, "S", "seconds between looks at an empty queue (default 1)", 0},
    {"name", 0, "NAME", "this worker's name in the queue (default HOST:PID)",
     0},
    {"serve-jobs", 0, NULL,
     "also run the servers' queued checks, asks and batches (serve "
     "--state), "
     "--jobs at a time, on the store --db (required with it), with --llm",
     0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {NULL, 0, NULL, NULL, 0},
};

#define MAX_HELD 512 /* jobs at once (the --jobs bound) */
/* The runs this worker claims: a server's own checks and asks on the
 * same queue are left to the servers (and to workers that run them). */
#define WORKER_KINDS "{mediqa}"
#define MAX_RUNS 16 /* runs with an open checker */

struct run_agent {
    int64_t run;
    json_t *opts; /* holds the strings the parsed options point to */
    struct mt_agent *agent;
    int users; /* jobs checking with it now (under run_mu) */
};

struct worker {
    pthread_mutex_t mu; /* guards pg, held, the counts and fatal */
    struct mtx_pg *pg;
    const struct cli_args *a;
    char name[160];
    double lease_s, poll_s;
    int64_t only_run;
    unsigned jobs;
    int64_t held[MAX_HELD];
    size_t nheld;
    struct run_agent *runs[MAX_RUNS]; /* each its own allocation */
    size_t nruns;
    pthread_mutex_t run_mu; /* guards runs */
    size_t done, failed, dropped;
    double queue_s;    /* wall time in claim, finish and heartbeat calls */
    int64_t base_done; /* jobs done when the bar started (-1: not yet) */
    enum mt_status fatal;
    struct mt_error fatal_err;
    struct mt_progress *bar;
};

static volatile sig_atomic_t stop_flag;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void fail_locked(struct worker *w, enum mt_status st,
                        const struct mt_error *err)
{
    if (w->fatal == MT_OK) {
        w->fatal = st;
        w->fatal_err = *err;
    }
}

static int stopping(struct worker *w)
{
    int s;

    pthread_mutex_lock(&w->mu);
    s = stop_flag || w->fatal != MT_OK;
    pthread_mutex_unlock(&w->mu);
    return s;
}

/* ==== A run's checker ==== */

/* The run's options, with this worker's --db, --llm and --cache over
 * them, parsed by the table `mediqa` uses (cli/mediqa.h). */
static enum mt_status run_params(struct worker *w, struct run_agent *r,
                                 struct cli_args *args,
                                 struct mt_agent_params *p,
                                 struct mt_error *err)
{
    static const char *const own[] = {"db", "llm", "cache"};
    const char *k;
    json_t *v;
    size_t i;

    memset(args, 0, sizeof *args);
    args->opts = mediqa_agent_opts;
    json_object_foreach(r->opts, k, v)
    {
        int bad = 0;

        if (json_is_array(v))
            for (i = 0; i < json_array_size(v); i++)
                bad |= cli_args_put(args, k,
                                    json_string_value(json_array_get(v, i)));
        else
            bad = cli_args_put(args, k,
                               json_is_true(v) ? NULL : json_string_value(v));
        if (bad)
            return mt_fail(err, MT_EINVAL,
                           "run %lld carries option --%s, which this worker "
                           "does not know (a newer medtrust queued it?)",
                           (long long)r->run, k);
    }
    for (i = 0; i < sizeof own / sizeof own[0]; i++)
        if (cli_get(w->a, own[i]) && !(i == 0 && cli_get(args, "no-retrieval")))
            cli_args_put(args, own[i], cli_get(w->a, own[i]));
    if (agent_opts_read(args, p) < 0)
        return mt_fail(err, MT_EINVAL,
                       "run %lld: its options are refused "
                       "(above)",
                       (long long)r->run);
    p->llm.max_concurrency = w->jobs * 2; /* as mediqa: guards pairs */
    return MT_OK;
}

static enum mt_status run_open(struct worker *w, struct run_agent *r,
                               struct mt_error *err)
{
    struct cli_args args;
    struct mt_agent_params p;
    char *kind = NULL, *opts = NULL;
    enum mt_status st;

    pthread_mutex_lock(&w->mu);
    st = mtx_queue_run(w->pg, r->run, &kind, &opts, err);
    pthread_mutex_unlock(&w->mu);
    if (st == MT_OK && strcmp(kind, "mediqa") != 0)
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "run %lld: this worker runs mediqa jobs, not '%s'",
                     (long long)r->run, kind);
    if (st == MT_OK && !(r->opts = json_loads(opts, 0, NULL)))
        st = mt_fail(err, MT_EPARSE, "run %lld: unreadable options",
                     (long long)r->run);
    memset(&args, 0, sizeof args);
    if (st == MT_OK)
        st = run_params(w, r, &args, &p, err);
    if (st == MT_OK && (st = mt_agent_open(&p, &r->agent, err)) != MT_OK) {
        struct mt_error why = *err;

        mt_fail(err, st, "run %lld cannot run on this worker: %s",
                (long long)r->run, why.msg);
    }
    cli_args_free(&args);
    mt_free(kind);
    mt_free(opts);
    return st;
}

static void run_free(struct run_agent *r)
{
    if (!r)
        return;
    mt_agent_close(r->agent);
    json_decref(r->opts);
    mt_free(r);
}

/* Closes the least recently opened checker that no job uses. */
static int run_evict(struct worker *w)
{
    size_t i;

    for (i = 0; i < w->nruns; i++)
        if (w->runs[i]->users == 0)
            break;
    if (i == w->nruns)
        return -1;
    run_free(w->runs[i]);
    memmove(w->runs + i, w->runs + i + 1, (w->nruns - i - 1) * sizeof *w->runs);
    w->nruns--;
    return 0;
}

static enum mt_status run_find(struct worker *w, int64_t run,
                               struct run_agent **out, struct mt_error *err)
{
    struct run_agent *r;
    size_t i;
    enum mt_status st;

    for (i = 0; i < w->nruns; i++)
        if (w->runs[i]->run == run) {
            *out = w->runs[i];
            return MT_OK;
        }
    if (w->nruns == MAX_RUNS && run_evict(w) != 0)
        return mt_fail(err, MT_ELIMIT, "more than %d runs at once", MAX_RUNS);
    if (!(r = mt_calloc(1, sizeof *r)))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    r->run = run;
    st = run_open(w, r, err);
    if (st != MT_OK) {
        run_free(r);
        return st;
    }
    w->runs[w->nruns++] = r;
    *out = r;
    return MT_OK;
}

/* The checker of run 'run', opened on first use; give it back with
 * run_release. */
static enum mt_status run_agent(struct worker *w, int64_t run,
                                struct run_agent **out, struct mt_error *err)
{
    enum mt_status st;

    pthread_mutex_lock(&w->run_mu);
    st = run_find(w, run, out, err);
    if (st == MT_OK)
        (*out)->users++;
    pthread_mutex_unlock(&w->run_mu);
    return st;
}

static void run_release(struct worker *w, struct run_agent *r)
{
    pthread_mutex_lock(&w->run_mu);
    r->users--;
    pthread_mutex_unlock(&w->run_mu);
}

/* ==== Jobs ==== */

static void held_add(struct worker *w, int64_t id)
{
    if (w->nheld < MAX_HELD)
        w->held[w->nheld++] = id;
}

static void held_del(struct worker *w, int64_t id)
{
    size_t i;

    for (i = 0; i < w->nheld; i++)
        if (w->held[i] == id) {
            w->held[i] = w->held[--w->nheld];
            return;
        }
}

/* The job's result: {"id","line","fallback","usage","failed"?,"trace"},
 * what --collect reads back (cli/mediqa_queue.c). */
static char *job_result(const char *id, const struct mtx_batch_outcome *o)
{
    json_t *r = o->line ? json_pack("{s:s,s:s,s:b,s:o}", "id", id, "line",
                                    o->line, "fallback", o->fallback, "usage",
                                    mtx_check_usage_json(&o->usage))
                        : NULL;
    char *s;

    if (r && o->failed)
        json_object_set_new(r, "failed", json_string(o->err.msg));
    if (r && o->trace)
        json_object_set_new(r, "trace", json_string(o->trace));
    s = r ? json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(r);
    return s;
}

static void finish(struct worker *w, const struct mtx_queue_job *j,
                   const char *result, int failed)
{
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    double t0;

    pthread_mutex_lock(&w->mu);
    t0 = now_s();
    st = result ? mtx_queue_finish(w->pg, j, result, failed, &err)
                : mt_fail(&err, MT_ENOMEM, "out of memory");
    w->queue_s += now_s() - t0;
    held_del(w, j->id);
    if (st == MT_OK) {
        w->done++;
        w->failed += (size_t)failed;
    } else if (st == MT_ECANCELED) {
        w->dropped++;
        mt_log(MT_LOG_WARN, "%s", err.msg);
    } else {
        fail_locked(w, st, &err);
    }
    pthread_mutex_unlock(&w->mu);
}

/* Gives the job back to the queue at once (this worker cannot run it). */
static void give_back(struct worker *w, const struct mtx_queue_job *j,
                      enum mt_status why, const struct mt_error *werr)
{
    struct mt_error err = {MT_OK, ""};

    pthread_mutex_lock(&w->mu);
    mtx_queue_release(w->pg, j, &err);
    held_del(w, j->id);
    fail_locked(w, why, werr);
    pthread_mutex_unlock(&w->mu);
}

static void do_job(struct worker *w, const struct mtx_queue_job *j)
{
    json_t *p = json_loads(j->payload, 0, NULL);
    const char *id = json_string_value(json_object_get(p, "id"));
    const char *text = json_string_value(json_object_get(p, "text"));
    const char *sents = json_string_value(json_object_get(p, "sentences"));
    struct mt_error err = {MT_OK, ""};
    struct mtx_batch_outcome o;
    struct run_agent *r = NULL;
    char *res;
    enum mt_status st;

    if (!id || !text) { /* --collect reports the unreadable result */
        json_decref(p);
        finish(w, j, "{}", 1);
        return;
    }
    st = run_agent(w, j->run, &r, &err);
    if (st != MT_OK) {
        give_back(w, j, st, &err);
        json_decref(p);
        return;
    }
    mtx_batch_check_note(r->agent, NULL, id, text, sents, 1, &o);
    run_release(w, r);
    res = job_result(id, &o);
    finish(w, j, res, o.failed);
    mt_free(res);
    mtx_batch_outcome_free(&o);
    json_decref(p);
}

/* ==== Threads ==== */

/* Sleeps up to 's' seconds, waking early when asked to stop. */
static void nap(double s)
{
    while (s > 0 && !stop_flag) {
        double t = s < 0.1 ? s : 0.1;

        usleep((useconds_t)(t * 1e6));
        s -= t;
    }
}

/* Nothing to claim: 1 when a draining worker's thread should stop (no
 * job is queued, and every running one is this worker's own, which its
 * other threads finish: only another worker's job could come back, once
 * its lease runs out), else waits --poll and returns 0. */
static int idle(struct worker *w)
{
    struct mtx_queue_counts c;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st = MT_OK;
    int left = 1;

    if (cli_get(w->a, "drain")) {
        pthread_mutex_lock(&w->mu);
        st = mtx_queue_counts(w->pg, w->only_run, WORKER_KINDS, &c, &err);
        if (st != MT_OK)
            fail_locked(w, st, &err);
        left = st == MT_OK && (c.queued > 0 || c.running > (int64_t)w->nheld);
        pthread_mutex_unlock(&w->mu);
    }
    if (!left)
        return 1;
    nap(w->poll_s);
    return 0;
}

static void *work_thread(void *arg)
{
    struct worker *w = arg;

    while (!stopping(w)) {
        struct mtx_queue_job j;
        struct mt_error err = {MT_OK, ""};
        enum mt_status st;

        double t0;

        memset(&j, 0, sizeof j);
        pthread_mutex_lock(&w->mu);
        t0 = now_s();
        st = mtx_queue_claim(w->pg, w->name, w->lease_s, w->only_run,
                             WORKER_KINDS, &j, &err);
        w->queue_s += now_s() - t0;
        if (st == MT_OK)
            held_add(w, j.id);
        else if (st != MT_ENOTFOUND)
            fail_locked(w, st, &err);
        pthread_mutex_unlock(&w->mu);
        if (st == MT_ENOTFOUND && idle(w))
            break;
        if (st == MT_OK)
            do_job(w, &j);
        mtx_queue_job_free(&j);
    }
    return NULL;
}

/* Extends the leases of the jobs in hand and refreshes the progress bar
 * (done/total of the queue, all workers together) in one statement,
 * which reads the runs' own counts rather than counting job rows. */
static void beat_once(struct worker *w)
{
    struct mtx_queue_progress pr;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    double t0;

    pthread_mutex_lock(&w->mu);
    t0 = now_s();
    st = mtx_queue_beat(w->pg, w->name, w->lease_s, w->held, w->nheld,
                        w->only_run, WORKER_KINDS, NULL, &pr, &err);
    w->queue_s += now_s() - t0;
    if (st != MT_OK)
        fail_locked(w, st, &err);
    pthread_mutex_unlock(&w->mu);
    if (st != MT_OK)
        return;
    if (w->base_done < 0) /* count what is done from now, for the rate */
        w->base_done = pr.done;
    mtx_progress_set_total(w->bar, (uint64_t)(pr.total - w->base_done));
    mtx_progress_update(w->bar, (uint64_t)(pr.done - w->base_done));
}

/* The heartbeat's call (batch/heartbeat.h). */
static void beat_fn(void *w)
{
    beat_once(w);
}

/* ==== The verb ==== */

static int read_opts(const struct cli_args *a, struct worker *w)
{
    unsigned long jobs = 4;
    double lease = 30, poll = 1;
    const char *run = cli_get(a, "run");
    char *end = NULL;
    char host[96] = "host";

    if (cli_get_uint(a, "jobs", 1, MAX_HELD, &jobs) < 0 ||
        cli_get_double(a, "lease", 1, 3600, &lease) < 0 ||
        cli_get_double(a, "poll", 0.01, 3600, &poll) < 0)
        return -1;
    if (run && ((w->only_run = strtoll(run, &end, 10)) <= 0 || *end)) {
        fprintf(stderr,
                "medtrust worker: --run takes a run number, not "
                "'%s'\n",
                run);
        return -1;
    }
    if (a->npos) {
        fprintf(stderr,
                "medtrust worker: unexpected '%s'\nTry 'medtrust "
                "worker --help'.\n",
                a->pos[0]);
        return -1;
    }
    gethostname(host, sizeof host - 1);
    if (cli_get(a, "name"))
        snprintf(w->name, sizeof w->name, "%s", cli_get(a, "name"));
    else
        snprintf(w->name, sizeof w->name, "%s:%ld", host, (long)getpid());
    w->jobs = (unsigned)jobs;
    w->lease_s = lease;
    w->poll_s = poll;
    w->a = a;
    return 0;
}

static enum mt_status work(struct worker *w, struct mt_error *err)
{
    pthread_t t[MAX_HELD];
    struct mtx_heartbeat hb;
    unsigned i, started = 0;

    /* none: the leases run out while the jobs run, and other workers
     * take them over (their results win; ours are refused) */
    (void)mtx_heartbeat_start(&hb, w->lease_s, beat_fn, w, NULL);

    for (i = 0; i < w->jobs; i++)
        if (pthread_create(&t[started], NULL, work_thread, w) == 0)
            started++;
    if (started == 0)
        work_thread(w);
    for (i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    mtx_heartbeat_stop(&hb);
    if (w->fatal == MT_OK)
        beat_once(w); /* the bar's last state */
    if (w->fatal != MT_OK)
        *err = w->fatal_err;
    return w->fatal;
}

/* PostgreSQL may be away when a worker starts (machines boot in any
 * order): the first connection is tried again with backoff (0.1 s
 * doubling to 5 s) while nothing answers at the URL (mtx_pg_down), until
 * it does or the worker is stopped. A wrong password or database still
 * fails at once. */
static enum mt_status open_queue(struct worker *w, const char *url,
                                 struct mt_error *err)
{
    double wait = 0.1;
    int said = 0;
    enum mt_status st;

    while ((st = mtx_queue_open(url, &w->pg, err)) == MT_EIO && !stop_flag &&
           mtx_pg_down(url)) {
        if (!said++)
            mt_log(MT_LOG_WARN,
                   "worker: %s; waiting for PostgreSQL, trying again "
                   "with backoff",
                   err->msg);
        nap(wait);
        wait = wait * 2 > 5 ? 5 : wait * 2;
    }
    if (st == MT_OK && said)
        mt_log(MT_LOG_INFO, "worker: PostgreSQL is reachable: starting");
    return st;
}

/* --serve-jobs: the server's job code without HTTP claims the servers'
 * rows (checks, asks, batches) beside this worker's mediqa threads; *out stays
 * NULL without the option. */
static enum mt_status serve_jobs(const struct worker *w, const char *url,
                                 struct mt_server **out, struct mt_error *err)
{
    struct mt_server_params p;

    if (!cli_get(w->a, "serve-jobs"))
        return MT_OK;
    mt_server_default_params(&p);
    p.db_dir = cli_get(w->a, "db");
    if (!p.db_dir)
        return mt_fail(err, MT_EINVAL,
                       "--serve-jobs needs --db DIR, the store the checks "
                       "and asks search");
    p.state_url = url;
    p.llm_spec = cli_get(w->a, "llm");
    p.llm_jobs = w->jobs;
    p.job_lease_s = w->lease_s;
    p.headless = 1;
    return mt_server_start(&p, out, err);
}

static void worker_close(struct worker *w)
{
    size_t i;

    for (i = 0; i < w->nruns; i++)
        run_free(w->runs[i]);
    mtx_progress_free(w->bar);
    mtx_pg_close(w->pg);
    pthread_mutex_destroy(&w->mu);
    pthread_mutex_destroy(&w->run_mu);
}

static int worker_run(struct cli_args *a)
{
    static struct worker w; /* large (the held list); one per process */
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_error err = {MT_OK, ""};
    struct sigaction sa;
    const char *url = mediqa_state_url(a, "medtrust worker");
    struct mt_server *srv = NULL;
    enum mt_status st;

    memset(&w, 0, sizeof w);
    w.base_done = -1;
    if (!url || read_opts(a, &w) < 0)
        return 1;
    pthread_mutex_init(&w.mu, NULL);
    pthread_mutex_init(&w.run_mu, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    pp.label = "worker";
    pp.quiet = cli_get(a, "no-progress") != NULL;
    st = mtx_progress_new(&pp, &w.bar);
    if (st != MT_OK)
        st = mt_fail(&err, st, "out of memory");
    if (st == MT_OK)
        st = open_queue(&w, url, &err);
    if (st == MT_OK)
        st = serve_jobs(&w, url, &srv, &err);
    if (st == MT_OK)
        st = work(&w, &err);
    mt_server_stop(srv, 600); /* the checks and asks in hand finish */
    mtx_progress_finish(w.bar);
    fprintf(stderr,
            "worker %s: %zu jobs done (%zu failed checks), %zu results "
            "dropped (their lease was taken over), %.2f ms a job in queue "
            "calls, %llu reconnects\n",
            w.name, w.done, w.failed, w.dropped,
            w.queue_s * 1000 / (double)(w.done ? w.done : 1),
            w.pg ? (unsigned long long)mtx_pg_reconnects(w.pg) : 0ULL);
    worker_close(&w);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_worker = {
    "worker",
    "run queued jobs from PostgreSQL (mediqa, --serve-jobs), without HTTP",
    "--state URL [--db DIR] [--llm SPEC] [--serve-jobs] [OPTIONS]",
    "Claims jobs from the queue in PostgreSQL (SELECT ... FOR UPDATE SKIP\n"
    "LOCKED), --jobs at a time, and records each note's submission line,\n"
    "usage and trace in its row. A job carries its run's options (strategy,\n"
    "model, settings, as given to mediqa --enqueue); --db, --llm and\n"
    "--cache here replace the run's, so each machine names its own copy of\n"
    "the corpus and its own model endpoints. A heartbeat extends the lease\n"
    "of the jobs in hand; a worker that dies (kill -9, a lost machine)\n"
    "leaves them to be claimed again once --lease seconds pass, and a\n"
    "result is accepted only from the job's latest claim, so no job is\n"
    "lost or done twice. A lost connection to PostgreSQL (a restart) is\n"
    "re-established for up to 60 s. SIGTERM or SIGINT: no new job is\n"
    "claimed, the ones in hand are finished, then the worker exits. The\n"
    "progress bar counts the queue's jobs (of --run, else of every run)\n"
    "done by every worker since this one started. Exit\n"
    "status 0 after SIGTERM or --drain, non-zero when PostgreSQL stayed\n"
    "away or a run's options cannot run here (its job is given back).\n"
    "With --serve-jobs it also claims the checks, asks and batches that\n"
    "servers with --state queued (as a server's own job threads do, with\n"
    "this worker's --db, --llm, --jobs and --lease); --drain then stops\n"
    "once no mediqa job is left, after the server jobs in hand.",
    worker_opts,
    worker_run,
};
