/* WAL checkpoints on a thread of their own, for long writes (an import):
 * the writer's connection stops checkpointing after its commits (SQLite's
 * wal_autocheckpoint, 1000 pages, did that on the writer's thread: the
 * page copies into store.db and both fsyncs, every 16 MiB written); a
 * thread with its own connection runs a PASSIVE checkpoint each time the
 * WAL has grown by 1000 pages, which never blocks the writer. Should it fall
 * behind, the writer checkpoints itself once the WAL holds CKPT_CAP pages,
 * so the WAL stays bounded. Crash safety is unchanged: a checkpoint only
 * copies committed frames into store.db, whoever runs it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "store/store_int.h"

#define CKPT_PAGES 1000 /* SQLite's default autocheckpoint */
#define CKPT_CAP 16000  /* WAL pages (250 MiB at 16 KiB) the writer allows */

struct mtx_ckpt {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sqlite3 *db; /* the thread's own connection */
    int pending; /* the WAL grew CKPT_PAGES since the last signal */
    int stop;
    int mark;      /* the WAL's pages at the last signal (writer only) */
    uint64_t runs; /* checkpoints the thread ran (for tests) */
};

/* After each commit of the writer (SQLite's WAL hook), with the WAL's
 * length in pages. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct mtx_ckpt *c = arg;

    if (pages >= CKPT_CAP) { /* PASSIVE: busy (the thread is at it) is ok */
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                  NULL);
        return SQLITE_OK;
    }
    if (pages < c->mark)
        c->mark = 0; /* the WAL restarted */
    if (pages - c->mark < CKPT_PAGES)
        return SQLITE_OK;
    c->mark = pages;
    pthread_mutex_lock(&c->mu);
    c->pending = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return SQLITE_OK;
}

static void *ckpt_main(void *arg)
{
    struct mtx_ckpt *c = arg;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->pending && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->stop)
            break;
        c->pending = 0;
        pthread_mutex_unlock(&c->mu);
        sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                  NULL);
        pthread_mutex_lock(&c->mu);
        c->runs++;
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void ckpt_free(struct mtx_ckpt *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    sqlite3_close_v2(c->db);
    mt_free(c);
}

static enum mt_status ckpt_start(struct mt_store *s, struct mt_error *err)
{
    struct mtx_ckpt *c = mt_calloc(1, sizeof *c);
    const char *path = sqlite3_db_filename(s->db, "main");
    int rc;

    if (!c)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", s->dir);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    rc = sqlite3_open_v2(path, &c->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    /* A connection opens the WAL on its first read; until then its
     * checkpoints do nothing. */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c->db, "PRAGMA journal_mode", NULL, NULL, NULL);
    if (rc == SQLITE_OK && pthread_create(&c->th, NULL, ckpt_main, c) != 0)
        rc = SQLITE_NOMEM;
    if (rc != SQLITE_OK) {
        ckpt_free(c);
        return mt_fail(err, rc == SQLITE_NOMEM ? MT_ENOMEM : MT_EDB,
                       "%s: cannot start the checkpoint thread: %s", s->dir,
                       sqlite3_errstr(rc));
    }
    s->ckpt = c;
    sqlite3_wal_hook(s->db, wal_hook, c);
    return MT_OK;
}

/* Stops the thread (after the checkpoint it is running) and gives
 * checkpoints back to the writer's connection. */
static void ckpt_stop(struct mt_store *s)
{
    struct mtx_ckpt *c = s->ckpt;

    if (!c)
        return;
    sqlite3_wal_autocheckpoint(s->db, CKPT_PAGES); /* SQLite's own hook */
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->th, NULL);
    ckpt_free(c);
    s->ckpt = NULL;
}

enum mt_status mt_store_background_checkpoints(struct mt_store *s, int on,
                                               struct mt_error *err)
{
    if (!on) {
        ckpt_stop(s);
        return MT_OK;
    }
    if (s->params.read_only)
        return mt_fail(err, MT_EINVAL, "%s: opened read-only", s->dir);
    return s->ckpt ? MT_OK : ckpt_start(s, err);
}

uint64_t mtx_store_checkpoint_runs(struct mt_store *s)
{
    uint64_t n;

    if (!s->ckpt)
        return 0;
    pthread_mutex_lock(&s->ckpt->mu);
    n = s->ckpt->runs;
    pthread_mutex_unlock(&s->ckpt->mu);
    return n;
}
