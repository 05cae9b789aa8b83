/* The index build's reading and analysis: the store's chunks in id order,
 * each analysed into its title and text terms, handed to the builder in
 * that order. With several threads the calling thread reads batches of
 * chunks and inverts them while workers analyse the batches after them,
 * so the builder sees exactly the serial build's calls. */
#include <pthread.h>
#include <string.h>

#include "core/arena.h"
#include "core/pool.h"
#include "index/index_int.h"
#include "medtrust/core.h"
#include "text/analyzer.h"

/* A batch ends at this many chunks or text bytes, whichever comes first,
 * so the batches in flight hold a bounded amount of memory: about 8x the
 * text with its terms (a term costs an mt_str and its folded copy), so
 * RING x 2 MiB at most, beside a segment budget of 2 GiB by default. */
#define BATCH_ROWS 128
#define BATCH_TEXT (256u << 10)
#define THREADS_MAX 64

/* One chunk of a batch; terms are offsets into the batch's term array. */
struct arow {
    int64_t chunk_id;
    int64_t source_id;
    const char *title; /* NULL when none */
    const char *text;
    size_t text_len;
    size_t off[MT_BM25_FIELDS];
    size_t cnt[MT_BM25_FIELDS];
};

struct batch {
    struct arow rows[BATCH_ROWS];
    size_t n;
    size_t text_bytes;
    struct mt_arena arena; /* the chunks' copies and their terms */
    struct mt_str *terms;
    size_t nterms, tcap;
    size_t nok; /* rows analysed before a failure (n on success) */
    int done;   /* analysed; guarded by pipe.mu */
    enum mt_status st;
    struct mt_error err;
};

struct worker {
    struct apipe *pp;
    struct mt_analyzer *an;
};

struct apipe {
    mtx_achunk_fn fn;
    void *user;
    int64_t upto;
    int stopped; /* the scan reached a chunk past upto */
    struct batch *ring;
    size_t nring;
    uint64_t head; /* batches submitted */
    uint64_t tail; /* batches handed to fn */
    uint64_t take; /* batches taken by workers */
    struct worker *workers;
    size_t nworkers;
    struct mt_pool *pool;
    pthread_mutex_t mu;
    pthread_cond_t work; /* a batch was submitted, or stop */
    pthread_cond_t done; /* a batch was analysed */
    int stop;
    struct mt_error *err;
};

/* ==== Analysis ==== */

struct collect {
    struct batch *b;
    enum mt_status st;
};

static enum mt_status push_term(struct batch *b, const char *tok, size_t n)
{
    char *copy;

    if (b->nterms == b->tcap) {
        size_t cap = b->tcap ? b->tcap * 2 : 4096;
        struct mt_str *v = mt_realloc(b->terms, cap * sizeof *v);
        if (!v)
            return MT_ENOMEM;
        b->terms = v;
        b->tcap = cap;
    }
    copy = mtx_arena_strndup(&b->arena, tok, n);
    if (!copy)
        return MT_ENOMEM;
    b->terms[b->nterms].p = copy;
    b->terms[b->nterms].n = n;
    b->nterms++;
    return MT_OK;
}

static enum mt_status on_token(const char *tok, size_t n, uint32_t pos,
                               void *user)
{
    (void)pos;
    return push_term(user, tok, n);
}

/* Analyses one field of row r into the batch's terms. */
static enum mt_status analyse_field(struct mt_analyzer *an, struct batch *b,
                                    struct arow *r, uint32_t field,
                                    const char *text, size_t n)
{
    enum mt_status st;

    r->off[field] = b->nterms;
    r->cnt[field] = 0;
    if (!text)
        return MT_OK;
    st = mtx_analyzer_run(an, text, n, on_token, b, &b->err);
    if (st == MT_ENOMEM)
        st = mt_fail(&b->err, st, "index build: out of memory");
    r->cnt[field] = b->nterms - r->off[field];
    return st;
}

static void analyse_batch(struct mt_analyzer *an, struct batch *b)
{
    b->st = MT_OK;
    for (b->nok = 0; b->nok < b->n; b->nok++) {
        struct arow *r = &b->rows[b->nok];
        b->st = analyse_field(an, b, r, MT_BM25_FIELD_TITLE, r->title,
                              r->title ? strlen(r->title) : 0);
        if (b->st == MT_OK)
            b->st = analyse_field(an, b, r, MT_BM25_FIELD_TEXT, r->text,
                                  r->text_len);
        if (b->st != MT_OK)
            return;
    }
}

/* Hands the analysed rows to fn, in order; then the batch's failure. */
static enum mt_status hand_over(struct apipe *pp, struct batch *b)
{
    enum mt_status st = MT_OK;
    size_t i, f;

    for (i = 0; st == MT_OK && i < b->nok; i++) {
        const struct arow *r = &b->rows[i];
        struct mtx_achunk c;
        c.chunk_id = r->chunk_id;
        c.source_id = r->source_id;
        c.title = r->title;
        c.text = r->text;
        c.text_len = r->text_len;
        for (f = 0; f < MT_BM25_FIELDS; f++) {
            c.terms[f] = b->terms + r->off[f];
            c.nterms[f] = r->cnt[f];
        }
        st = pp->fn(&c, pp->user);
    }
    if (st == MT_OK && b->st != MT_OK) {
        st = b->st;
        if (pp->err)
            *pp->err = b->err;
    }
    return st;
}

static void batch_reset(struct batch *b)
{
    b->n = 0;
    b->text_bytes = 0;
    b->nterms = 0;
    b->done = 0;
    mtx_arena_reset(&b->arena);
}

/* ==== Workers ==== */

static void work_main(void *arg)
{
    struct worker *w = arg;
    struct apipe *pp = w->pp;

    pthread_mutex_lock(&pp->mu);
    for (;;) {
        struct batch *b;
        while (!pp->stop && pp->take == pp->head)
            pthread_cond_wait(&pp->work, &pp->mu);
        if (pp->stop)
            break;
        b = &pp->ring[pp->take++ % pp->nring];
        pthread_mutex_unlock(&pp->mu);
        analyse_batch(w->an, b);
        pthread_mutex_lock(&pp->mu);
        b->done = 1;
        pthread_cond_broadcast(&pp->done);
    }
    pthread_mutex_unlock(&pp->mu);
}

/* Waits for the oldest batch in flight, hands it over and frees its slot. */
static enum mt_status drain_one(struct apipe *pp)
{
    struct batch *b = &pp->ring[pp->tail % pp->nring];
    enum mt_status st;

    pthread_mutex_lock(&pp->mu);
    while (!b->done)
        pthread_cond_wait(&pp->done, &pp->mu);
    pthread_mutex_unlock(&pp->mu);
    st = hand_over(pp, b);
    batch_reset(b);
    pp->tail++;
    return st;
}

static int tail_done(struct apipe *pp)
{
    int d;

    pthread_mutex_lock(&pp->mu);
    d = pp->tail < pp->head && pp->ring[pp->tail % pp->nring].done;
    pthread_mutex_unlock(&pp->mu);
    return d;
}

/* Submits the batch being filled, then hands over what is analysed: all
 * that is ready, and the oldest whenever no slot is free. */
static enum mt_status submit(struct apipe *pp)
{
    enum mt_status st = MT_OK;

    if (pp->ring[pp->head % pp->nring].n == 0)
        return MT_OK;
    pthread_mutex_lock(&pp->mu);
    pp->head++;
    pthread_cond_signal(&pp->work);
    pthread_mutex_unlock(&pp->mu);
    while (st == MT_OK && (pp->head - pp->tail == pp->nring || tail_done(pp)))
        st = drain_one(pp);
    return st;
}

/* ==== Reading ==== */

static const char *copy_str(struct batch *b, const char *s, size_t n)
{
    return mtx_arena_strndup(&b->arena, s, n);
}

/* Copies a store row into the batch being filled (the row's memory lasts
 * only until the scan's next step). */
static enum mt_status add_row(struct apipe *pp, const struct mt_chunk_row *r)
{
    struct batch *b = &pp->ring[pp->head % pp->nring];
    struct arow *a = &b->rows[b->n];

    a->chunk_id = r->chunk_id;
    a->source_id = r->source_id;
    a->title = r->title ? copy_str(b, r->title, strlen(r->title)) : NULL;
    a->text = copy_str(b, r->text, r->text_len);
    a->text_len = r->text_len;
    if ((r->title && !a->title) || !a->text)
        return mt_fail(pp->err, MT_ENOMEM, "index build: out of memory");
    b->n++;
    b->text_bytes += r->text_len;
    if (b->n == BATCH_ROWS || b->text_bytes >= BATCH_TEXT)
        return submit(pp);
    return MT_OK;
}

/* One thread: each row analysed and handed over at once, no copies. */
static enum mt_status inline_row(struct apipe *pp, const struct mt_chunk_row *r)
{
    struct batch *b = &pp->ring[0];
    struct arow *a = &b->rows[0];
    enum mt_status st;

    a->chunk_id = r->chunk_id;
    a->source_id = r->source_id;
    a->title = r->title;
    a->text = r->text;
    a->text_len = r->text_len;
    b->n = 1;
    analyse_batch(pp->workers[0].an, b);
    st = hand_over(pp, b);
    batch_reset(b);
    return st;
}

static enum mt_status on_row(const struct mt_chunk_row *r, void *user)
{
    struct apipe *pp = user;

    if (r->chunk_id > pp->upto) {
        pp->stopped = 1;
        return MT_ECANCELED; /* stops the scan */
    }
    return pp->pool ? add_row(pp, r) : inline_row(pp, r);
}

/* ==== Lifecycle ==== */

static size_t worker_count(uint32_t threads)
{
    size_t n = threads ? threads : mtx_online_cpus();

    return n > THREADS_MAX ? THREADS_MAX : n;
}

static void pipe_free(struct apipe *pp)
{
    size_t i;

    if (pp->pool) {
        pthread_mutex_lock(&pp->mu);
        pp->stop = 1;
        pthread_cond_broadcast(&pp->work);
        pthread_mutex_unlock(&pp->mu);
    }
    mtx_pool_free(pp->pool); /* joins the workers */
    for (i = 0; pp->workers && i < pp->nworkers; i++)
        mtx_analyzer_free(pp->workers[i].an);
    for (i = 0; pp->ring && i < pp->nring; i++) {
        mtx_arena_free(&pp->ring[i].arena);
        mt_free(pp->ring[i].terms);
    }
    mt_free(pp->workers);
    mt_free(pp->ring);
    pthread_cond_destroy(&pp->done);
    pthread_cond_destroy(&pp->work);
    pthread_mutex_destroy(&pp->mu);
}

/* With one thread: one slot and the calling thread's analyzer. With n:
 * n workers (each with its analyzer) and 2n + 1 slots, so each worker
 * has a batch ahead while the calling thread inverts one. */
static enum mt_status pipe_open(struct apipe *pp, const char *analyzer,
                                uint32_t threads, struct mt_error *err)
{
    size_t n = worker_count(threads), i;
    enum mt_status st = MT_OK;

    pthread_mutex_init(&pp->mu, NULL);
    pthread_cond_init(&pp->work, NULL);
    pthread_cond_init(&pp->done, NULL);
    pp->nworkers = n > 1 ? n : 1;
    pp->nring = n > 1 ? 2 * n + 1 : 1;
    pp->workers = mt_calloc(pp->nworkers, sizeof *pp->workers);
    pp->ring = mt_calloc(pp->nring, sizeof *pp->ring);
    if (!pp->workers || !pp->ring)
        return mt_fail(err, MT_ENOMEM, "index build: out of memory");
    for (i = 0; i < pp->nring; i++)
        pp->ring[i].arena = MT_ARENA_INIT(256 * 1024);
    for (i = 0; st == MT_OK && i < pp->nworkers; i++) {
        pp->workers[i].pp = pp;
        st = mtx_analyzer_new(analyzer, &pp->workers[i].an, err);
    }
    if (st != MT_OK || n == 1)
        return st;
    if (mtx_pool_new(n, &pp->pool) != MT_OK)
        return mt_fail(err, MT_ENOMEM,
                       "index build: cannot start %zu "
                       "analysis threads",
                       n);
    for (i = 0; i < n; i++)
        if (mtx_pool_submit(pp->pool, work_main, &pp->workers[i]) != MT_OK)
            return mt_fail(err, MT_ENOMEM, "index build: out of memory");
    return MT_OK;
}

enum mt_status mtx_index_analyse(struct mt_store *s,
                                 const struct mtx_analyse_params *p,
                                 mtx_achunk_fn fn, void *user,
                                 struct mt_error *err)
{
    struct apipe pp;
    enum mt_status st;

    memset(&pp, 0, sizeof pp);
    pp.fn = fn;
    pp.user = user;
    pp.upto = p->upto;
    pp.err = err;
    st = pipe_open(&pp, p->analyzer, p->threads, err);
    if (st == MT_OK)
        st = mt_store_each_chunk(s, p->after, on_row, &pp, err);
    if (st == MT_ECANCELED && pp.stopped)
        st = MT_OK;
    if (st == MT_OK && pp.pool)
        st = submit(&pp);
    while (st == MT_OK && pp.tail < pp.head)
        st = drain_one(&pp);
    pipe_free(&pp);
    return st;
}
