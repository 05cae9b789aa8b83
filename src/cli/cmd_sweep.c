/* medtrust sweep: the options of a sweep (batch/sweep.h, where the grid,
 * the sample, the runs, the replay and the summary are), and the child
 * processes it runs: every run is the real `mediqa` and `score` verbs of
 * this binary, so a cell's numbers are exactly what those verbs print for
 * its files, and resume, journaling and the call cache are theirs. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch/sweep.h"
#include "cli/agent_opts.h"
#include "core/buf.h"
#include "core/progress.h"
#include "medtrust/core.h"

#define MAX_ARGS 160

static const struct cli_opt sweep_opts[] = {
    AGENT_OPTS,
    {"data", 'D', "FILE", "MEDEC-format CSV to sample notes from (required)",
     0},
    {"out", 'o', "DIR", "sweep folder; rerunning finishes what is left", 0},
    {"sample", 'n', "N", "notes drawn once, the same for every cell (all)", 0},
    {"runs", 'R', "R", "runs of every cell, seeds SEED..SEED+R-1 (1)", 0},
    {"grid", 'g', "KEY=V1,V2",
     "a swept mediqa option (retrieve_k, rerank_k, steps, rounds, "
     "accept_mean or eval_avg, accept_min or eval_min, strategy, llm or "
     "model, ...); cells are every combination",
     1},
    {"replay", 0, "DIR",
     "threshold sweep over the runs recorded in DIR: rounds whose MedEval "
     "decision is unchanged are replayed, the rest rerun (cached)",
     0},
    {"jobs", 'J', "N", "notes checked at once in each run (4)", 0},
    {"fallback-on-failure", 0, NULL, "passed to mediqa", 0},
    {"bleurt-scores", 0, "FILE", "passed to score for every run", 0},
    {"bertscore-model", 0, "gguf:PATH", "passed to score for every run", 0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {NULL, 0, NULL, NULL, 0},
};

/* Options the sweep sets itself in every mediqa run. */
static const char *const reserved[] = {
    "data",  "out",         "trace", "resume",        "json",
    "limit", "sample",      "runs",  "grid",          "replay",
    "seed",  "no-progress", "score", "bleurt-scores", "bertscore-model",
    NULL,
};

static const struct cli_opt *find_opt(const struct cli_opt *t, const char *name)
{
    for (; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

static int is_reserved(const char *name)
{
    size_t i;

    for (i = 0; reserved[i]; i++)
        if (strcmp(reserved[i], name) == 0)
            return 1;
    return 0;
}

/* ==== Child processes ==== */

/* Runs this binary with argv (argv[0] is the verb); its stdout goes to
 * 'stdout_path' when given. Returns its exit status, or 128 + the signal
 * that ended it, or -1 when it could not start. */
static int run_self(const char *const *argv, const char *stdout_path)
{
    char *args[MAX_ARGS + 2];
    pid_t pid;
    int status = 0;
    size_t i;

    static char name[] = "medtrust";
    args[0] = name;
    for (i = 0; i < MAX_ARGS && argv[i]; i++) {
        union {
            const char *c;
            char *m;
        } u; /* execv's argv type predates const */

        u.c = argv[i];
        args[i + 1] = u.m;
    }
    args[i + 1] = NULL;
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (stdout_path) {
            int fd = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

            if (fd < 0 || dup2(fd, 1) < 0)
                _exit(127);
            close(fd);
        }
        execv("/proc/self/exe", args);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* The batch layer's run callback: the verb in a child process. */
static int run_child(void *user, const char *const *argv,
                     const char *stdout_path)
{
    (void)user;
    return run_self(argv, stdout_path);
}

/* A grid key's option: one of mediqa's with a value the sweep does not
 * set itself. */
static int option_ok(void *user, const char *option)
{
    const struct cli_opt *o = find_opt(sweep_opts, option);

    (void)user;
    return o && !is_reserved(option) && cli_opt_arg(o);
}

struct args {
    char *v[MAX_ARGS + 1];
    size_t n;
};

static int args_push(struct args *b, char *s)
{
    if (!s || b->n >= MAX_ARGS) {
        mt_free(s);
        return -1;
    }
    b->v[b->n++] = s;
    return 0;
}

static void args_free(struct args *b)
{
    while (b->n)
        mt_free(b->v[--b->n]);
}

/* "--name" and its value(s) for an option given to the sweep. */
static int push_given(struct args *b, const struct cli_args *a, size_t i)
{
    const struct cli_opt *o = &a->opts[i];
    size_t j;

    if (o->repeat) {
        for (j = 0; j < a->nmulti[i]; j++)
            if (args_push(
                    b, mtx_str_printf("--%s=%s", o->name, a->multi[i][j])) < 0)
                return -1;
        return 0;
    }
    if (!a->val[i])
        return 0;
    return cli_opt_arg(o)
               ? args_push(b, mtx_str_printf("--%s=%s", o->name, a->val[i]))
               : args_push(b, mtx_str_printf("--%s", o->name));
}

/* The options every run shares: what the sweep was given, less what it
 * sets itself (the batch layer drops what the grid varies). */
static int base_args(struct args *b, const struct cli_args *a)
{
    size_t i;

    for (i = 0; a->opts[i].name; i++)
        if (!is_reserved(a->opts[i].name) && push_given(b, a, i) < 0)
            return -1;
    return 0;
}

/* score's extra arguments: the BLEURT and BERTScore files given. */
static void score_args(const struct cli_args *a, const char **v)
{
    static const char *const names[] = {"bleurt-scores", "bertscore-model"};
    static const char *const flags[] = {"--bleurt-scores", "--bertscore-model"};
    size_t i, n = 0;

    for (i = 0; i < 2; i++)
        if (cli_get(a, names[i])) {
            v[n++] = flags[i];
            v[n++] = cli_get(a, names[i]);
        }
    v[n] = NULL;
}

/* The progress bar, made when the sweep knows its number of runs. */
struct bar {
    const struct cli_args *a;
    struct mt_progress *p;
};

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    struct bar *b = user;

    if (!b->p) {
        struct mt_progress_params pp = mtx_progress_default_params();

        pp.label = "sweep runs";
        pp.total = total;
        pp.quiet = cli_get(b->a, "no-progress") != NULL;
        if (mtx_progress_new(&pp, &b->p) != MT_OK)
            return;
    }
    mtx_progress_update(b->p, done);
}

/* Reads the sweep's own options into p; MT_EINVAL after saying why. */
static enum mt_status sweep_params(const struct cli_args *a,
                                   struct mtx_sweep_params *p,
                                   struct mt_error *err)
{
    unsigned long seed = 42;

    memset(p, 0, sizeof *p);
    p->out = cli_get(a, "out");
    p->replay = cli_get(a, "replay");
    p->data = cli_get(a, "data");
    p->db = cli_get(a, "db");
    p->runs = 1;
    if (!p->out || (!p->replay && !p->data))
        return mt_fail(err, MT_EINVAL,
                       "--out and --data (or --replay DIR) are required");
    if (cli_get_uint(a, "sample", 1, 1000000, &p->sample) < 0 ||
        cli_get_uint(a, "runs", 1, 100, &p->runs) < 0 ||
        cli_get_uint(a, "seed", 0, 0x7fffffffUL, &seed) < 0)
        return MT_EINVAL;
    p->seed = seed;
    p->grid = cli_get_all(a, "grid", &p->ngrid);
    p->option_ok = option_ok;
    p->run = run_child;
    p->on_progress = on_progress;
    return MT_OK;
}

static int cmd_sweep(struct cli_args *a)
{
    struct mtx_sweep_params p;
    struct mt_error err = {MT_OK, ""};
    struct args base = {{NULL}, 0};
    const char *sargs[5];
    struct bar bar = {a, NULL};
    size_t cells = 0;
    unsigned long runs = 0;
    int failed = 0;
    enum mt_status st = sweep_params(a, &p, &err);

    if (st == MT_OK && base_args(&base, a) < 0)
        st = mt_fail(&err, MT_ENOMEM, "out of memory");
    score_args(a, sargs);
    p.base = (const char *const *)base.v;
    p.nbase = base.n;
    p.score_args = sargs;
    p.user = &bar;
    if (st == MT_OK)
        st = mtx_sweep_run(&p, &failed, &cells, &runs, &err);
    if (bar.p)
        mtx_progress_finish(bar.p);
    mtx_progress_free(bar.p);
    args_free(&base);
    if (st == MT_OK)
        fprintf(stderr, "sweep: %zu cells x %lu runs in %s (report.html)%s\n",
                cells, runs, p.out,
                failed ? "; some notes failed, see each run's mediqa "
                         "summary"
                       : "");
    if (st != MT_OK)
        return cli_fail(&err, st);
    return failed ? 1 : 0;
}

const struct cli_verb cli_verb_sweep = {
    "sweep",
    "reproduce the papers' experiments: a grid of mediqa runs, scored and "
    "drawn",
    "--data NOTES.csv --out DIR [--sample N] [--seed S] [--runs R] "
    "[--grid KEY=V1,V2 ...] [mediqa options]\n"
    "       medtrust sweep --replay DIR --out DIR2 --grid eval_avg=... "
    "--grid eval_min=...",
    "Every cell is every combination of the --grid values; each runs R\n"
    "times (seeds SEED..SEED+R-1) on the same --sample notes drawn once with\n"
    "SEED. Each run is `medtrust mediqa` (journaled; the --cache makes\n"
    "identical calls free across cells) scored by `medtrust score --json`;\n"
    "its trace gives latency per MedReAct step, ReAct and ReFlex turns,\n"
    "tokens per role and the sources of the passages MedReAct saw. Killed\n"
    "and rerun with the same command, it finishes only what is left.\n"
    "--replay recomputes a MedEval threshold grid from DIR's recorded\n"
    "rounds: a note whose every round is decided as before keeps its\n"
    "answer, the others are rerun. OUT/report.html draws it all; its data\n"
    "is OUT/summary.json. Exit 1 when a note failed in any run.",
    sweep_opts,
    cmd_sweep,
};
