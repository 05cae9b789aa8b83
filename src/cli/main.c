/* medtrust command: global flags, logging to stderr, and the verb table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/jsonl.h"
#include "medtrust/core.h"

static const struct cli_verb *const verbs[] = {
    &cli_verb_index,          &cli_verb_stats,    &cli_verb_search,
    &cli_verb_retrieval_eval, &cli_verb_score,    &cli_verb_check,
    &cli_verb_mediqa,         &cli_verb_ask,      &cli_verb_qa_eval,
    &cli_verb_embed,          &cli_verb_models,   &cli_verb_serve,
    &cli_verb_user,           &cli_verb_import,   &cli_verb_corpus,
    &cli_verb_sweep,          &cli_verb_worker,   &cli_verb_publish,
    &cli_verb_verify,         &cli_verb_examples,
};

#define NVERBS (sizeof verbs / sizeof verbs[0])

static void log_stderr(enum mt_log_level level, const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "medtrust: %s: %s\n", mt_log_level_str(level), msg);
}

static void usage(FILE *f)
{
    size_t i;

    fprintf(f, "Usage: medtrust [--verbose|--quiet] VERB [OPTIONS]\n\n"
               "medtrust makes medical text trustworthy: it indexes medical "
               "corpora,\nchecks clinical notes for errors and answers "
               "questions with verified\nreferences.\n\nVerbs:\n");
    for (i = 0; i < NVERBS; i++)
        fprintf(f, "  %-10s %s\n", verbs[i]->name, verbs[i]->summary);
    fprintf(f, "\nRun 'medtrust VERB --help' for a verb's options.\n"
               "Environment: MEDTRUST_DATA (data sets, default "
               "../shared/data).\n"
               "Exit status: 0 success, 1 bad input or request, 2 internal "
               "failure,\n3 a file or standard output could not be written "
               "(out of space or I/O error).\n");
}

/* A result on a full disk or a failing pipe is lost: that is a failure,
 * never exit 0 (every buffered byte is flushed and the close checked). */
static int close_stdout(int rc)
{
    int bad = ferror(stdout);
    int e = 0;

    if (fflush(stdout) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad && !e) {
        /* the failing write was earlier (a full buffer flushed mid-run)
         * and its errno is gone: the output is already broken, so one
         * more byte learns why (ENOSPC, EPIPE, EIO...) */
        clearerr(stdout);
        if (fputc('\n', stdout) == EOF || fflush(stdout) != 0)
            e = errno;
    }
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad)
        return rc;
    fprintf(stderr,
            "medtrust: error: standard output: write failed: %s: free "
            "space on its disk or check the device, then run again\n",
            e ? strerror(e) : "output lost");
    return rc ? rc : mt_status_exit_code(MT_EWRITE);
}

static int run_verb(const struct cli_verb *v, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(v, argc, argv, &a);

    if (rc == 0)
        rc = v->run(&a);
    else if (rc < 0)
        rc = 0;
    cli_args_free(&a);
    return rc;
}

int main(int argc, char **argv)
{
    enum mt_log_level level = MT_LOG_INFO;
    size_t i;

    while (argc > 1 && argv[1][0] == '-') {
        if (strcmp(argv[1], "--version") == 0) {
            printf("medtrust %s\n", mt_version());
            return close_stdout(0);
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            usage(stdout);
            return close_stdout(0);
        }
        if (strcmp(argv[1], "--verbose") == 0 || strcmp(argv[1], "-v") == 0)
            level = MT_LOG_DEBUG;
        else if (strcmp(argv[1], "--quiet") == 0 || strcmp(argv[1], "-q") == 0)
            level = MT_LOG_ERROR;
        else
            break;
        argc--;
        argv++;
    }
    mt_log_set(log_stderr, NULL, level);
    mtx_jsonl_init_alloc(); /* every JSON value through mt_malloc */
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    for (i = 0; i < NVERBS; i++)
        if (strcmp(argv[1], verbs[i]->name) == 0)
            return close_stdout(run_verb(verbs[i], argc - 1, argv + 1));
    fprintf(stderr, "medtrust: unknown verb '%s'\n\n", argv[1]);
    usage(stderr);
    return 1;
}
