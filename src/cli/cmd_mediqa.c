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
#include "cli/journal.h"
#include "core/csv.h"
#include "core/file.h"
#include "core/progress.h"
#include "medtrust/core.h"

static const struct cli_opt mediqa_opts[] = {
    AGENT_OPTS,
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
    {"fallback-on-failure", 0, NULL,
     "write a failed note's fallback line (by default "
     "it is left out)",
     0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {"json", 'j', NULL, "print a JSON summary of the run on stdout", 0},
    {NULL, 0, NULL, NULL, 0},
};

struct note {
    char *id;
    char *text;
    char *sents; /* NULL without a Sentences column */
    char *line;  /* submission line once finished */
    int resumed;
    int failed; /* its check failed: 'line' is a fallback */
};

struct run_state {
    struct note *notes;
    size_t n;
    struct work_queue q; /* q.mu also guards the counts below */
    struct mt_agent *agent;
    struct journal *journal;
    FILE *trace;
    struct mt_progress *bar;
    struct mt_check_usage total;
    size_t done;
    size_t failed;   /* notes whose check failed (see note.failed) */
    size_t fallback; /* notes with a fallback verdict */
};

/* ==== Loading ==== */

static void notes_free(struct note *v, size_t n)
{
    size_t i;

    for (i = 0; v && i < n; i++) {
        mt_free(v[i].id);
        mt_free(v[i].text);
        mt_free(v[i].sents);
        mt_free(v[i].line);
    }
    mt_free(v);
}

static char *dup_field(struct mt_csv *c, long col)
{
    struct mt_str s = mt_csv_field(c, (size_t)col);

    return mt_strndup(s.p ? s.p : "", s.n);
}

static enum mt_status add_note(struct mt_csv *c, const long *col,
                               struct note **v, size_t *n, size_t *cap)
{
    struct note *x;

    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;

        x = mt_realloc(*v, nc * sizeof *x);
        if (!x)
            return MT_ENOMEM;
        *v = x;
        *cap = nc;
    }
    x = &(*v)[*n];
    memset(x, 0, sizeof *x);
    (*n)++;
    x->id = dup_field(c, col[0]);
    x->text = dup_field(c, col[1]);
    x->sents = col[2] >= 0 ? dup_field(c, col[2]) : NULL;
    if (!x->id || !x->text || (col[2] >= 0 && !x->sents))
        return MT_ENOMEM;
    return mt_str_trim(mt_str_from(x->id)).n ? MT_OK : MT_EPARSE;
}

static enum mt_status header(struct mt_csv *c, const char *path, long *col,
                             struct mt_error *err)
{
    int got = 0;
    enum mt_status st = mt_csv_next(c, &got, err);

    if (st != MT_OK)
        return st;
    col[0] = got ? mt_csv_find(c, "Text ID") : -1;
    col[1] = got ? mt_csv_find(c, "Text") : -1;
    col[2] = got ? mt_csv_find(c, "Sentences") : -1;
    if (col[0] < 0 || col[1] < 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: missing column%s%s%s (a "
                       "MEDEC-format CSV needs Text ID and Text)",
                       path, col[0] < 0 && col[1] < 0 ? "s" : "",
                       col[0] < 0 ? " 'Text ID'" : "",
                       col[1] < 0 ? " 'Text'" : "");
    return MT_OK;
}

static enum mt_status load_notes(const char *path, size_t limit,
                                 struct note **out, size_t *n,
                                 struct mt_error *err)
{
    struct mt_csv *c = NULL;
    struct note *v = NULL;
    size_t cap = 0;
    long col[3];
    int got = 1;
    enum mt_status st = mt_csv_open(path, NULL, &c, err);

    *n = 0;
    if (st == MT_OK)
        st = header(c, path, col, err);
    while (st == MT_OK && (!limit || *n < limit)) {
        st = mt_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        st = add_note(c, col, &v, n, &cap);
        if (st == MT_EPARSE)
            mt_fail(err, st, "%s:%zu: empty Text ID", path, mt_csv_line(c));
    }
    mt_csv_close(c);
    if (st == MT_OK) {
        *out = v;
        return MT_OK;
    }
    notes_free(v, *n);
    return st == MT_ENOMEM ? mt_fail(err, st, "%s: out of memory", path) : st;
}

/* ==== Checking ==== */

static void add_usage(struct mt_check_usage *t, const struct mt_check_usage *u)
{
    t->llm_calls += u->llm_calls;
    t->critical_calls += u->critical_calls;
    t->prompt_tokens += u->prompt_tokens;
    t->completion_tokens += u->completion_tokens;
    t->failed_calls += u->failed_calls;
    t->parse_failures += u->parse_failures;
    t->fallbacks += u->fallbacks;
    t->estimated_calls += u->estimated_calls;
}

/* The trace line: {"id":ID, ...result}, with "error" first when the
 * check failed, or {"id":ID,"error":...} when it gave no result. */
static char *trace_line(const char *id, const struct mt_check_result *r,
                        const struct mt_error *err, int failed)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 30);
    json_t *e = json_string(err->msg);
    char *es = e ? json_dumps(e, JSON_ENCODE_ANY) : NULL;
    char *res = r ? mt_check_result_json(r, 1) : NULL;

    json_decref(e);
    if (failed && res && es &&
        mt_buf_printf(&b, "{\"error\":%s,%s", es, res + 1) == MT_OK) {
        mt_free(res);
        res = mt_buf_take(&b);
    }
    mt_buf_free(&b);
    mt_free(es);
    return work_line(id, res,
                     res ? NULL
                         : json_pack("{s:s,s:s,s:s}", "id", id, "error",
                                     err->msg, "rule",
                                     "the check failed: no verdict"));
}

static void record(struct run_state *s, struct note *x, char *line,
                   const struct mt_check_result *r, const struct mt_error *e)
{
    struct mt_error err = {MT_OK, ""};
    int failed = e->status != MT_OK;
    char *tl = s->trace ? trace_line(x->id, r, e, failed) : NULL;
    enum mt_status st = line ? journal_append(s->journal, x->id, line,
                                              failed ? e->msg : NULL, &err)
                             : mt_fail(&err, MT_ENOMEM, "out of memory");

    pthread_mutex_lock(&s->q.mu);
    x->line = line;
    x->failed = failed;
    work_fail_locked(&s->q, st, &err);
    if (tl)
        fprintf(s->trace, "%s\n", tl);
    if (r)
        add_usage(&s->total, &r->usage);
    s->failed += (size_t)failed;
    s->fallback += r && r->fallback;
    s->done++;
    pthread_mutex_unlock(&s->q.mu);
    mt_free(tl);
    mt_progress_add(s->bar, 1);
}

static void check_note(size_t i, void *user)
{
    struct run_state *s = user;
    struct note *x = &s->notes[i];
    struct mt_note nt = {x->id,
                         x->text,
                         strlen(x->text),
                         x->sents,
                         x->sents ? strlen(x->sents) : 0,
                         NULL,
                         0};
    struct mt_check_result r;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;
    char *line;

    if (x->resumed)
        return;
    /* MT_EMODEL leaves the fallback verdict in r: a failed note all the
     * same (issue 16), kept only under --fallback-on-failure */
    st = mt_agent_check(s->agent, &nt, &r, &err);
    if (st != MT_OK && err.status == MT_OK)
        mt_fail(&err, st, "%s", mt_status_str(st));
    err.status = st;
    line = mt_check_submission_line(x->id, r.trace ? &r : NULL);
    record(s, x, line, r.trace ? &r : NULL, &err);
    mt_check_result_free(&r);
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

static enum mt_status write_output(const struct run_state *s, const char *path,
                                   int with_failed, struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 31);
    enum mt_status st = mt_buf_reserve(&b, 1);
    size_t i;

    for (i = 0; st == MT_OK && i < s->n; i++)
        if (s->notes[i].line && (with_failed || !s->notes[i].failed))
            st = mt_buf_printf(&b, "%s\n", s->notes[i].line);
    if (st == MT_OK)
        st = mtx_file_write_atomic(path, b.data, b.len, err);
    else
        mt_fail(err, st, "%s: out of memory", path);
    mt_buf_free(&b);
    return st;
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
            "failed, %zu fallback verdicts); %u LLM calls (%u "
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

/* A run killed while writing its trace can leave a torn last line; a
 * resumed run cuts the file back to its last whole line before appending,
 * so every line of the trace stays one JSON object. (The note of a torn
 * line is journaled or checked again; only its trace line is lost.) */
static enum mt_status trace_trim(const char *path, struct mt_error *err)
{
    int fd = open(path, O_RDWR);
    off_t end, at;
    char c = '\n';

    if (fd < 0)
        return errno == ENOENT ? MT_OK
                               : mt_fail(err, MT_EIO, "--trace %s: %s", path,
                                         strerror(errno));
    end = lseek(fd, 0, SEEK_END);
    for (at = end; at > 0; at--)
        if (pread(fd, &c, 1, at - 1) != 1 || c == '\n')
            break;
    if (at < end && ftruncate(fd, at) != 0) {
        close(fd);
        return mt_fail(err, MT_EIO, "--trace %s: %s", path, strerror(errno));
    }
    close(fd);
    return MT_OK;
}

static enum mt_status open_run(const struct cli_args *a, struct run_state *s,
                               size_t *resumed, struct mt_error *err)
{
    char jpath[4200];
    const char *tp = cli_get(a, "trace");
    struct mt_progress_params pp = mt_progress_default_params();
    size_t i;
    enum mt_status st;

    snprintf(jpath, sizeof jpath, "%s.journal", cli_get(a, "out"));
    st = journal_open(jpath, cli_get(a, "resume") != NULL, on_resumed, s,
                      &s->journal, err);
    if (st != MT_OK)
        return st;
    for (i = 0, *resumed = 0; i < s->n; i++)
        *resumed += (size_t)s->notes[i].resumed;
    if (tp && cli_get(a, "resume") && trace_trim(tp, err) != MT_OK)
        return err->status;
    if (tp && !(s->trace = fopen(tp, cli_get(a, "resume") ? "a" : "w")))
        return mt_fail(err, MT_EIO, "--trace %s: cannot open", tp);
    pp.label = "mediqa";
    pp.total = s->n;
    pp.quiet = cli_get(a, "no-progress") != NULL;
    st = mt_progress_new(&pp, &s->bar);
    if (st == MT_OK)
        mt_progress_update(s->bar, *resumed);
    return st == MT_OK ? MT_OK : mt_fail(err, st, "out of memory");
}

static enum mt_status mediqa_go(const struct cli_args *a, struct run_state *s,
                                unsigned jobs, struct mt_error *err)
{
    size_t resumed = 0;
    double t0 = wall_seconds();
    enum mt_status st = open_run(a, s, &resumed, err);

    if (st == MT_OK)
        st = work_run(&s->q, jobs, check_note, s, err);
    if (s->bar) /* NULL when the run could not open (issue 16) */
        mt_progress_finish(s->bar);
    if (s->trace)
        fflush(s->trace);
    if (st == MT_OK)
        st = write_output(s, cli_get(a, "out"),
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
    enum mt_status st;

    memset(&s, 0, sizeof s);
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
    work_init(&s.q, 0);
    st = load_notes(cli_get(a, "data"), limit, &s.notes, &s.n, &err);
    s.q.n = s.n;
    if (st == MT_OK)
        st = mt_agent_open(&p, &s.agent, &err);
    if (st == MT_OK)
        st = mediqa_go(a, &s, (unsigned)jobs, &err);
    mt_agent_close(s.agent);
    journal_close(s.journal);
    if (s.trace)
        fclose(s.trace);
    mt_progress_free(s.bar);
    notes_free(s.notes, s.n);
    work_destroy(&s.q);
    if (st != MT_OK)
        return cli_fail(&err, st);
    return s.failed ? 1 : 0; /* a failed note is never a success */
}

const struct cli_verb cli_verb_mediqa = {
    "mediqa",
    "run a checker strategy over a MEDEC-format CSV (MEDIQA-CORR)",
    "--data FILE.csv --out RUN.txt [OPTIONS]",
    "Writes one line per note: <Text ID> <flag> <sentence id or -1>\n"
    "<corrected sentence or NA>, in the CSV's order, using the note's own\n"
    "Sentences field when the CSV has one. Each finished note is appended\n"
    "to OUT.journal and synced, so after a crash --resume keeps every\n"
    "finished note and checks only the rest; OUT is written atomically at\n"
    "the end. A note whose check fails (bad input, or a fallback verdict\n"
    "because its model calls failed) is journaled as failed and left out\n"
    "of OUT unless --fallback-on-failure is given; the summary names it,\n"
    "--trace gives the reason, --resume checks it again, and the exit\n"
    "status is 1. A second run on the same OUT while one is running is\n"
    "refused (OUT.journal is locked).",
    mediqa_opts,
    mediqa_run,
};
