/* The server's settings table (mt_server_param_table): every numeric
 * member and flag of struct mt_server_params that `medtrust serve` takes,
 * with its option, bounds and help; the defaults are
 * mt_server_default_params'. No request member sets them: a server's
 * settings are fixed when it starts. */
#include <stddef.h>

#include "medtrust/server.h"

#define P(member) offsetof(struct mt_server_params, member)

static const struct mt_param server_params[] = {
    {"threads", NULL, P(threads), MT_PARAM_U32, 1, 256, 0, "N",
     "network threads", NULL},
    {"llm-jobs", NULL, P(llm_jobs), MT_PARAM_U32, 0, 256, 0, "N",
     "model-bound jobs running at once; with --state 0 runs none here and "
     "needs no --llm (other servers and 'worker --serve-jobs' do)",
     NULL},
    {"max-body", NULL, P(max_body), MT_PARAM_SIZE, 1024, 1 << 30, 0, "BYTES",
     "largest request body in bytes", NULL},
    {"rate-limit", NULL, P(rate_per_s), MT_PARAM_F64, 0, 1000000, 0, "N",
     "requests a second per account (0: no limit)", NULL},
    {"rate-burst", NULL, P(rate_burst), MT_PARAM_U32, 1, 100000, 0, "N",
     "requests allowed in a burst", NULL},
    {"timeout", NULL, P(timeout_s), MT_PARAM_U32, 1, 3600, 0, "S",
     "idle connection timeout in seconds", NULL},
    {"header-timeout", NULL, P(header_timeout_s), MT_PARAM_U32, 0, 3600, 0, "S",
     "the request line and headers must arrive within S seconds of a "
     "connection or its previous answer, however slowly they trickle "
     "(0: no limit)",
     NULL},
    {"max-conns-per-ip", NULL, P(max_conns_per_ip), MT_PARAM_U32, 0, 100000, 0,
     "N",
     "connections from one client address (0: no cap; all connections "
     "are capped by the open-file limit, raised to its hard limit at "
     "start: GET /v1/health's limits)",
     NULL},
    {"sse-idle", NULL, P(sse_idle_s), MT_PARAM_U32, 0, 3600, 0, "S",
     "an event stream with nothing to send for S seconds gets a "
     "keep-alive comment, so a client that went away is found and its "
     "stream closed (0: none)",
     NULL},
    {"replay-max", NULL, P(replay_max), MT_PARAM_SIZE, 4096, 1 << 30, 0,
     "BYTES",
     "bytes of a run's events kept for a stream opened late: older ones "
     "are dropped and such a stream gets a \"missed\" event; the final "
     "\"done\" is always kept",
     NULL},
    {"login-failures", NULL, P(login_failures), MT_PARAM_U32, 0, 1000, 0, "N",
     "wrong passwords in a row that lock an account (its address: 4 N; "
     "0: no throttle)",
     NULL},
    {"login-lock", NULL, P(login_lock_s), MT_PARAM_F64, 1, 3600, 0, "S",
     "the first lock in seconds, doubled with each further wrong password "
     "up to 900",
     NULL},
    {"job-timeout", NULL, P(job_timeout_s), MT_PARAM_U32, 1, 86400, 0, "S",
     "a job is cancelled after S seconds", NULL},
    {"job-lease", NULL, P(job_lease_s), MT_PARAM_F64, 1, 3600, 0, "S",
     "with --state: seconds a claimed check or ask stays this server's "
     "without a heartbeat; a dead server's jobs are claimed again after it",
     NULL},
    {"event-retention", NULL, P(event_retention_s), MT_PARAM_F64, 0, 1e9, 0,
     "S",
     "with --state: a finished run's event rows are deleted S seconds "
     "after it ended (its result stays; 0: kept; 604800 is 7 days)",
     NULL},
    {"grace", NULL, P(grace_s), MT_PARAM_U32, 0, 3600, 0, "S",
     "on SIGTERM, wait up to S seconds for jobs", NULL},
    {"secure-cookies", NULL, P(secure_cookies), MT_PARAM_I32, 0, 1, 0, NULL,
     "mark cookies Secure (behind TLS)", NULL},
    {"test-routes", NULL, P(test_routes), MT_PARAM_I32, 0, 1, 0, NULL,
     "test equipment: enable POST /v1/jobs/sleep", NULL},
};

static void defaults(void *p)
{
    mt_server_default_params(p);
}

const struct mt_param_table mt_server_param_table = {
    "mt_server_params", server_params,
    sizeof server_params / sizeof server_params[0],
    sizeof(struct mt_server_params), defaults};
