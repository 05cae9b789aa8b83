/* The import pipeline: input files are parsed on threads of their own
 * (XML or JSON parsing and gunzip are most of an import's time), and one
 * writer, the calling thread, applies what they read to the output file by
 * file in input order. So a later record of an id still replaces an
 * earlier one, a DeleteCitation lands where it stood, each file's resume
 * mark is written after its last document, and the failure reported is
 * the first in input order, with the message a one-thread run gave.
 * Memory stays bounded: a parser waits while its file holds FILE_CAP
 * bytes the writer has not taken, and parsers run at most 'window' files
 * ahead of the writer. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/pool.h"
#include "corpus/corpus_int.h"
#include "medtrust/core.h"
#include "text/json_str.h"

#define BLOCK_BYTES ((size_t)256 << 10) /* a block is handed over at this */
#define FILE_CAP ((size_t)64 << 20)     /* bytes a file may hold unwritten */
#define THREADS_MAX 8
#define NO_STR UINT32_MAX /* length of an absent string */

/* Operations in a block: a tag, then its fields. Strings are a u32
 * length, the bytes and a NUL, so the writer reads them in place. */
enum op {
    OP_DOC = 'P',    /* id, title (may be absent), text, metadata JSON */
    OP_LINE = 'L',   /* a JSONL document line */
    OP_DEL = 'D',    /* id */
    OP_QUERY = 'Q',  /* a queries line */
    OP_COUNT = 'C',  /* records and skipped since the last, bytes read */
    OP_SKIP = 'W',   /* a record skipped for an error: "FILE:LINE: why" */
    OP_SOURCE = 'S', /* the source of the documents that follow ("": the
                        file's own) */
};

struct block {
    struct block *next;
    struct mt_buf b;
};

/* One input file between its parser and the writer. */
struct slot {
    struct block *head;
    struct block *tail;
    size_t bytes; /* queued, not yet taken by the writer */
    int skip;     /* imported whole by an earlier run: not parsed */
    int done;     /* the parser has finished (st, err) */
    enum mt_status st;
    struct mt_error err;
};

struct pipe {
    pthread_mutex_t mu;
    pthread_cond_t to_writer;
    pthread_cond_t to_parsers;
    mtx_import_fn fn;
    const struct mtx_in_file *files;
    size_t n;
    const struct mt_import_params *p;
    int store; /* the output is a store (else JSONL) */
    struct slot *slots;
    size_t next;    /* the next file to parse */
    size_t writing; /* the file the writer is on */
    size_t window;
    int stop; /* the writer failed: parsers give up */
};

/* One parser's sink, for one file. */
struct mt_sink {
    struct pipe *pp;
    struct slot *slot;
    struct mt_buf blk; /* the block being filled */
    uint64_t records;  /* since the last OP_COUNT */
    uint64_t skipped;
    uint64_t read;
    int counted; /* the counts changed since the last OP_COUNT */
};

/* ==== Parser side: encoding ==== */

static enum mt_status put_u64(struct mt_buf *b, uint64_t v)
{
    return mtx_buf_append(b, &v, sizeof v);
}

static enum mt_status put_str(struct mt_buf *b, const char *s, size_t n)
{
    uint32_t len = s ? (uint32_t)n : NO_STR;
    enum mt_status st = mtx_buf_append(b, &len, sizeof len);

    if (st == MT_OK && s)
        st = mtx_buf_append(b, s, n);
    if (st == MT_OK && s)
        st = mtx_buf_putc(b, '\0');
    return st;
}

static enum mt_status put_counts(struct mt_sink *k)
{
    enum mt_status st = mtx_buf_putc(&k->blk, OP_COUNT);

    if (st == MT_OK)
        st = put_u64(&k->blk, k->records);
    if (st == MT_OK)
        st = put_u64(&k->blk, k->skipped);
    if (st == MT_OK)
        st = put_u64(&k->blk, k->read);
    if (st == MT_OK)
        k->records = k->skipped = 0, k->counted = 0;
    return st;
}

/* Hands the block to the writer, then waits while the file holds too
 * much the writer has not taken. */
static enum mt_status hand_over(struct mt_sink *k, struct mt_error *err)
{
    struct pipe *pp = k->pp;
    struct slot *sl = k->slot;
    struct block *bl;
    int stop;

    if (k->counted && put_counts(k) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (k->blk.len == 0)
        return MT_OK;
    bl = mt_malloc(sizeof *bl);
    if (!bl)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    bl->next = NULL;
    bl->b = k->blk;
    k->blk = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    pthread_mutex_lock(&pp->mu);
    if (sl->tail)
        sl->tail->next = bl;
    else
        sl->head = bl;
    sl->tail = bl;
    sl->bytes += bl->b.len;
    pthread_cond_signal(&pp->to_writer);
    while (!pp->stop && sl->bytes > FILE_CAP)
        pthread_cond_wait(&pp->to_parsers, &pp->mu);
    stop = pp->stop;
    pthread_mutex_unlock(&pp->mu);
    return stop ? mt_fail(err, MT_ECANCELED, "canceled") : MT_OK;
}

/* Takes a half-written operation back out of the block (at 'len'), so
 * that what a file read before an error can still be written. */
static void undo(struct mt_buf *b, size_t len)
{
    if (b->data) {
        b->len = len;
        b->data[len] = '\0';
    }
}

static enum mt_status added(struct mt_sink *k, enum mt_status st,
                            const char *id, size_t len, struct mt_error *err)
{
    if (st != MT_OK) {
        undo(&k->blk, len);
        return mt_fail(err, st, "record %s: out of memory or over the limit",
                       id);
    }
    return k->blk.len >= BLOCK_BYTES ? hand_over(k, err) : MT_OK;
}

static char *dump(json_t *o)
{
    return json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

/* The JSONL line of a document: {"id","title","text",...metadata}. */
static char *doc_line(const struct mt_sink_doc *d)
{
    json_t *o = json_object();
    char *line = NULL;

    if (o && json_object_set_new(o, "id", json_string(d->id)) == 0 &&
        (!d->title ||
         json_object_set_new(o, "title", json_string(d->title)) == 0) &&
        json_object_set_new(o, "text", json_stringn(d->text, d->text_len)) ==
            0 &&
        (!d->meta || json_object_update(o, d->meta) == 0))
        line = dump(o);
    json_decref(o);
    return line;
}

/* Starts a string of unknown length: its u32 length is patched by
 * str_end once the bytes are in. */
static enum mt_status str_begin(struct mt_buf *b, size_t *at)
{
    uint32_t len = 0;

    *at = b->len;
    return mtx_buf_append(b, &len, sizeof len);
}

static enum mt_status str_end(struct mt_buf *b, size_t at)
{
    size_t n = b->len - at - sizeof(uint32_t);
    uint32_t len = (uint32_t)n;

    if (n >= NO_STR)
        return MT_ELIMIT;
    memcpy(b->data + at, &len, sizeof len);
    return mtx_buf_putc(b, '\0');
}

/* A document's fields as one JSON object, written in place into the
 * block: the JSONL line {"id","title","text",...fields} (what doc_line
 * gives for the same json_t) or the store's metadata {...fields}. */
static enum mt_status put_fields(struct mt_buf *b, const struct mt_sink_doc *d,
                                 int line)
{
    size_t at;
    enum mt_status st = str_begin(b, &at);

    if (st == MT_OK)
        st = mtx_buf_putc(b, '{');
    if (st == MT_OK && line)
        st = mtx_buf_append(b, "\"id\":", 5);
    if (st == MT_OK && line)
        st = mtx_json_str(b, d->id, strlen(d->id));
    if (st == MT_OK && line && d->title)
        st = mtx_buf_append(b, ",\"title\":", 9);
    if (st == MT_OK && line && d->title)
        st = mtx_json_str(b, d->title, strlen(d->title));
    if (st == MT_OK && line)
        st = mtx_buf_append(b, ",\"text\":", 8);
    if (st == MT_OK && line)
        st = mtx_json_str(b, d->text, d->text_len);
    if (st == MT_OK && line && d->fields->n)
        st = mtx_buf_putc(b, ',');
    if (st == MT_OK)
        st = mtx_meta_members(d->fields, b);
    if (st == MT_OK)
        st = mtx_buf_putc(b, '}');
    return st == MT_OK ? str_end(b, at) : st;
}

/* A document whose metadata came as mtx_meta: no jansson on the way. */
static enum mt_status put_direct(struct mt_sink *k, const struct mt_sink_doc *d)
{
    struct mt_buf *b = &k->blk;
    size_t len = b->len;
    enum mt_status st = mtx_buf_putc(b, k->pp->store ? OP_DOC : OP_LINE);

    if (st == MT_OK && k->pp->store)
        st = put_str(b, d->id, strlen(d->id));
    if (st == MT_OK && k->pp->store)
        st = put_str(b, d->title, d->title ? strlen(d->title) : 0);
    if (st == MT_OK && k->pp->store)
        st = put_str(b, d->text, d->text_len);
    if (st == MT_OK)
        st = put_fields(b, d, !k->pp->store);
    if (st != MT_OK)
        undo(b, len); /* no half operation in the block */
    return st;
}

enum mt_status mtx_sink_put(struct mt_sink *k, const struct mt_sink_doc *d,
                            struct mt_error *err)
{
    struct mt_buf *b = &k->blk;
    size_t len = b->len;
    char *js;
    enum mt_status st = MT_OK;

    if (d->fields)
        return added(k, put_direct(k, d), d->id, len, err);
    js = k->pp->store ? (d->meta ? dump(d->meta) : NULL) : doc_line(d);
    if (!js && (d->meta || !k->pp->store))
        return mt_fail(err, MT_ENOMEM, "record %s: out of memory", d->id);
    if (!k->pp->store) {
        st = mtx_buf_putc(b, OP_LINE);
        if (st == MT_OK)
            st = put_str(b, js, strlen(js));
    } else {
        st = mtx_buf_putc(b, OP_DOC);
        if (st == MT_OK)
            st = put_str(b, d->id, strlen(d->id));
        if (st == MT_OK)
            st = put_str(b, d->title, d->title ? strlen(d->title) : 0);
        if (st == MT_OK)
            st = put_str(b, d->text, d->text_len);
        if (st == MT_OK)
            st = put_str(b, js, js ? strlen(js) : 0);
    }
    mt_free(js); /* jansson allocates through mt_malloc (import.c) */
    return added(k, st, d->id, len, err);
}

enum mt_status mtx_sink_source(struct mt_sink *k, const char *source,
                               struct mt_error *err)
{
    size_t len = k->blk.len;
    enum mt_status st = mtx_buf_putc(&k->blk, OP_SOURCE);

    if (st == MT_OK)
        st = put_str(&k->blk, source, strlen(source));
    return added(k, st, source, len, err);
}

enum mt_status mtx_sink_delete(struct mt_sink *k, const char *id,
                               struct mt_error *err)
{
    size_t len = k->blk.len;
    enum mt_status st = mtx_buf_putc(&k->blk, OP_DEL);

    if (st == MT_OK)
        st = put_str(&k->blk, id, strlen(id));
    return added(k, st, id, len, err);
}

int mtx_input_error(enum mt_status st)
{
    return st == MT_EPARSE || st == MT_ELIMIT || st == MT_EIO ||
           st == MT_EUNSUPPORTED;
}

enum mt_status mtx_sink_skip(struct mt_sink *k, struct mt_error *err)
{
    size_t len = k->blk.len;
    enum mt_status st = err->status;

    if (k->pp->p->strict || !mtx_input_error(st))
        return st;
    st = mtx_buf_putc(&k->blk, OP_SKIP);
    if (st == MT_OK)
        st = put_str(&k->blk, err->msg, strlen(err->msg));
    if (st != MT_OK) {
        undo(&k->blk, len);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    err->status = MT_OK;
    err->msg[0] = '\0';
    return k->blk.len >= BLOCK_BYTES ? hand_over(k, err) : MT_OK;
}

void mtx_sink_record(struct mt_sink *k, int skipped)
{
    k->records++;
    k->skipped += skipped != 0;
    k->counted = 1;
}

void mtx_sink_read(struct mt_sink *k, uint64_t bytes_in_file)
{
    k->read = bytes_in_file;
    k->counted = 1;
}

enum mt_status mtx_sink_query(struct mt_sink *k, const char *id,
                              const char *query, const char *doc_id,
                              json_t *extra, struct mt_error *err)
{
    json_t *o;
    char *line = NULL;
    size_t len;
    enum mt_status st = MT_ENOMEM;

    if (!k->pp->p->queries_out)
        return MT_OK;
    o = json_pack("{s:s,s:s,s:[s]}", "id", id, "query", query, "relevant",
                  doc_id);
    if (o && (!extra || json_object_update(o, extra) == 0))
        line = dump(o);
    json_decref(o);
    if (!line)
        return mt_fail(err, MT_ENOMEM, "query %s: out of memory", id);
    len = k->blk.len;
    st = mtx_buf_putc(&k->blk, OP_QUERY);
    if (st == MT_OK)
        st = put_str(&k->blk, line, strlen(line));
    mt_free(line);
    return added(k, st, id, len, err);
}

/* ==== Parser threads ==== */

static void parse_one(struct pipe *pp, size_t i)
{
    struct slot *sl = &pp->slots[i];
    struct mt_sink k;
    struct mt_import_ctx c = {&k, pp->p};
    struct mt_error err = {MT_OK, ""};
    struct mt_error after = {MT_OK, ""};
    enum mt_status st = MT_OK;
    enum mt_status fin;

    memset(&k, 0, sizeof k);
    k.pp = pp;
    k.slot = sl;
    k.blk = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    if (!sl->skip)
        st = pp->fn(&c, pp->files[i].path, &err);
    /* After an error too: the records read before it are written when the
     * file is skipped (the block holds whole operations only). */
    fin = hand_over(&k, st == MT_OK ? &err : &after);
    st = st == MT_OK ? fin : st;
    mtx_buf_free(&k.blk);
    pthread_mutex_lock(&pp->mu);
    sl->done = 1;
    sl->st = st;
    sl->err = err;
    pthread_cond_signal(&pp->to_writer);
    pthread_mutex_unlock(&pp->mu);
}

/* A pool task: takes the next file while the writer is near enough. */
static void parser(void *arg)
{
    struct pipe *pp = arg;
    size_t i;

    for (;;) {
        pthread_mutex_lock(&pp->mu);
        while (!pp->stop && pp->next < pp->n &&
               pp->next >= pp->writing + pp->window)
            pthread_cond_wait(&pp->to_parsers, &pp->mu);
        if (pp->stop || pp->next >= pp->n) {
            pthread_mutex_unlock(&pp->mu);
            return;
        }
        i = pp->next++;
        pthread_mutex_unlock(&pp->mu);
        parse_one(pp, i);
    }
}

/* ==== Writer ==== */

static const char *get_str(const char **at, size_t *n)
{
    uint32_t len;
    const char *s;

    memcpy(&len, *at, sizeof len);
    *at += sizeof len;
    if (len == NO_STR)
        return NULL;
    s = *at;
    *at += (size_t)len + 1;
    *n = len;
    return s;
}

static uint64_t get_u64(const char **at)
{
    uint64_t v;

    memcpy(&v, *at, sizeof v);
    *at += sizeof v;
    return v;
}

static enum mt_status apply_doc(struct mtx_out *out, const char **at,
                                struct mt_error *err)
{
    struct mt_doc d;
    size_t n = 0;

    d.ext_id = get_str(at, &n);
    d.title = get_str(at, &n);
    d.text = get_str(at, &d.text_len);
    d.metadata = get_str(at, &n);
    return mtx_out_put_doc(out, &d, err);
}

/* Applies one block's operations to the output. */
static enum mt_status apply(struct mtx_out *out, const struct mt_buf *b,
                            struct mt_error *err)
{
    const char *at = b->data;
    const char *end = b->data + b->len;
    const char *s;
    enum mt_status st = MT_OK;
    size_t n = 0;

    while (st == MT_OK && at < end) {
        switch (*at++) {
        case OP_DOC:
            st = apply_doc(out, &at, err);
            break;
        case OP_LINE:
            s = get_str(&at, &n);
            st = mtx_out_put_line(out, s, n, err);
            break;
        case OP_DEL:
            st = mtx_out_delete(out, get_str(&at, &n), err);
            break;
        case OP_QUERY:
            s = get_str(&at, &n);
            st = mtx_out_query_line(out, s, n, err);
            break;
        case OP_SKIP:
            mtx_out_skip(out, MT_EPARSE, get_str(&at, &n), 0);
            break;
        case OP_SOURCE:
            st = mtx_out_source(out, get_str(&at, &n), err);
            break;
        case OP_COUNT: {
            uint64_t records = get_u64(&at);
            uint64_t skipped = get_u64(&at);

            mtx_out_count(out, records, skipped);
            mtx_out_read(out, get_u64(&at));
            break;
        }
        default:
            st = mt_fail(err, MT_EINTERNAL, "import pipeline: bad block");
        }
    }
    return st;
}

/* The next block of file 'sl', waiting for it; NULL when the parser has
 * finished and every block was taken. */
static struct block *take(struct pipe *pp, struct slot *sl)
{
    struct block *bl;

    pthread_mutex_lock(&pp->mu);
    while (!sl->head && !sl->done)
        pthread_cond_wait(&pp->to_writer, &pp->mu);
    bl = sl->head;
    if (bl) {
        sl->head = bl->next;
        if (!sl->head)
            sl->tail = NULL;
        sl->bytes -= bl->b.len;
        pthread_cond_broadcast(&pp->to_parsers);
    }
    pthread_mutex_unlock(&pp->mu);
    return bl;
}

static void block_free(struct block *bl)
{
    mtx_buf_free(&bl->b);
    mt_free(bl);
}

static void move_to(struct pipe *pp, size_t i)
{
    pthread_mutex_lock(&pp->mu);
    pp->writing = i;
    pthread_cond_broadcast(&pp->to_parsers);
    pthread_mutex_unlock(&pp->mu);
}

/* A file whose parser failed: an input error skips it (named, counted, what
 * was read before the error kept) unless --strict; others end the run. */
static enum mt_status file_failed(struct pipe *pp, struct mtx_out *out,
                                  const struct slot *sl, struct mt_error *err)
{
    if (pp->p->strict || !mtx_input_error(sl->st)) {
        *err = sl->err;
        return sl->st;
    }
    mtx_out_skip(out, sl->st, sl->err.msg, 1);
    return mtx_out_file_partial(out, err);
}

/* Writes file i as its parser reads it. */
static enum mt_status write_file(struct pipe *pp, struct mtx_out *out, size_t i,
                                 struct mt_error *err)
{
    const struct mtx_in_file *f = &pp->files[i];
    struct slot *sl = &pp->slots[i];
    struct block *bl;
    int skip = 0;
    enum mt_status st;

    move_to(pp, i);
    st = mtx_out_file_begin(out, f->path, f->source, &skip, err);
    if (st == MT_OK && sl->skip && !skip)
        st = mt_fail(err, MT_EIO,
                     "%s: changed while being imported; run the import again",
                     f->path);
    /* A file given twice is read twice but written once (skip). */
    while (st == MT_OK && (bl = take(pp, sl)) != NULL) {
        if (!skip)
            st = apply(out, &bl->b, err);
        block_free(bl);
        if (st != MT_OK && st != MT_EINTERNAL)
            mt_error_prefix(err, "%s", f->path);
    }
    if (st != MT_OK)
        return st;
    if (sl->st != MT_OK)
        return file_failed(pp, out, sl, err);
    return skip ? MT_OK : mtx_out_file_end(out, err);
}

/* Marks the files an earlier run took in whole, so they are not parsed. */
static enum mt_status find_done(struct pipe *pp, struct mtx_out *out,
                                struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < pp->n; i++)
        st = mtx_out_file_imported(out, pp->files[i].path, pp->files[i].source,
                                   &pp->slots[i].skip, err);
    return st;
}

static size_t thread_count(const struct mt_import_params *p, size_t files)
{
    size_t n = p->threads ? p->threads : mtx_online_cpus();

    n = n > THREADS_MAX ? THREADS_MAX : n;
    return n > files ? files : n;
}

static enum mt_status start(struct pipe *pp, struct mt_pool **pool,
                            struct mt_error *err)
{
    size_t n = thread_count(pp->p, pp->n);
    size_t i;

    pp->window = n + 1;
    if (mtx_pool_new(n, pool) != MT_OK)
        return mt_fail(err, MT_EINTERNAL, "cannot start %zu import threads", n);
    for (i = 0; i < n; i++)
        if (mtx_pool_submit(*pool, parser, pp) != MT_OK)
            break;
    return i > 0 ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

static enum mt_status run(struct pipe *pp, struct mtx_out *out,
                          struct mt_error *err)
{
    struct mt_pool *pool = NULL;
    enum mt_status st = find_done(pp, out, err);
    size_t i;

    if (st == MT_OK)
        st = start(pp, &pool, err);
    for (i = 0; st == MT_OK && i < pp->n; i++)
        st = write_file(pp, out, i, err);
    pthread_mutex_lock(&pp->mu);
    pp->stop = st != MT_OK;
    pthread_cond_broadcast(&pp->to_parsers);
    pthread_mutex_unlock(&pp->mu);
    mtx_pool_free(pool);
    return st;
}

enum mt_status mtx_pipe_run(mtx_import_fn fn, const struct mtx_in_file *files,
                            size_t n, const struct mt_import_params *p,
                            struct mtx_out *out, struct mt_error *err)
{
    struct pipe pp;
    enum mt_status st;
    size_t i;

    memset(&pp, 0, sizeof pp);
    pp.fn = fn;
    pp.files = files;
    pp.n = n;
    pp.p = p;
    pp.store = p->store != NULL;
    pp.slots = mt_calloc(n, sizeof *pp.slots);
    if (!pp.slots)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    pthread_mutex_init(&pp.mu, NULL);
    pthread_cond_init(&pp.to_writer, NULL);
    pthread_cond_init(&pp.to_parsers, NULL);
    st = run(&pp, out, err);
    for (i = 0; i < n; i++) {
        struct block *bl;

        while ((bl = pp.slots[i].head) != NULL) {
            pp.slots[i].head = bl->next;
            block_free(bl);
        }
    }
    pthread_cond_destroy(&pp.to_parsers);
    pthread_cond_destroy(&pp.to_writer);
    pthread_mutex_destroy(&pp.mu);
    mt_free(pp.slots);
    return st;
}
