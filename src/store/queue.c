/* The job queue over libpq (store/queue.h). Every statement is written to
 * be harmless when the connection layer sends it again after a lost
 * connection: a claim sent twice leaves at most one job claimed by nobody
 * who knows it, which its lease hands back; a finish is fenced by the
 * attempt number; a submit is keyed by a token the client chose. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "store/queue.h"

/* Append new steps; never edit one that has shipped. */
static const struct mtx_pg_migration queue_steps[] = {
    {1, "CREATE TABLE queue_runs ("
        " id BIGSERIAL PRIMARY KEY,"
        " token TEXT NOT NULL UNIQUE,"
        " kind TEXT NOT NULL,"
        " options TEXT NOT NULL,"
        " total INTEGER NOT NULL,"
        " created TIMESTAMPTZ NOT NULL DEFAULT now());"
        "CREATE TABLE queue_jobs ("
        " id BIGSERIAL PRIMARY KEY,"
        " run_id BIGINT NOT NULL REFERENCES queue_runs(id) ON DELETE CASCADE,"
        " seq INTEGER NOT NULL,"
        " payload TEXT NOT NULL,"
        " state TEXT NOT NULL DEFAULT 'queued'"
        "  CHECK (state IN ('queued', 'running', 'done')),"
        " worker TEXT,"
        " attempt INTEGER NOT NULL DEFAULT 0,"
        " lease_until TIMESTAMPTZ,"
        " result TEXT,"
        " failed BOOLEAN NOT NULL DEFAULT false,"
        " finished TIMESTAMPTZ,"
        " UNIQUE (run_id, seq));"
        /* the claim's scan: only jobs not yet done, in order */
        "CREATE INDEX queue_jobs_open ON queue_jobs (id)"
        " WHERE state <> 'done';"},
    /* each run counts its finished jobs, so a heartbeat reads progress
     * from the run rows instead of counting job rows every second */
    {2, "ALTER TABLE queue_runs ADD COLUMN done INTEGER NOT NULL DEFAULT 0;"
        "UPDATE queue_runs r SET done = (SELECT count(*) FROM queue_jobs j"
        " WHERE j.run_id = r.id AND j.state = 'done');"},
};

enum mt_status mtx_queue_open(const char *url, struct mtx_pg **out,
                              struct mt_error *err)
{
    return mtx_pg_open_migrated(url, "queue", queue_steps,
                                sizeof queue_steps / sizeof queue_steps[0], out,
                                err);
}

/* ==== Submitting ==== */

#define SUBMIT_ROWS 200 /* jobs per INSERT: 2 parameters each, plus one */

struct submit {
    const char *token, *kind, *options;
    const char *const *payloads;
    size_t n;
    int64_t run;
};

static enum mt_status insert_jobs(struct mtx_pg *pg, const struct submit *s,
                                  size_t from, size_t k, struct mt_error *err)
{
    struct mt_buf sql = MT_BUF_INIT((size_t)1 << 20);
    const char *pa[1 + 2 * SUBMIT_ROWS];
    char seqs[SUBMIT_ROWS][24];
    char runb[24];
    size_t i;
    enum mt_status st = mtx_buf_printf(
        &sql, "INSERT INTO queue_jobs (run_id, seq, payload) VALUES ");

    pa[0] = mtx_pg_i64(runb, s->run);
    for (i = 0; st == MT_OK && i < k; i++) {
        pa[1 + 2 * i] = mtx_pg_i64(seqs[i], (int64_t)(from + i));
        pa[2 + 2 * i] = s->payloads[from + i];
        st = mtx_buf_printf(&sql, "%s($1, $%zu::int, $%zu)", i ? "," : "",
                            2 + 2 * i, 3 + 2 * i);
    }
    if (st == MT_OK)
        st = mtx_pg_cmd(pg, sql.data, (int)(1 + 2 * k), pa, NULL, err);
    else
        mt_fail(err, st, "queue: out of memory");
    mtx_buf_free(&sql);
    return st;
}

static enum mt_status submit_txn(struct mtx_pg *pg, void *user,
                                 struct mt_error *err)
{
    struct submit *s = user;
    char nb[24];
    const char *pa[4] = {s->token, s->kind, s->options,
                         mtx_pg_i64(nb, (int64_t)s->n)};
    PGresult *r = NULL;
    size_t i;
    enum mt_status st = mtx_pg_exec(
        pg, "SELECT id FROM queue_runs WHERE token = $1", 1, pa, &r, err);

    if (st == MT_OK && PQntuples(r) == 1) { /* committed, reply lost */
        s->run = mtx_pg_int(r, 0, 0);
        PQclear(r);
        return MT_OK;
    }
    PQclear(r);
    r = NULL;
    if (st == MT_OK)
        st = mtx_pg_exec(pg,
                         "INSERT INTO queue_runs (token, kind, options, total)"
                         " VALUES ($1, $2, $3, $4::int) RETURNING id",
                         4, pa, &r, err);
    if (st == MT_OK)
        s->run = mtx_pg_int(r, 0, 0);
    PQclear(r);
    for (i = 0; st == MT_OK && i < s->n; i += SUBMIT_ROWS)
        st = insert_jobs(pg, s, i,
                         s->n - i < SUBMIT_ROWS ? s->n - i : SUBMIT_ROWS, err);
    return st;
}

enum mt_status mtx_queue_submit(struct mtx_pg *pg, const char *kind,
                                const char *options,
                                const char *const *payloads, size_t n,
                                int64_t *run, struct mt_error *err)
{
    char token[96];
    struct timespec ts;
    struct submit s = {token, kind, options, payloads, n, 0};
    enum mt_status st;

    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(token, sizeof token, "%ld.%09ld.%ld.%d", (long)ts.tv_sec,
             ts.tv_nsec, (long)getpid(), rand());
    st = mtx_pg_txn(pg, submit_txn, &s, err);
    if (st == MT_OK)
        *run = s.run;
    return st;
}

/* ==== Claiming, heartbeats, results ==== */

void mtx_queue_job_free(struct mtx_queue_job *j)
{
    if (!j)
        return;
    mt_free(j->payload);
    memset(j, 0, sizeof *j);
}

enum mt_status mtx_queue_claim(struct mtx_pg *pg, const char *worker,
                               double lease_s, int64_t run, const char *kinds,
                               struct mtx_queue_job *job, struct mt_error *err)
{
    static const char sql[] =
        "UPDATE queue_jobs j SET state = 'running', worker = $1,"
        " attempt = j.attempt + 1,"
        " lease_until = now() + make_interval(secs => $2::float8)"
        " WHERE j.id = (SELECT id FROM queue_jobs"
        "  WHERE state <> 'done' AND ($3::bigint = 0 OR run_id = $3::bigint)"
        "  AND (state = 'queued' OR lease_until < now())"
        "  AND ($4::text[] IS NULL OR run_id IN (SELECT id FROM queue_runs"
        "   WHERE kind = ANY($4::text[])))"
        "  ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)"
        " RETURNING j.id, j.run_id, j.seq, j.attempt, j.payload,"
        " (SELECT kind FROM queue_runs WHERE id = j.run_id)";
    char lb[32], rb[24];
    const char *pa[4] = {worker, lb, mtx_pg_i64(rb, run), kinds};
    PGresult *r = NULL;
    enum mt_status st;

    snprintf(lb, sizeof lb, "%.3f", lease_s);
    st = mtx_pg_exec(pg, sql, 4, pa, &r, err);
    if (st != MT_OK)
        return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return MT_ENOTFOUND;
    }
    memset(job, 0, sizeof *job);
    job->id = mtx_pg_int(r, 0, 0);
    job->run = mtx_pg_int(r, 0, 1);
    job->seq = mtx_pg_int(r, 0, 2);
    job->attempt = mtx_pg_int(r, 0, 3);
    job->payload = mt_strdup(mtx_pg_text(r, 0, 4));
    snprintf(job->kind, sizeof job->kind, "%s", mtx_pg_text(r, 0, 5));
    PQclear(r);
    return job->payload ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

/* The ids as a PostgreSQL array literal, "{1,2,3}". */
static char *id_array(const int64_t *ids, size_t n)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 24);
    enum mt_status st = mtx_buf_printf(&b, "{");
    size_t i;

    for (i = 0; st == MT_OK && i < n; i++)
        st = mtx_buf_printf(&b, "%s%lld", i ? "," : "", (long long)ids[i]);
    if (st == MT_OK)
        st = mtx_buf_printf(&b, "}");
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

enum mt_status mtx_queue_beat(struct mtx_pg *pg, const char *worker,
                              double lease_s, const int64_t *ids, size_t n,
                              int64_t run, const char *kinds, size_t *kept,
                              struct mtx_queue_progress *prog,
                              struct mt_error *err)
{
    static const char sql[] =
        "WITH hb AS (UPDATE queue_jobs SET"
        "  lease_until = now() + make_interval(secs => $2::float8)"
        "  WHERE id = ANY($3::bigint[]) AND worker = $1 AND state = 'running'"
        "  RETURNING 1)"
        " SELECT (SELECT count(*) FROM hb), coalesce(sum(total), 0),"
        " coalesce(sum(done), 0) FROM queue_runs"
        " WHERE ($4::bigint = 0 OR id = $4::bigint)"
        " AND ($5::text[] IS NULL OR kind = ANY($5::text[]))";
    char lb[32], rb[24];
    char *arr = id_array(ids, n);
    const char *pa[5] = {worker, lb, arr, mtx_pg_i64(rb, run), kinds};
    PGresult *r = NULL;
    enum mt_status st;

    if (!arr)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    snprintf(lb, sizeof lb, "%.3f", lease_s);
    st = mtx_pg_exec(pg, sql, 5, pa, &r, err);
    mt_free(arr);
    if (st != MT_OK)
        return st;
    if (kept)
        *kept = (size_t)mtx_pg_int(r, 0, 0);
    if (prog) {
        prog->total = mtx_pg_int(r, 0, 1);
        prog->done = mtx_pg_int(r, 0, 2);
    }
    PQclear(r);
    return MT_OK;
}

enum mt_status mtx_queue_heartbeat(struct mtx_pg *pg, const char *worker,
                                   double lease_s, const int64_t *ids, size_t n,
                                   size_t *kept, struct mt_error *err)
{
    return mtx_queue_beat(pg, worker, lease_s, ids, n, -1, NULL, kept, NULL,
                          err);
}

enum mt_status mtx_queue_finish(struct mtx_pg *pg,
                                const struct mtx_queue_job *job,
                                const char *result, int failed,
                                struct mt_error *err)
{
    char ib[24], ab[24];
    const char *pa[4] = {mtx_pg_i64(ib, job->id), mtx_pg_i64(ab, job->attempt),
                         result, failed ? "t" : "f"};
    PGresult *r = NULL;
    int64_t changed = 0;
    int mine;
    /* one statement, so the run's count moves with the job's state */
    enum mt_status st = mtx_pg_cmd(
        pg,
        "WITH f AS (UPDATE queue_jobs SET state = 'done', result = $3,"
        "  failed = $4::boolean, finished = now(), lease_until = NULL"
        "  WHERE id = $1::bigint AND attempt = $2::int AND state = 'running'"
        "  RETURNING run_id)"
        " UPDATE queue_runs r SET done = r.done + 1 FROM f WHERE r.id = "
        "f.run_id",
        4, pa, &changed, err);

    if (st != MT_OK || changed == 1)
        return st;
    st = mtx_pg_exec(pg,
                     "SELECT 1 FROM queue_jobs WHERE id = $1::bigint AND"
                     " attempt = $2::int AND state = 'done'",
                     2, pa, &r, err);
    mine = st == MT_OK && PQntuples(r) == 1; /* our earlier, unacked write */
    PQclear(r);
    if (st != MT_OK || mine)
        return st;
    return mt_fail(err, MT_ECANCELED,
                   "queue: job %lld (run %lld, #%lld) was taken over after "
                   "its lease ran out; this result is dropped",
                   (long long)job->id, (long long)job->run,
                   (long long)job->seq);
}

enum mt_status mtx_queue_orphans(struct mtx_pg *pg, double older_s,
                                 const char *why, int64_t *n,
                                 struct mt_error *err)
{
    char ob[32];
    const char *pa[2] = {why, ob};
    int64_t changed = 0;
    enum mt_status st;

    snprintf(ob, sizeof ob, "%lld", (long long)older_s);
    /* a server job's payload is {"kind":...,"run":ID,"body":...}
     * (shared_jobs.c); a run whose text no unfinished row holds has no
     * job anywhere */
    st = mtx_pg_cmd(
        pg,
        "UPDATE runs SET status = 'interrupted', error = $1,"
        " finished_at = extract(epoch from now())::bigint"
        " WHERE status IN ('queued', 'running')"
        "  AND created_at < extract(epoch from now())::bigint - $2::bigint"
        "  AND NOT EXISTS (SELECT 1 FROM queue_jobs q WHERE q.state <> 'done'"
        "   AND position('\"run\":' || runs.id::text || ',' in q.payload) > 0)",
        2, pa, &changed, err);
    if (n)
        *n = st == MT_OK ? changed : 0;
    return st;
}

enum mt_status mtx_queue_release(struct mtx_pg *pg,
                                 const struct mtx_queue_job *job,
                                 struct mt_error *err)
{
    char ib[24], ab[24];
    const char *pa[2] = {mtx_pg_i64(ib, job->id), mtx_pg_i64(ab, job->attempt)};

    return mtx_pg_cmd(pg,
                      "UPDATE queue_jobs SET state = 'queued', worker = NULL,"
                      " lease_until = NULL WHERE id = $1::bigint AND"
                      " attempt = $2::int AND state = 'running'",
                      2, pa, NULL, err);
}

/* ==== Reading a run ==== */

enum mt_status mtx_queue_counts(struct mtx_pg *pg, int64_t run,
                                const char *kinds, struct mtx_queue_counts *c,
                                struct mt_error *err)
{
    static const char sql[] =
        "SELECT count(*), count(*) FILTER (WHERE state = 'queued'),"
        " count(*) FILTER (WHERE state = 'running'),"
        " count(*) FILTER (WHERE state = 'done'),"
        " count(*) FILTER (WHERE state = 'done' AND failed),"
        " coalesce(sum(greatest(attempt - 1, 0)), 0)"
        " FROM queue_jobs WHERE ($1::bigint = 0 OR run_id = $1::bigint)"
        " AND ($2::text[] IS NULL OR run_id IN (SELECT id FROM queue_runs"
        "  WHERE kind = ANY($2::text[])))";
    char rb[24];
    const char *pa[2] = {mtx_pg_i64(rb, run), kinds};
    PGresult *r = NULL;
    enum mt_status st = mtx_pg_exec(pg, sql, 2, pa, &r, err);

    if (st != MT_OK)
        return st;
    c->total = mtx_pg_int(r, 0, 0);
    c->queued = mtx_pg_int(r, 0, 1);
    c->running = mtx_pg_int(r, 0, 2);
    c->done = mtx_pg_int(r, 0, 3);
    c->failed = mtx_pg_int(r, 0, 4);
    c->reclaimed = mtx_pg_int(r, 0, 5);
    PQclear(r);
    return MT_OK;
}

enum mt_status mtx_queue_run(struct mtx_pg *pg, int64_t run, char **kind,
                             char **options, struct mt_error *err)
{
    char rb[24];
    const char *pa[1] = {mtx_pg_i64(rb, run)};
    PGresult *r = NULL;
    enum mt_status st = mtx_pg_exec(
        pg, "SELECT kind, options FROM queue_runs WHERE id = $1::bigint", 1, pa,
        &r, err);

    if (st != MT_OK)
        return st;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return mt_fail(err, MT_ENOTFOUND, "queue: no run %lld in %s",
                       (long long)run, mtx_pg_where(pg));
    }
    *kind = mt_strdup(mtx_pg_text(r, 0, 0));
    *options = mt_strdup(mtx_pg_text(r, 0, 1));
    PQclear(r);
    if (*kind && *options)
        return MT_OK;
    mt_free(*kind);
    mt_free(*options);
    *kind = *options = NULL;
    return mt_fail(err, MT_ENOMEM, "out of memory");
}

enum mt_status mtx_queue_results(struct mtx_pg *pg, int64_t run,
                                 mtx_queue_result_fn fn, void *user,
                                 struct mt_error *err)
{
    char rb[24];
    const char *pa[1] = {mtx_pg_i64(rb, run)};
    PGresult *r = NULL;
    int i;
    enum mt_status st = mtx_pg_exec(
        pg,
        "SELECT seq, result, failed FROM queue_jobs WHERE run_id = $1::bigint"
        " AND state = 'done' ORDER BY seq",
        1, pa, &r, err);

    for (i = 0; st == MT_OK && i < PQntuples(r); i++)
        st = fn(mtx_pg_int(r, i, 0), mtx_pg_text(r, i, 1),
                strcmp(mtx_pg_text(r, i, 2), "t") == 0, user);
    PQclear(r);
    return st;
}
