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
#include "core/clock.h"
#include "core/file.h"
#include "core/progress.h"
#include "medtrust/batch.h"
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

/* The run's progress bar, moved as notes finish. */
static void on_progress(void *user, const struct mt_batch_progress *p,
                        const struct mt_batch_note *note)
{
    if (note)
        mtx_progress_add(user, 1);
    else
        mtx_progress_update(user, p->resumed);
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Names the failed notes on stderr (the first FAILED_SHOWN of them). */
#define FAILED_SHOWN 50
static void failed_ids(const struct mt_batch *b, size_t failed, int kept)
{
    struct mt_batch_note x;
    size_t i, k = 0;

    if (!failed)
        return;
    fprintf(stderr,
            "mediqa: %zu note%s failed (%s; --resume checks them "
            "again; reasons in --trace and OUT.journal):",
            failed, failed == 1 ? "" : "s",
            kept ? "fallback lines written" : "left out of the submission");
    for (i = 0; mt_batch_note_get(b, i, &x) == MT_OK; i++)
        if (x.failed && k++ < FAILED_SHOWN)
            fprintf(stderr, " %s", x.id);
    if (k > FAILED_SHOWN)
        fprintf(stderr, " ... and %zu more", k - FAILED_SHOWN);
    fputc('\n', stderr);
}

/* The failed note ids as a JSON array, then the closing brace. */
static void failed_json(const struct mt_batch *b)
{
    json_t *v = json_array();
    struct mt_batch_note x;
    char *txt;
    size_t i;

    for (i = 0; v && mt_batch_note_get(b, i, &x) == MT_OK; i++)
        if (x.failed)
            json_array_append_new(v, json_string(x.id));
    txt = v ? json_dumps(v, JSON_COMPACT) : NULL;
    printf("%s}\n", txt ? txt : "null");
    mt_free(txt);
    json_decref(v);
}

void mediqa_failed_words(char *buf, size_t n, size_t failed,
                         size_t fallback_failed, size_t fallback_allowed)
{
    int k = snprintf(buf, n, "%zu failed", failed);

    if (k >= 0 && (size_t)k < n && fallback_failed)
        k += snprintf(buf + k, n - (size_t)k,
                      ", %zu of them for a fallback verdict", fallback_failed);
    if (k >= 0 && (size_t)k < n && fallback_allowed)
        snprintf(buf + k, n - (size_t)k, ", %zu fallback verdicts (allowed)",
                 fallback_allowed);
}

/* The fallback verdicts of this run's notes: failed ones, allowed ones. */
static void fallback_counts(const struct mt_batch *b, size_t *failed,
                            size_t *allowed)
{
    struct mt_batch_note x;
    size_t i;

    *failed = *allowed = 0;
    for (i = 0; mt_batch_note_get(b, i, &x) == MT_OK; i++)
        if (x.fallback && !x.resumed)
            ++*(x.failed ? failed : allowed);
}

static void summary(const struct mt_batch *b, const struct cli_args *a,
                    double wall, double cpu)
{
    struct mt_batch_progress s;
    const struct mt_check_usage *u = &s.usage;
    size_t k, fb_failed, fb_allowed;
    char fw[160];

    mt_batch_progress_get(b, &s);
    fallback_counts(b, &fb_failed, &fb_allowed);
    mediqa_failed_words(fw, sizeof fw, s.failed, fb_failed, fb_allowed);
    k = s.checked ? s.checked : 1;
    fprintf(stderr,
            "mediqa: %zu notes (%zu resumed, %zu checked, %s%s); %u LLM "
            "calls (%u on critical paths), %u failed calls, %u unusable "
            "replies, %u role fallbacks; %.1f s wall, %.1f ms CPU per note\n",
            s.total, s.resumed, s.checked, fw,
            s.fallback ? ": no usable model reply" : "", u->llm_calls,
            u->critical_calls, u->failed_calls, u->parse_failures, u->fallbacks,
            wall, cpu * 1000 / (double)k);
    fprintf(stderr,
            "mediqa: %llu prompt + %llu completion tokens (%u of %u calls "
            "estimated: their server reported no usage)\n",
            (unsigned long long)u->prompt_tokens,
            (unsigned long long)u->completion_tokens, u->estimated_calls,
            u->llm_calls);
    failed_ids(b, s.failed, cli_get(a, "fallback-on-failure") != NULL);
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
           s.total, s.resumed, s.checked, s.failed, s.fallback, u->llm_calls,
           u->critical_calls, (unsigned long long)u->prompt_tokens,
           (unsigned long long)u->completion_tokens, u->estimated_calls,
           u->failed_calls, u->parse_failures, u->fallbacks, wall, cpu);
    failed_json(b);
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

/* Runs the batch on the library's note runner (medtrust/batch.h) with a
 * progress bar, then writes the submission and the summary. */
static enum mt_status mediqa_go(const struct cli_args *a, struct mt_batch *b,
                                struct mt_agent *agent, unsigned jobs,
                                struct mt_error *err)
{
    char jpath[4200];
    struct mt_batch_params bp;
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_progress *bar = NULL;
    double t0 = mtx_clock_now();
    enum mt_status st;

    snprintf(jpath, sizeof jpath, "%s.journal", cli_get(a, "out"));
    if (refuse_overwrite(a, jpath, err) != MT_OK)
        return err->status;
    pp.label = "mediqa";
    pp.total = mt_batch_count(b);
    pp.quiet = cli_get(a, "no-progress") != NULL;
    if (mtx_progress_new(&pp, &bar) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    mt_batch_default_params(&bp);
    bp.jobs = jobs;
    bp.resume = cli_get(a, "resume") != NULL;
    bp.journal_path = jpath;
    bp.trace_path = cli_get(a, "trace");
    bp.on_progress = on_progress;
    bp.user = bar;
    st = mt_batch_run(b, agent, &bp, err);
    mtx_progress_finish(bar);
    mtx_progress_free(bar);
    if (st == MT_OK)
        st = mt_batch_write_submission(
            b, cli_get(a, "out"), cli_get(a, "fallback-on-failure") != NULL,
            err);
    if (st == MT_OK)
        summary(b, a, mtx_clock_now() - t0, cpu_seconds());
    return st;
}

static int mediqa_run(struct cli_args *a)
{
    struct mt_agent_params p;
    struct mt_batch *b = NULL;
    struct mt_batch_progress prog;
    struct mt_agent *agent = NULL;
    struct mt_error err = {MT_OK, ""};
    unsigned long jobs = 4;
    unsigned long limit = 0;
    struct mt_qa *vq = NULL; /* the corrections' verifier */
    enum mt_status st;

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
    st = mt_batch_open_csv(cli_get(a, "data"), limit, &b, &err);
    if (st == MT_OK)
        st = correction_open(a, &p, &vq, &err);
    if (st == MT_OK)
        st = mt_agent_open(&p, &agent, &err);
    if (st == MT_OK)
        st = mediqa_go(a, b, agent, (unsigned)jobs, &err);
    mt_agent_close(agent);
    mt_qa_close(vq);
    memset(&prog, 0, sizeof prog);
    if (b)
        mt_batch_progress_get(b, &prog);
    mt_batch_free(b);
    if (st != MT_OK)
        return cli_fail(&err, st);
    return prog.failed ? 1 : 0; /* a failed note is never a success */
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
