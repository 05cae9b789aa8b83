/* The server's jobs: the batch layer's job runtime (batch/jobs.h: the
 * queue, the workers, each job's run row and replay log, the shared
 * queue's rows and mirrors) started with the server's settings and its
 * store leases. Model-bound requests run on its worker threads (their
 * number is the cap on concurrent LLM jobs), never on the network
 * threads; with a shared state the queue is PostgreSQL's (store/queue.h),
 * claimed by the queue worker loop (shared_jobs.c). */
#include "medtrust/core.h"
#include "server/srv_int.h"

/* The runtime's state: one of the server's leases. */
static struct mt_state *state_get(void *user, void **lease,
                                  struct mt_error *err)
{
    struct srv_lease *l = NULL;

    mtx_srv_lease_get(user, &l, err);
    *lease = l;
    return l ? l->state : NULL;
}

static void state_put(void *user, void *lease)
{
    mtx_srv_lease_put(user, lease);
}

int mtx_srv_runs_jobs(const struct mt_server *s)
{
    return s->p.llm_jobs > 0;
}

enum mt_status mtx_srv_jobs_start(struct mt_server *s, struct mt_error *err)
{
    struct mtx_jobs_params p;
    enum mt_status st;

    mtx_jobs_default_params(&p);
    /* with a shared state the queue worker loop's threads claim its rows */
    p.workers = !s->state_url && mtx_srv_runs_jobs(s) ? s->p.llm_jobs : 0;
    p.max_queued = s->p.max_queued;
    p.replay_max = s->p.replay_max;
    p.job_timeout_s = s->p.job_timeout_s;
    p.streams_max = SRV_STREAMS_PER_JOB;
    p.shared = s->state_url != NULL;
    p.log_prefix = "server";
    p.state_get = state_get;
    p.state_put = state_put;
    p.user = s;
    st = mtx_jobs_start(&p, &s->jobs, err);
    if (st == MT_OK && s->state_url)
        st = mtx_srv_queue_start(s, err);
    return st;
}

void mtx_srv_jobs_stop(struct mt_server *s, double grace_s)
{
    if (!s->jobs)
        return;
    mtx_jobs_stop(s->jobs, grace_s);
    mtx_srv_queue_stop(s); /* its threads finish the rows in hand */
    mtx_jobs_forget(s->jobs);
}
