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
#include <unistd.h>

#include <jansson.h>

#include "batch/qworker.h"
#include "cli/agent_opts.h"
#include "batch/checkers.h"
#include "batch/note_queue.h"
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
    {"jobs", 'J', "N",
     "jobs checked at once, 1..512 (as mediqa's --jobs); with --serve-jobs "
     "also the server jobs run at once, so at most serve --llm-jobs' "
     "highest, 256 (default 4)",
     0},
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

#define MAX_JOBS 512 /* the --jobs bound (mediqa's) */
#define MAX_RUNS 16  /* runs with an open checker */

struct worker {
    struct mtx_qworker *qw; /* the queue worker loop (batch/qworker.h) */
    const struct cli_args *a;
    unsigned jobs;
    struct mtx_checkers *checkers; /* one per run (batch/checkers.h) */
    json_t *kept;      /* every run's options: the strings they hold stay */
    int64_t base_done; /* jobs done when the bar started (-1: not yet) */
    struct mt_progress *bar;
};

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static int stopping(void *user)
{
    (void)user;
    return stop_flag != 0;
}

/* ==== A run's checker ==== */

/* The run's options, with this worker's --db, --llm and --cache over
 * them, parsed by the table `mediqa` uses (cli/mediqa.h). */
static enum mt_status run_params(struct worker *w, int64_t run, json_t *opts,
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
    json_object_foreach(opts, k, v)
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
                           (long long)run, k);
    }
    for (i = 0; i < sizeof own / sizeof own[0]; i++)
        if (cli_get(w->a, own[i]) && !(i == 0 && cli_get(args, "no-retrieval")))
            cli_args_put(args, own[i], cli_get(w->a, own[i]));
    if (agent_opts_read(args, p) < 0)
        return mt_fail(err, MT_EINVAL,
                       "run %lld: its options are refused "
                       "(above)",
                       (long long)run);
    p->llm.max_concurrency = w->jobs * 2; /* as mediqa: guards pairs */
    return MT_OK;
}

struct run_row {
    int64_t run;
    char *kind, *opts;
};

static enum mt_status read_run(struct mtx_pg *pg, void *user,
                               struct mt_error *err)
{
    struct run_row *rr = user;

    return mtx_queue_run(pg, rr->run, &rr->kind, &rr->opts, err);
}

/* The checker cache's open function: run 'arg''s options read from its
 * row, this worker's over them, into a checker. */
static enum mt_status run_open(void *user, const char *key, void *arg,
                               struct mt_agent **out, struct mt_error *err)
{
    struct worker *w = user;
    int64_t run = *(const int64_t *)arg;
    struct cli_args args;
    struct mt_agent_params p;
    struct run_row rr = {run, NULL, NULL};
    json_t *opts = NULL;
    enum mt_status st = mtx_qworker_call(w->qw, read_run, &rr, err);

    (void)key;
    if (st == MT_OK && !(opts = json_loads(rr.opts, 0, NULL)))
        st = mt_fail(err, MT_EPARSE, "run %lld: unreadable options",
                     (long long)run);
    if (opts && json_array_append_new(w->kept, opts) != 0)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    memset(&args, 0, sizeof args);
    if (st == MT_OK)
        st = run_params(w, run, opts, &args, &p, err);
    if (st == MT_OK && (st = mt_agent_open(&p, out, err)) != MT_OK) {
        struct mt_error why = *err;

        mt_fail(err, st, "run %lld cannot run on this worker: %s",
                (long long)run, why.msg);
    }
    cli_args_free(&args);
    mt_free(rr.kind);
    mt_free(rr.opts);
    return st;
}

/* ==== Jobs ==== */

/* A mediqa job (the loop's callback; batch/note_queue.h). */
static void do_job(void *user, struct mtx_qjob *j)
{
    mtx_note_queue_job(((struct worker *)user)->checkers, j);
}

/* After each heartbeat: the progress bar (done/total of the queue, all
 * workers together, from the runs' own counts). */
static void on_beat(void *user, const struct mtx_queue_progress *pr)
{
    struct worker *w = user;

    if (!pr)
        return;
    if (w->base_done < 0) /* count what is done from now, for the rate */
        w->base_done = pr->done;
    mtx_progress_set_total(w->bar, (uint64_t)(pr->total - w->base_done));
    mtx_progress_update(w->bar, (uint64_t)(pr->done - w->base_done));
}

/* ==== The verb ==== */

/* The runs this worker claims: a server's own checks and asks on the
 * same queue are left to the servers (and to workers that run them). */
static const struct mtx_qworker_kind worker_kinds[] = {
    {MTX_NOTE_QUEUE_KIND, do_job}};

/* With --serve-jobs, --jobs is also the server's llm_jobs: within the
 * server table's bound (serve --llm-jobs'), which mt_server_start checks
 * too. 0 when it is. */
static int serve_jobs_bound(const struct cli_args *a, unsigned long jobs)
{
    const struct mt_param *d =
        mt_param_find(&mt_server_param_table, "llm-jobs", 0);

    if (!cli_get(a, "serve-jobs") || jobs <= d->hi)
        return 0;
    fprintf(stderr,
            "medtrust worker: --jobs %lu with --serve-jobs: a server runs at "
            "most %.0f jobs at once (serve --llm-jobs' bound); give --jobs "
            "%.0f or less\n",
            jobs, d->hi, d->hi);
    return -1;
}

static int read_opts(const struct cli_args *a, struct worker *w,
                     struct mtx_qworker_params *qp)
{
    unsigned long jobs = 4;
    const char *run = cli_get(a, "run");
    char *end = NULL;

    if (cli_get_uint(a, "jobs", 1, MAX_JOBS, &jobs) < 0 ||
        serve_jobs_bound(a, jobs) < 0 ||
        cli_get_double(a, "lease", 1, 3600, &qp->lease_s) < 0 ||
        cli_get_double(a, "poll", 0.01, 3600, &qp->poll_s) < 0)
        return -1;
    if (run && ((qp->run = strtoll(run, &end, 10)) <= 0 || *end)) {
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
    qp->name = cli_get(a, "name");
    qp->threads = (unsigned)jobs;
    qp->drain = cli_get(a, "drain") != NULL;
    w->jobs = (unsigned)jobs;
    w->a = a;
    return 0;
}

/* --serve-jobs: the server's job code without HTTP claims the servers'
 * rows (checks, asks, batches) beside this worker's mediqa threads; *out
 * stays NULL without the option. */
static enum mt_status serve_jobs(const struct worker *w,
                                 const struct mtx_qworker_params *qp,
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
    p.state_url = qp->url;
    p.llm_spec = cli_get(w->a, "llm");
    p.llm_jobs = w->jobs;
    p.job_lease_s = qp->lease_s;
    p.headless = 1;
    return mt_server_start(&p, out, err);
}

static void worker_close(struct worker *w)
{
    mtx_qworker_free(w->qw);
    mtx_checkers_free(w->checkers);
    json_decref(w->kept);
    mtx_progress_free(w->bar);
}

static void summary(const struct worker *w, const char *name)
{
    struct mtx_qworker_stats t;

    memset(&t, 0, sizeof t);
    if (w->qw)
        mtx_qworker_stats(w->qw, &t);
    fprintf(stderr,
            "worker %s: %zu jobs done (%zu failed checks), %zu results "
            "dropped (their lease was taken over), %.2f ms a job in queue "
            "calls, %llu reconnects\n",
            name, t.done, t.failed, t.dropped,
            t.queue_s * 1000 / (double)(t.done ? t.done : 1),
            (unsigned long long)t.reconnects);
}

/* The queue worker loop with this verb's options and callbacks. */
static enum mt_status work(struct worker *w, struct mtx_qworker_params *qp,
                           struct mt_server **srv, struct mt_error *err)
{
    enum mt_status st;

    qp->kinds = worker_kinds;
    qp->nkinds = 1;
    qp->user = w;
    qp->log_prefix = "worker";
    qp->wait_for_pg = 1;
    qp->progress = 1;
    qp->on_beat = on_beat;
    qp->stopping = stopping;
    st = mtx_qworker_start(qp, &w->qw, err);
    if (st == MT_OK)
        st = serve_jobs(w, qp, srv, err);
    if (st != MT_OK && w->qw)
        stop_flag = 1; /* the threads end after the jobs in hand */
    if (w->qw && mtx_qworker_stop(w->qw, st == MT_OK ? err : NULL) != MT_OK &&
        st == MT_OK)
        st = err->status;
    return st;
}

static int worker_run(struct cli_args *a)
{
    struct worker w;
    struct mtx_qworker_params qp;
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_error err = {MT_OK, ""};
    struct sigaction sa;
    struct mt_server *srv = NULL;
    char host[96] = "host", name[160];
    enum mt_status st;

    memset(&w, 0, sizeof w);
    w.base_done = -1;
    mtx_qworker_default_params(&qp);
    qp.url = mediqa_state_url(a, "medtrust worker");
    if (!qp.url || read_opts(a, &w, &qp) < 0)
        return 1;
    gethostname(host, sizeof host - 1);
    snprintf(name, sizeof name, "%s:%ld", host, (long)getpid());
    if (qp.name)
        snprintf(name, sizeof name, "%s", qp.name);
    qp.name = name; /* HOST:PID unless --name */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    pp.label = "worker";
    pp.quiet = cli_get(a, "no-progress") != NULL;
    st = mtx_progress_new(&pp, &w.bar);
    if (st != MT_OK || !(w.kept = json_array()))
        st = mt_fail(&err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        st = mtx_checkers_new(MAX_RUNS, run_open, &w, &w.checkers, &err);
    if (st == MT_OK)
        st = work(&w, &qp, &srv, &err);
    mt_server_stop(srv, 600); /* the checks and asks in hand finish */
    mtx_progress_finish(w.bar);
    summary(&w, name);
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
