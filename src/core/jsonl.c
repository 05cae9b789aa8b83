/* JSONL reader: splits block-read input into bounded lines and parses each
 * non-blank line with jansson's json_loadb. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/jsonl.h"
#include "medtrust/core.h"

#define JSONL_BLOCK ((size_t)64 * 1024)

struct mt_jsonl {
    char *name;
    FILE *fp;
    int own_fp;
    char *blk; /* JSONL_BLOCK bytes */
    size_t blk_len;
    size_t blk_pos;
    int at_eof;
    struct mt_jsonl_params params;
    struct mt_buf line;
    size_t next_line; /* number of the line read next */
    size_t obj_line;  /* line of the object returned last */
    size_t skipped;
    json_t *cur;
    enum mt_status failed; /* sticky */
    struct mt_error ferr;
};

static pthread_once_t alloc_once = PTHREAD_ONCE_INIT;

/* jansson 2.14 does not reliably report a failed allocation as
 * json_error_out_of_memory (it often yields an empty or misleading parse
 * error), so the allocator itself notes failures on this thread. */
static _Thread_local int json_alloc_failed;

static void *json_alloc(size_t n)
{
    void *p = mt_malloc(n);

    if (!p)
        json_alloc_failed = 1;
    return p;
}

static void set_alloc(void)
{
    json_set_alloc_funcs(json_alloc, mt_free);
}

void mtx_jsonl_init_alloc(void)
{
    pthread_once(&alloc_once, set_alloc);
}

void mtx_json_text_free(char *txt)
{
    json_malloc_t m;
    json_free_t f;

    if (!txt)
        return;
    json_get_alloc_funcs(&m, &f);
    f(txt);
}

struct mt_jsonl_params mtx_jsonl_default_params(void)
{
    struct mt_jsonl_params p = {0, (size_t)64 << 20, NULL, NULL};

    return p;
}

/* ==== Errors ==== */

static enum mt_status fail_line(struct mt_jsonl *r, struct mt_error *err,
                                enum mt_status st, size_t line, const char *why)
{
    mt_fail(&r->ferr, st, "%s:%zu: %s", r->name, line, why);
    r->failed = st;
    if (err)
        *err = r->ferr;
    return st;
}

/* ==== Lines ==== */

/* Loads the next block; returns 1, 0 at end of input, -1 on read error. */
static int refill(struct mt_jsonl *r)
{
    size_t n;

    if (r->at_eof)
        return 0;
    n = fread(r->blk, 1, JSONL_BLOCK, r->fp);
    r->blk_pos = 0;
    r->blk_len = n;
    if (n > 0)
        return 1;
    r->at_eof = 1;
    return ferror(r->fp) ? -1 : 0;
}

/* Appends up to n bytes of the current line unless it is already too long.
 * The buffer may hold max_line bytes plus a CR that is stripped later. */
static enum mt_status take(struct mt_jsonl *r, const char *p, size_t n,
                           int *too_long)
{
    size_t room = r->line.max - 1 - r->line.len; /* line.max >= 2 */

    if (*too_long)
        return MT_OK;
    if (n > room) {
        *too_long = 1;
        return MT_OK;
    }
    return mtx_buf_append(&r->line, p, n);
}

/* Reads one line (without its line end) into r->line. *got is 0 at end of
 * input; *too_long is set when the line was longer than max_line, in which
 * case it was consumed but not kept. */
static enum mt_status read_line(struct mt_jsonl *r, int *got, int *too_long)
{
    size_t seen = 0;
    enum mt_status st;

    mtx_buf_reset(&r->line);
    *got = 0;
    *too_long = 0;
    for (;;) {
        const char *p;
        const char *nl;
        size_t n;

        if (r->blk_pos == r->blk_len) {
            int rc = refill(r);
            if (rc < 0)
                return MT_EIO;
            if (rc == 0)
                break;
        }
        p = r->blk + r->blk_pos;
        nl = memchr(p, '\n', r->blk_len - r->blk_pos);
        n = nl ? (size_t)(nl - p) : r->blk_len - r->blk_pos;
        st = take(r, p, n, too_long);
        if (st != MT_OK)
            return st;
        seen += n;
        r->blk_pos += n + (nl ? 1 : 0);
        if (nl) {
            seen++;
            break;
        }
    }
    *got = seen > 0;
    if (r->line.len && r->line.data[r->line.len - 1] == '\r')
        r->line.data[--r->line.len] = '\0';
    if (r->line.len > r->params.max_line)
        *too_long = 1;
    return MT_OK;
}

static int is_blank(const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (p[i] != ' ' && p[i] != '\t')
            return 0;
    }
    return 1;
}

/* ==== Parsing ==== */

/* Parses the line held in r->line. Returns MT_OK with *obj set, MT_EPARSE
 * with 'why' filled for a bad line, or MT_ENOMEM. */
static enum mt_status parse_line(struct mt_jsonl *r, size_t lineno,
                                 json_t **obj, char *why, size_t why_n)
{
    const char *p = r->line.data ? r->line.data : "";
    size_t n = r->line.len;
    json_error_t jerr;
    json_t *v;

    if (lineno == 1 && n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
        p += 3;
        n -= 3;
    }
    *obj = NULL;
    if (is_blank(p, n))
        return MT_OK;
    json_alloc_failed = 0;
    v = json_loadb(p, n, JSON_DECODE_ANY, &jerr);
    if (!v && (json_alloc_failed ||
               json_error_code(&jerr) == json_error_out_of_memory))
        return MT_ENOMEM;
    if (!v) {
        snprintf(why, why_n, "invalid JSON at column %d: %s", jerr.column,
                 jerr.text);
        return MT_EPARSE;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        snprintf(why, why_n, "not a JSON object");
        return MT_EPARSE;
    }
    *obj = v;
    return MT_OK;
}

/* Handles a bad line: skipped and counted with skip_bad, else an error. */
static enum mt_status bad_line(struct mt_jsonl *r, struct mt_error *err,
                               enum mt_status st, size_t lineno,
                               const char *why)
{
    struct mt_error e;

    if (!r->params.skip_bad)
        return fail_line(r, err, st, lineno, why);
    r->skipped++;
    if (!r->params.on_bad)
        return MT_OK;
    mt_fail(&e, st, "%s:%zu: %s", r->name, lineno, why);
    st = r->params.on_bad(&e, r->params.bad_user);
    if (st != MT_OK) {
        r->ferr = e;
        r->failed = st;
        if (err)
            *err = e;
    }
    return st;
}

/* Reads and parses one line into r->cur (left NULL for a blank or skipped
 * line). Sets *eof at end of input. */
static enum mt_status next_line(struct mt_jsonl *r, struct mt_error *err,
                                int *eof)
{
    char why[MT_ERROR_MSG_MAX / 2];
    size_t lineno = r->next_line;
    enum mt_status st;
    int got;
    int too_long;

    st = read_line(r, &got, &too_long);
    if (st != MT_OK)
        return fail_line(r, err, st, lineno, mt_status_str(st));
    *eof = !got;
    if (!got)
        return MT_OK;
    r->next_line++;
    if (too_long) {
        snprintf(why, sizeof why, "line longer than %zu bytes",
                 r->params.max_line);
        return bad_line(r, err, MT_ELIMIT, lineno, why);
    }
    st = parse_line(r, lineno, &r->cur, why, sizeof why);
    if (st == MT_ENOMEM)
        return fail_line(r, err, st, lineno, mt_status_str(st));
    if (st == MT_EPARSE)
        return bad_line(r, err, st, lineno, why);
    if (r->cur)
        r->obj_line = lineno;
    return MT_OK;
}

enum mt_status mtx_jsonl_next(struct mt_jsonl *r, json_t **obj,
                              struct mt_error *err)
{
    enum mt_status st;
    int eof = 0;

    *obj = NULL;
    json_decref(r->cur);
    r->cur = NULL;
    if (r->failed) {
        if (err)
            *err = r->ferr;
        return r->failed;
    }
    while (!r->cur && !eof) {
        st = next_line(r, err, &eof);
        if (st != MT_OK)
            return st;
    }
    *obj = r->cur;
    return MT_OK;
}

/* ==== Open and close ==== */

enum mt_status mtx_jsonl_open(const char *path,
                              const struct mt_jsonl_params *params,
                              struct mt_jsonl **out, struct mt_error *err)
{
    struct mt_jsonl *r;
    enum mt_status st;
    int is_stdin;

    if (!path || !out)
        return mt_fail(err, MT_EINVAL, "mtx_jsonl_open: bad argument");
    if (params && params->max_line == 0)
        return mt_fail(err, MT_EINVAL, "%s: max_line is 0", path);
    mtx_jsonl_init_alloc();
    r = mt_calloc(1, sizeof *r);
    if (!r)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    r->params = params ? *params : mtx_jsonl_default_params();
    r->next_line = 1;
    /* max_line bytes, a CR and the NUL; saturate on overflow. */
    r->line = MT_BUF_INIT(
        r->params.max_line > SIZE_MAX - 2 ? SIZE_MAX : r->params.max_line + 2);
    r->name = mt_strdup(path);
    r->blk = mt_malloc(JSONL_BLOCK);
    if (!r->name || !r->blk) {
        st = mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    is_stdin = strcmp(path, "-") == 0;
    r->fp = is_stdin ? stdin : fopen(path, "rb");
    r->own_fp = !is_stdin;
    if (!r->fp) {
        st = mt_fail(err, MT_EIO, "%s: cannot open", path);
        goto fail;
    }
    *out = r;
    return MT_OK;
fail:
    mtx_jsonl_close(r);
    return st;
}

size_t mtx_jsonl_line(const struct mt_jsonl *r)
{
    return r->obj_line;
}

size_t mtx_jsonl_skipped(const struct mt_jsonl *r)
{
    return r->skipped;
}

void mtx_jsonl_close(struct mt_jsonl *r)
{
    if (!r)
        return;
    json_decref(r->cur);
    if (r->fp && r->own_fp)
        fclose(r->fp);
    mt_free(r->blk);
    mtx_buf_free(&r->line);
    mt_free(r->name);
    mt_free(r);
}
