/* medtrust mediqa: a MEDEC-format CSV through a checker strategy, notes in
 * parallel, each finished note journaled (fdatasync) so --resume neither
 * redoes nor loses one; the submission is written atomically at the end. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/agent_opts.h"
#include "batch/journal.h"
#include "cli/mediqa.h"
#include "cli/correction.h"
#include "core/buf.h"
#include "core/file.h"
#include "core/progress.h"
#include "medtrust/core.h"

static const struct cli_opt mediqa_opts[] = {
    AGENT_OPTS,
    CORRECTION_OPTS, /* --trace carries each correction's evidence */
    {"data", 'D', "FILE",
     "MEDEC-format CSV: Text ID, Text, and Sentences "
     "when present (required)",
     0},
    {"out", 'o', "FILE", "submission file to write (required)", 0},
    {"jobs", 'J', "N", "notes checked at once, 1..512 (default 4)", 0},
    {"trace", 't', "FILE",
     "append one JSON line per note: result, usage, "
     "trace",
     0},
    {"limit", 'n', "N", "only the first N notes", 0},
    {"resume", 'r', NULL,
     "keep the notes OUT.journal says are done; failed "
     "ones are checked again",
     0},
    {"force", 0, NULL,
     "start over although OUT.journal holds finished notes of an earlier run "
     "(they are discarded)",
     0},
    {"fallback-on-failure", 0, NULL,
     "write a failed note's fallback line, which no model reply decided "
     "(by default it is left out); the exit status is still 1",
     0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {"json", 'j', NULL, "print a JSON summary of the run on stdout", 0},
    {"state", 0, "URL",
     "PostgreSQL of --enqueue and --collect, postgresql://USER@HOST:PORT/DB "
     "(default MEDTRUST_STATE)",
     0},
    {"enqueue", 0, NULL,
     "queue the notes as jobs of a new run for `medtrust worker` and print "
     "its number; the agent options given travel with it",
     0},
    {"collect", 0, "RUN",
     "wait for RUN's jobs, then write --out (and --trace) as a one-machine "
     "run would",
     0},
    {"no-wait", 0, NULL, "with --collect: fail at once if RUN is not done", 0},
    {NULL, 0, NULL, NULL, 0},
};

struct run_state {
    struct mtx_note *notes;
    size_t n;
    struct mtx_work_queue q; /* q.mu also guards the counts below */
    struct mt_agent *agent;
    struct mtx_journal *journal;
    FILE *trace;            /* through the file layer (core/file.h) */
    const char *trace_path; /* --trace */
    struct mt_progress *bar;
    struct mt_check_usage total;
    size_t done;
    size_t failed;   /* notes whose check failed (see note.failed) */
    size_t fallback; /* failed notes whose verdict was a fallback */
};

/* ==== Checking ==== */

/* The note's trace line, written and synced before its journal line: a
 * note whose trace line could not be written stays out of the journal,
 * so --resume checks it again and the trace misses nothing. */
static enum mt_status trace_write(struct run_state *s, const char *line,
                                  struct mt_error *err)
{
    int bad;

    pthread_mutex_lock(&s->q.mu);
    bad = fprintf(s->trace, "%s\n", line) < 0 ||
          mtx_file_flush_sync(s->trace, 1) != 0;
    pthread_mutex_unlock(&s->q.mu);
    if (!bad)
        return MT_OK;
    return mt_fail(err, mtx_file_errno_status(errno),
                   "--trace %s: cannot write: %s: free space on its disk, "
                   "then run again with --resume",
                   s->trace_path, strerror(errno));
}

static void record(struct run_state *s, struct mtx_note *x,
                   struct mediqa_outcome *o)
{
    struct mt_error err = {MT_OK, ""};
    enum mt_status st =
        o->line ? MT_OK : mt_fail(&err, MT_ENOMEM, "out of memory");

    if (st == MT_OK && o->trace)
        st = trace_write(s, o->trace, &err);
    if (st == MT_OK)
        st = mtx_journal_append(s->journal, x->id, o->line,
                                o->failed ? o->err.msg : NULL, &err);
    pthread_mutex_lock(&s->q.mu);
    x->line = st == MT_OK ? o->line : NULL;
    if (st == MT_OK)
        o->line = NULL;
    x->failed = o->failed;
    mtx_work_fail_locked(&s->q, st, &err);
    mediqa_usage_add(&s->total, &o->usage);
    s->failed += (size_t)o->failed;
    s->fallback += (size_t)o->fallback;
    s->done++;
    pthread_mutex_unlock(&s->q.mu);
    mtx_progress_add(s->bar, 1);
}

static void check_note(size_t i, void *user)
{
    struct run_state *s = user;
    struct mtx_note *x = &s->notes[i];
    struct mediqa_outcome o;

    if (x->resumed)
        return;
    mediqa_check(s->agent, x->id, x->text, x->sents, s->trace != NULL, &o);
    record(s, x, &o);
    mediqa_outcome_free(&o);
}

/* ==== The run ==== */

static void on_resumed(const char *id, const char *line, void *user)
{
    struct run_state *s = user;
    size_t i;

    for (i = 0; i < s->n; i++) {
        if (s->notes[i].resumed || strcmp(s->notes[i].id, id) != 0)
            continue;
        s->notes[i].line = mt_strdup(line);
        s->notes[i].resumed = s->notes[i].line != NULL;
        return;
    }
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double wall_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Names the failed notes on stderr (the first FAILED_SHOWN of them). */
#define FAILED_SHOWN 50
static void failed_ids(const struct run_state *s, int kept)
{
    size_t i, k = 0;

    if (!s->failed)
        return;
    fprintf(stderr,
            "mediqa: %zu note%s failed (%s; --resume checks them "
            "again; reasons in --trace and OUT.journal):",
            s->failed, s->failed == 1 ? "" : "s",
            kept ? "fallback lines written" : "left out of the submission");
    for (i = 0; i < s->n; i++)
        if (s->notes[i].failed && k++ < FAILED_SHOWN)
            fprintf(stderr, " %s", s->notes[i].id);
    if (k > FAILED_SHOWN)
        fprintf(stderr, " ... and %zu more", k - FAILED_SHOWN);
    fputc('\n', stderr);
}

/* The failed note ids as a JSON array, then the closing brace. */
static void failed_json(const struct run_state *s)
{
    json_t *v = json_array();
    char *txt;
    size_t i;

    for (i = 0; v && i < s->n; i++)
        if (s->notes[i].failed)
            json_array_append_new(v, json_string(s->notes[i].id));
    txt = v ? json_dumps(v, JSON_COMPACT) : NULL;
    printf("%s}\n", txt ? txt : "null");
    mt_free(txt);
    json_decref(v);
}

static void summary(const struct run_state *s, const struct cli_args *a,
                    size_t resumed, double wall, double cpu)
{
    const struct mt_check_usage *u = &s->total;
    size_t k = s->done ? s->done : 1;

    fprintf(stderr,
            "mediqa: %zu notes (%zu resumed, %zu checked, %zu "
            "failed, %zu of them for a fallback verdict: no usable model "
            "reply); %u LLM calls (%u "
            "on critical paths), %u failed calls, %u unusable replies, %u "
            "role fallbacks; %.1f s wall, %.1f ms CPU per note\n",
            s->n, resumed, s->done, s->failed, s->fallback, u->llm_calls,
            u->critical_calls, u->failed_calls, u->parse_failures, u->fallbacks,
            wall, cpu * 1000 / (double)k);
    fprintf(stderr,
            "mediqa: %llu prompt + %llu completion tokens (%u of %u calls "
            "estimated: their server reported no usage)\n",
            (unsigned long long)u->prompt_tokens,
            (unsigned long long)u->completion_tokens, u->estimated_calls,
            u->llm_calls);
    failed_ids(s, cli_get(a, "fallback-on-failure") != NULL);
    if (cli_get(a, "no-retrieval"))
        fprintf(stderr, "mediqa: --no-retrieval: MedReAct searched no "
                        "corpus\n");
    if (!cli_get(a, "json"))
        return;
    printf("{\"strategy\":\"%s\",\"retrieval\":\"%s\",",
           cli_get(a, "strategy") ? cli_get(a, "strategy") : "react-reflex",
           cli_get(a, "no-retrieval") ? "none (--no-retrieval)"
           : cli_get(a, "db")         ? "corpus"
                                      : "not used");
    printf("\"notes\":%zu,\"resumed\":%zu,\"checked\":%zu,\"failed\":%zu,"
           "\"fallback_verdicts\":%zu,\"llm_calls\":%u,\"critical_calls\":"
           "%u,\"prompt_tokens\":%llu,\"completion_tokens\":%llu,"
           "\"estimated_token_calls\":%u,\"failed_calls\":%u,"
           "\"parse_failures\":%u,\"fallbacks\":%u,"
           "\"wall_s\":%.3f,\"cpu_s\":%.3f,\"failed_ids\":",
           s->n, resumed, s->done, s->failed, s->fallback, u->llm_calls,
           u->critical_calls, (unsigned long long)u->prompt_tokens,
           (unsigned long long)u->completion_tokens, u->estimated_calls,
           u->failed_calls, u->parse_failures, u->fallbacks, wall, cpu);
    failed_json(s);
}

/* Whether trace line 'l' (n bytes) belongs to a note --resume replayed. */
static int trace_keep(const struct run_state *s, const char *l, size_t n)
{
    json_t *o = json_loadb(l, n, 0, NULL);
    const char *id = json_string_value(json_object_get(o, "id"));
    size_t i;
    int keep = 0;

    for (i = 0; id && !keep && i < s->n; i++)
        keep = s->notes[i].resumed && strcmp(s->notes[i].id, id) == 0;
    json_decref(o);
    return keep;
}

/* A resumed run keeps the trace lines of the notes it replayed from the
 * journal and drops the rest (a torn last line of a killed run, the line
 * of a note whose journal line was never written, a failed note checked
 * again), so the trace ends with one line per note, as an unbroken run's.
 * The file is replaced atomically. */
static enum mt_status trace_prune(const struct run_state *s, const char *path,
                                  struct mt_error *err)
{
    struct mt_buf in = MT_BUF_INIT((size_t)1 << 32);
    struct mt_buf out = MT_BUF_INIT((size_t)1 << 32);
    enum mt_status st = mtx_file_read_all(path, &in, err);
    size_t i = 0;

    if (st == MT_ENOTFOUND)
        return MT_OK;
    while (st == MT_OK && i < in.len) {
        const char *nl = memchr(in.data + i, '\n', in.len - i);
        size_t n = nl ? (size_t)(nl - in.data) - i : 0;
        if (!nl)
            break; /* torn */
        if (trace_keep(s, in.data + i, n))
            st = mtx_buf_append(&out, in.data + i, n + 1);
        i += n + 1;
    }
    if (st == MT_OK)
        st =
            mtx_file_write_atomic(path, out.data ? out.data : "", out.len, err);
    else if (st == MT_ENOMEM)
        mt_fail(err, st, "--trace %s: out of memory", path);
    mtx_buf_free(&in);
    mtx_buf_free(&out);
    return st;
}

/* A rerun without --resume would empty OUT.journal and lose the notes an
 * earlier (perhaps crashed) run finished: refused unless --force. (Notes
 * journaled as failed alone are no loss: any run checks them again.) */
static enum mt_status refuse_overwrite(const struct cli_args *a,
                                       const char *jpath, struct mt_error *err)
{
    size_t done, failed;

    if (cli_get(a, "resume") || cli_get(a, "force") ||
        mtx_journal_count(jpath, &done, &failed) != 0 || done == 0)
        return MT_OK;
    return mt_fail(err, MT_EINVAL,
                   "%s holds %zu finished notes of an earlier run (and %zu "
                   "failed): --resume keeps them and checks the rest; "
                   "--force starts over and discards them",
                   jpath, done, failed);
}

static enum mt_status open_run(const struct cli_args *a, struct run_state *s,
                               size_t *resumed, struct mt_error *err)
{
    char jpath[4200];
    const char *tp = cli_get(a, "trace");
    struct mt_progress_params pp = mtx_progress_default_params();
    size_t i;
    enum mt_status st;

    snprintf(jpath, sizeof jpath, "%s.journal", cli_get(a, "out"));
    if (refuse_overwrite(a, jpath, err) != MT_OK)
        return err->status;
    st = mtx_journal_open(jpath, cli_get(a, "resume") != NULL, on_resumed, s,
                          &s->journal, err);
    if (st != MT_OK)
        return st;
    for (i = 0, *resumed = 0; i < s->n; i++)
        *resumed += (size_t)s->notes[i].resumed;
    if (tp && cli_get(a, "resume") && trace_prune(s, tp, err) != MT_OK)
        return err->status;
    s->trace_path = tp;
    if (tp && !(s->trace =
                    mtx_file_fopen(tp, cli_get(a, "resume") ? "a" : "w", 0644)))
        return mt_fail(err, mtx_file_errno_status(errno),
                       "--trace %s: cannot open: %s", tp, strerror(errno));
    pp.label = "mediqa";
    pp.total = s->n;
    pp.quiet = cli_get(a, "no-progress") != NULL;
    st = mtx_progress_new(&pp, &s->bar);
    if (st == MT_OK)
        mtx_progress_update(s->bar, *resumed);
    return st == MT_OK ? MT_OK : mt_fail(err, st, "out of memory");
}

static enum mt_status mediqa_go(const struct cli_args *a, struct run_state *s,
                                unsigned jobs, struct mt_error *err)
{
    size_t resumed = 0;
    double t0 = wall_seconds();
    enum mt_status st = open_run(a, s, &resumed, err);

    if (st == MT_OK)
        st = mtx_work_run(&s->q, jobs, check_note, s, err);
    if (s->bar) /* NULL when the run could not open (issue 16) */
        mtx_progress_finish(s->bar);
    if (s->trace && mtx_file_flush_sync(s->trace, 1) != 0 && st == MT_OK)
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "--trace %s: cannot write: %s", s->trace_path,
                     strerror(errno));
    if (st == MT_OK)
        st = mediqa_write(s->notes, s->n, cli_get(a, "out"),
                          cli_get(a, "fallback-on-failure") != NULL, err);
    if (st == MT_OK)
        summary(s, a, resumed, wall_seconds() - t0, cpu_seconds());
    return st;
}

static int mediqa_run(struct cli_args *a)
{
    struct mt_agent_params p;
    struct run_state s;
    struct mt_error err = {MT_OK, ""};
    unsigned long jobs = 4;
    unsigned long limit = 0;
    struct mt_qa *vq = NULL; /* the corrections' verifier */
    enum mt_status st;

    memset(&s, 0, sizeof s);
    if (cli_get(a, "enqueue") || cli_get(a, "collect"))
        return mediqa_queue_main(a);
    if (cli_get(a, "state") || cli_get(a, "no-wait")) {
        fprintf(stderr, "medtrust mediqa: --state and --no-wait go with "
                        "--enqueue or --collect RUN\n");
        return 1;
    }
    if (agent_opts_read(a, &p) < 0 ||
        cli_get_uint(a, "jobs", 1, 512, &jobs) < 0 ||
        cli_get_uint(a, "limit", 1, 100000000, &limit) < 0)
        return 1;
    if (!cli_get(a, "data") || !cli_get(a, "out") || a->npos) {
        fprintf(stderr, "medtrust mediqa: give --data FILE.csv and --out "
                        "RUN.txt\nTry 'medtrust mediqa --help'.\n");
        return 1;
    }
    p.llm.max_concurrency = (uint32_t)jobs * 2; /* guards pairs */
    mtx_work_init(&s.q, 0);
    st = mediqa_load(cli_get(a, "data"), limit, &s.notes, &s.n, &err);
    s.q.n = s.n;
    if (st == MT_OK)
        st = correction_open(a, &p, &vq, &err);
    if (st == MT_OK)
        st = mt_agent_open(&p, &s.agent, &err);
    if (st == MT_OK)
        st = mediqa_go(a, &s, (unsigned)jobs, &err);
    mt_agent_close(s.agent);
    mt_qa_close(vq);
    mtx_journal_close(s.journal);
    if (s.trace && fclose(s.trace) != 0 && st == MT_OK)
        st = mt_fail(&err, mtx_file_errno_status(errno),
                     "--trace %s: cannot write: %s", s.trace_path,
                     strerror(errno));
    mtx_progress_free(s.bar);
    mtx_notes_free(s.notes, s.n);
    mtx_work_destroy(&s.q);
    if (st != MT_OK)
        return cli_fail(&err, st);
    return s.failed ? 1 : 0; /* a failed note is never a success */
}

const struct cli_verb cli_verb_mediqa = {
    "mediqa",
    "run a checker strategy over a MEDEC-format CSV (MEDIQA-CORR)",
    "--data FILE.csv --out RUN.txt [OPTIONS]\n"
    "       medtrust mediqa --state URL --enqueue --data FILE.csv [OPTIONS]\n"
    "       medtrust mediqa --state URL --collect RUN --out RUN.txt",
    "Writes one line per note: <Text ID> <flag> <sentence id or -1>\n"
    "<corrected sentence or NA>, in the CSV's order, using the note's own\n"
    "Sentences field when the CSV has one. Each finished note is appended\n"
    "to OUT.journal and synced, so after a crash --resume keeps every\n"
    "finished note and checks only the rest; OUT is written atomically at\n"
    "the end. A note whose check fails (bad input, or a fallback verdict:\n"
    "its model calls failed or the model's replies were unusable after the\n"
    "repeat, so no reply of the model decided it) is journaled as failed\n"
    "and left out of OUT unless --fallback-on-failure is given (then its\n"
    "fallback line, e.g. \"ID 0 -1 NA\", is written); the summary names it,\n"
    "--trace gives the reason, --resume checks it again, and the exit\n"
    "status is 1. A second run on the same OUT while one is running is\n"
    "refused (OUT.journal is locked), and so is a rerun without --resume\n"
    "while OUT.journal holds finished notes of an earlier run (--force\n"
    "discards them and starts over).\n"
    "\n"
    "On more than one machine (README, \"Running on more than one\n"
    "machine\"): mediqa --state URL --enqueue --data FILE.csv [agent\n"
    "options] stores the notes as jobs of a new run in PostgreSQL and\n"
    "prints the run's number; `medtrust worker --state URL` processes on\n"
    "any machines check them (--db, --llm and --cache on a worker replace\n"
    "the run's own); mediqa --state URL --collect RUN --out RUN.txt waits\n"
    "for the last job and writes the same submission, line for line, as a\n"
    "one-machine run with the same options and model replies.",
    mediqa_opts,
    mediqa_run,
};
