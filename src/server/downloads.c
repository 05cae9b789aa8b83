/* A batch's files for download: GET /v1/runs/ID/submission (the
 * MEDIQA-CORR submission, one line a note) and /v1/runs/ID/traces (each
 * note's check with its trace, JSON lines as `mediqa --trace` writes
 * them), read from DB/batches/run-ID/ of the server that ran it. The
 * score report is GET /v1/runs/ID/report (runs.c). */
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/file.h"
#include "medtrust/core.h"
#include "server/srv_int.h"

#define DOWNLOAD_MAX ((size_t)1 << 30)

struct dl_run {
    const struct srv_req *rq;
    int seen, denied, batch;
};

static enum mt_status on_run(const struct mt_run *r, void *user)
{
    struct dl_run *c = user;

    c->seen = 1;
    c->denied =
        c->rq->user.role != MT_ROLE_ADMIN && r->user_id != c->rq->user.id;
    c->batch = r->kind && strcmp(r->kind, "batch") == 0;
    return MT_OK;
}

/* 0 when run 'id' is a batch of the caller's (or they are an admin); else
 * answers 404 and returns -1. */
static int batch_of(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    struct mt_error err = {MT_OK, ""};
    struct dl_run c = {rq, 0, 0, 0};
    struct srv_lease *l = NULL;
    enum mt_status st = mtx_srv_lease_get(s, &l, &err);

    if (st == MT_OK)
        st = mt_run_get(l->state, id, on_run, &c, &err);
    mtx_srv_lease_put(s, l);
    if (st != MT_OK && st != MT_ENOTFOUND)
        mtx_srv_fail(rs, st, &err);
    else if (!c.seen || c.denied)
        mtx_srv_error(rs, 404, "no run %lld", (long long)id);
    else if (!c.batch)
        mtx_srv_error(rs, 404,
                      "run %lld is not a batch: only batches have a "
                      "submission and traces",
                      (long long)id);
    else
        return 0;
    return -1;
}

/* Answers DB/batches/run-ID/FILE as an attachment named DOWNLOAD. */
static void send_file(struct mt_server *s, struct srv_resp *rs, int64_t id,
                      const char *file, const char *what, const char *type,
                      const char *ext)
{
    struct mt_error err = {MT_OK, ""};
    struct mt_buf b = MT_BUF_INIT(DOWNLOAD_MAX);
    char path[4200];
    enum mt_status st;

    snprintf(path, sizeof path, "%s/batches/run-%lld/%s", s->db_dir,
             (long long)id, file);
    st = mtx_file_read_all(path, &b, &err);
    if (st == MT_OK && !b.data)
        st = mtx_buf_reserve(&b, 1);
    if (st != MT_OK) {
        mtx_buf_free(&b);
        if (st == MT_ENOTFOUND)
            mtx_srv_error(rs, 404,
                          "run %lld has no %s on this server yet: it is "
                          "written once the batch checks its first note, "
                          "on the server that runs it",
                          (long long)id, what);
        else
            mtx_srv_error(rs, 500, "cannot read the %s of run %lld", what,
                          (long long)id);
        return;
    }
    mtx_srv_resp_free(rs);
    rs->len = b.len;
    rs->body = mtx_buf_take(&b);
    rs->status = 200;
    rs->type = type;
    snprintf(rs->disposition, sizeof rs->disposition,
             "attachment; filename=\"run-%lld-%s.%s\"", (long long)id, what,
             ext);
}

void mtx_srv_batch_submission(struct mt_server *s, struct srv_req *rq,
                              struct srv_resp *rs, int64_t id)
{
    if (batch_of(s, rq, rs, id) == 0)
        send_file(s, rs, id, "submission.txt", "submission",
                  "text/plain; charset=utf-8", "txt");
}

void mtx_srv_batch_traces(struct mt_server *s, struct srv_req *rq,
                          struct srv_resp *rs, int64_t id)
{
    if (batch_of(s, rq, rs, id) == 0)
        send_file(s, rs, id, "traces.jsonl", "traces",
                  "application/jsonl; charset=utf-8", "jsonl");
}
