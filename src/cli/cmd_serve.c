/* medtrust serve: the HTTP API and web UI over a store, until SIGTERM or
 * SIGINT, which stop it gracefully (in-flight requests and jobs finish). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "medtrust/core.h"
#include "medtrust/server.h"
#include "medtrust/state.h"

extern const struct cli_verb cli_verb_serve;

/* The numeric options and flags are struct mt_server_params' settings
 * table's rows. */
#define SERVER_T (&mt_server_param_table)

static const struct cli_opt serve_opts[] = {
    {"db", 'd', "DIR",
     "store directory (required; created if missing), or a folder that "
     "'medtrust publish' writes: search follows its CURRENT snapshot",
     0},
    {"state", 0, "URL",
     "keep accounts, sessions, tokens, settings, runs, run events and the "
     "audit log in PostgreSQL (postgresql://USER@HOST:PORT/DB), shared by "
     "every server and worker naming it (default $MEDTRUST_STATE; unset: "
     "in the store)",
     0},
    {"listen", 'l', "HOST:PORT",
     "address to listen on (default 127.0.0.1:8080; port 0 picks one)", 0},
    {"data-dir", 'D', "DIR",
     "where access.log and audit.log go (default: "
     "no log files)",
     0},
    CLI_PARAM_KEY("threads", 't', SERVER_T),
    CLI_PARAM("llm-jobs", SERVER_T),
    CLI_PARAM("max-body", SERVER_T),
    CLI_PARAM("rate-limit", SERVER_T),
    CLI_PARAM("rate-burst", SERVER_T),
    CLI_PARAM("timeout", SERVER_T),
    CLI_PARAM("header-timeout", SERVER_T),
    CLI_PARAM("max-conns-per-ip", SERVER_T),
    CLI_PARAM("sse-idle", SERVER_T),
    CLI_PARAM("replay-max", SERVER_T),
    CLI_PARAM("login-failures", SERVER_T),
    CLI_PARAM("login-lock", SERVER_T),
    CLI_PARAM("job-timeout", SERVER_T),
    CLI_PARAM("job-lease", SERVER_T),
    CLI_PARAM("event-retention", SERVER_T),
    CLI_PARAM("grace", SERVER_T),
    {"registration", 0, "open|closed",
     "store whether anyone may register "
     "(default: keep the stored setting, initially closed: an admin adds "
     "accounts with 'medtrust user add' or opens it in Settings)",
     0},
    {"open-registration", 0, NULL,
     "let anyone register an account, as a public service would (the same "
     "as --registration open)",
     0},
    {"llm-choice", 0, "NAME=SPEC",
     "another model a request may choose (\"model\": NAME in POST /v1/ask, "
     "/v1/check and /v1/batch; "
     "the UI offers them); repeat for more, at most 8",
     1},
    {"llm", 'L', "SPEC",
     "model for POST /v1/check and /v1/ask: openai:URL#MODEL or gguf:PATH "
     "(default MEDTRUST_LLM; MEDTRUST_LLM_<ROLE> wins)",
     0},
    CLI_LORA_OPT,
    {"reranker", 0, "SPEC",
     "cross-encoder of the server's searches: react-reflex's rerank stage "
     "(50 first-stage hits, 20 kept) and Ask's documents; gguf:PATH or "
     "openai:URL#MODEL (default none)",
     0},
    {"nli", 0, "SPEC",
     "verifier of /v1/ask claims: gguf:PATH or onnx:DIR (NLI classifier), llm "
     "(the model as judge) or minicheck:SPEC (a MiniCheck model); default "
     "MEDTRUST_NLI, else llm",
     0},
    CLI_PARAM("secure-cookies", SERVER_T),
    CLI_PARAM("test-routes", SERVER_T),
    {NULL, 0, NULL, NULL, 0},
};

/* Blocks the stop signals in every thread so that only sigwait sees
 * them. */
static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The --llm-choice NAME=SPEC options, one a line, into buf. */
static int join_choices(const struct cli_args *a, char *buf, size_t n)
{
    size_t k = 0, i, at = 0;
    const char **v = cli_get_all(a, "llm-choice", &k);

    buf[0] = '\0';
    for (i = 0; i < k; i++) {
        int w = snprintf(buf + at, n - at, "%s\n", v[i]);
        if (w < 0 || (size_t)w >= n - at || strchr(v[i], '\n')) {
            fprintf(stderr, "medtrust serve: --llm-choice values are too "
                            "long or hold a newline\n");
            return -1;
        }
        at += (size_t)w;
    }
    return 0;
}

/* --registration and --open-registration (the same as --registration
 * open); -1 after saying that they disagree. */
static int read_registration(struct cli_args *a, struct mt_server_params *p)
{
    p->registration = cli_get(a, "registration");
    if (!cli_get(a, "open-registration"))
        return 0;
    if (p->registration && strcmp(p->registration, "open") != 0) {
        fprintf(stderr,
                "medtrust serve: --open-registration and --registration %s "
                "disagree: give one\n",
                p->registration);
        return -1;
    }
    p->registration = "open";
    return 0;
}

/* Every option into p (filled with the defaults first; the --llm-choice
 * lines go into choices, n bytes); -1 after printing an error. */
static int read_params(struct cli_args *a, struct mt_server_params *p,
                       char *choices, size_t n)
{
    mt_server_default_params(p);
    p->db_dir = cli_get(a, "db");
    if (!p->db_dir) {
        fprintf(stderr, "medtrust serve: --db DIR is required\n"
                        "Try 'medtrust serve --help'.\n");
        return -1;
    }
    if (cli_params_read(a, &mt_server_param_table, p) < 0 ||
        read_registration(a, p) < 0 || join_choices(a, choices, n) < 0)
        return -1;
    if (cli_get(a, "listen"))
        p->listen = cli_get(a, "listen");
    p->data_dir = cli_get(a, "data-dir");
    p->llm_spec = cli_get(a, "llm");
    p->llm_choices = choices;
    p->nli_spec = cli_get(a, "nli");
    p->reranker_spec = cli_get(a, "reranker");
    p->state_url = mt_state_url(cli_get(a, "state"));
    if (p->state_url && !mt_state_is_shared(p->state_url)) {
        fprintf(stderr, "medtrust serve: --state takes a postgresql:// URL "
                        "(without it the state stays in the store)\n");
        return -1;
    }
    return 0;
}

static int serve_run(struct cli_args *a)
{
    struct mt_server_params p;
    struct mt_error err = {MT_OK, ""};
    struct mt_server *s = NULL;
    static char choices[16384];
    sigset_t set;
    int sig = 0;
    enum mt_status st;

    if (read_params(a, &p, choices, sizeof choices) < 0)
        return 1;
    block_signals(&set);
    st = mt_server_start(&p, &s, &err);
    if (st != MT_OK)
        return cli_fail(&err, st);
    printf("listening on http://%s:%u\n",
           strncmp(p.listen, "0.0.0.0:", 8) == 0 ? "127.0.0.1" : "localhost",
           mt_server_port(s));
    fflush(stdout);
    sigwait(&set, &sig);
    mt_log(MT_LOG_INFO, "signal %d: stopping (grace %u s)", sig,
           (unsigned)p.grace_s);
    mt_server_stop(s, (double)p.grace_s);
    return 0;
}

const struct cli_verb cli_verb_serve = {
    "serve",
    "serve the HTTP JSON API (/v1) and the web UI",
    "--db DIR [--state URL] [--listen HOST:PORT] [--data-dir DIR] "
    "[OPTIONS]",
    "Routes: GET /v1/health; POST /v1/login, /v1/logout, /v1/register;\n"
    "GET /v1/me, /v1/session (200 either way: {\"authenticated\":false}\n"
    "or /v1/me's object); GET|POST /v1/tokens, DELETE /v1/tokens/ID; POST\n"
    "/v1/search, /v1/score, /v1/check, /v1/ask and /v1/batch (a MEDEC\n"
    "CSV checked like mediqa and scored like score --report) (202: a\n"
    "queued run); GET /v1/runs, /v1/runs/ID, /v1/runs/ID/events\n"
    "(Server-Sent Events: step, token, progress, done), /v1/runs/ID/report\n"
    "(a score or batch run's HTML report); POST /v1/runs/ID/resume (a\n"
    "cancelled or failed batch continues from its journal); POST\n"
    "/v1/runs/ID/cancel (a queued run never starts; a running check or\n"
    "ask stops before its next model call); GET /v1/models,\n"
    "/v1/sources, /v1/limits (each setting's bounds and default, as the\n"
    "routes enforce them); admin: GET /v1/users, GET|PUT /v1/settings. The\n"
    "web UI is at /. Checking notes and answering questions need a model\n"
    "(--llm or MEDTRUST_LLM). Every /v1 route but health, login, register\n"
    "and session needs\n"
    "a session cookie (state-changing requests also the X-CSRF-Token\n"
    "header) or 'Authorization: Bearer TOKEN'. Create accounts with\n"
    "'medtrust user add'. SIGTERM or SIGINT stop the server gracefully.\n"
    "With --state postgresql://... any number of servers share accounts,\n"
    "sessions, tokens and runs (put them behind any HTTP load balancer),\n"
    "and a run's events stream from every server; each keeps its own\n"
    "--db corpus copy and picks up a new index (a replaced\n"
    "index/MANIFEST) without a restart. Checks, asks and batches are then\n"
    "rows of the shared job queue: any server's --llm-jobs threads (or\n"
    "'medtrust worker --serve-jobs') claim them, and a job whose server\n"
    "died is claimed again after --job-lease and continues its run's\n"
    "events.",
    serve_opts,
    serve_run,
};
