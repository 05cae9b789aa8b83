/* Streaming XML for the importers: expat fed in 64 KiB blocks from zlib's
 * gzread (which reads plain files as they are), with the element path kept
 * and character data sent to one capture buffer. Memory is bounded by the
 * deepest path and the largest captured field, not by the file. */
#include <errno.h>
#include <string.h>

#include <expat.h>
#include <zlib.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define XML_BLOCK (64 * 1024)
#define XML_PATH_MAX 2048
#define XML_DEPTH_MAX 256

struct mt_xml {
    XML_Parser p;
    const struct mt_xml_fns *fns;
    void *user;
    const char *file;
    gzFile gz;
    struct mt_buf *cap;
    char path[XML_PATH_MAX];
    size_t len;               /* strlen(path) */
    size_t at[XML_DEPTH_MAX]; /* path length before each element */
    size_t depth;
    enum mt_status st; /* first failure inside a callback */
    struct mt_error err;
};

static void stop(struct mt_xml *x, enum mt_status st)
{
    if (x->st == MT_OK)
        x->st = st;
    XML_StopParser(x->p, XML_FALSE);
}

static int push(struct mt_xml *x, const char *name)
{
    size_t n = strlen(name);

    if (x->depth >= XML_DEPTH_MAX || x->len + n + 2 > XML_PATH_MAX)
        return -1;
    x->at[x->depth++] = x->len;
    if (x->len)
        x->path[x->len++] = '/';
    memcpy(x->path + x->len, name, n + 1);
    x->len += n;
    return 0;
}

static void XMLCALL on_start(void *u, const XML_Char *name,
                             const XML_Char **attrs)
{
    struct mt_xml *x = u;
    enum mt_status st = MT_OK;

    if (push(x, name) < 0) {
        mt_fail(&x->err, MT_ELIMIT, "elements nested too deep");
        stop(x, MT_ELIMIT);
        return;
    }
    if (x->fns->start)
        st = x->fns->start(x, name, attrs, x->user);
    if (st != MT_OK)
        stop(x, st);
}

static void XMLCALL on_end(void *u, const XML_Char *name)
{
    struct mt_xml *x = u;
    enum mt_status st = MT_OK;

    if (x->fns->end)
        st = x->fns->end(x, name, x->user);
    x->len = x->at[--x->depth];
    x->path[x->len] = '\0';
    if (st != MT_OK)
        stop(x, st);
}

static void XMLCALL on_text(void *u, const XML_Char *s, int n)
{
    struct mt_xml *x = u;
    enum mt_status st;

    if (!x->cap)
        return;
    st = mtx_buf_append(x->cap, s, (size_t)n);
    if (st != MT_OK) {
        mt_fail(&x->err, st, "a field is over %zu bytes", x->cap->max - 1);
        stop(x, st);
    }
}

static void *XMLCALL xml_realloc(void *p, size_t n)
{
    return mt_realloc(p, n);
}

static const XML_Memory_Handling_Suite xml_mem = {mt_malloc, xml_realloc,
                                                  mt_free};

/* Reads one block; *n is 0 at the end. A truncated gzip stream is an
 * error here, where a plain read would just stop early. */
static enum mt_status read_block(struct mt_xml *x, char *buf, int *n,
                                 struct mt_error *err)
{
    int zerr = Z_OK;
    const char *msg;

    *n = gzread(x->gz, buf, XML_BLOCK);
    if (*n > 0)
        return MT_OK;
    msg = gzerror(x->gz, &zerr);
    if (*n == 0 && zerr == Z_OK)
        return MT_OK;
    if (zerr == Z_BUF_ERROR)
        return mt_fail(err, MT_EPARSE,
                       "%s:%lu: gzip data ends early (truncated file)", x->file,
                       (unsigned long)XML_GetCurrentLineNumber(x->p));
    return mt_fail(err, zerr == Z_ERRNO ? MT_EIO : MT_EPARSE, "%s: %s", x->file,
                   zerr == Z_ERRNO ? strerror(errno) : msg);
}

static enum mt_status feed(struct mt_xml *x, const char *buf, int n,
                           struct mt_error *err)
{
    unsigned long line;

    if (XML_Parse(x->p, buf, n, n == 0) != XML_STATUS_ERROR)
        return MT_OK;
    line = (unsigned long)XML_GetCurrentLineNumber(x->p);
    if (x->st != MT_OK) {
        *err = x->err;
        return mt_error_prefix(err, "%s:%lu", x->file, line);
    }
    return mt_fail(err, MT_EPARSE, "%s:%lu: malformed XML: %s", x->file, line,
                   XML_ErrorString(XML_GetErrorCode(x->p)));
}

static enum mt_status run(struct mt_xml *x, struct mt_error *err)
{
    char *buf = mt_malloc(XML_BLOCK);
    enum mt_status st = MT_OK;
    int n = 1;

    if (!buf)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", x->file);
    while (st == MT_OK && n > 0) {
        st = read_block(x, buf, &n, err);
        if (st == MT_OK)
            st = feed(x, buf, n, err);
    }
    mt_free(buf);
    return st;
}

enum mt_status mtx_xml_parse(const char *path, const struct mt_xml_fns *fns,
                             void *user, struct mt_error *err)
{
    struct mt_xml x;
    enum mt_status st;

    memset(&x, 0, sizeof x);
    x.fns = fns;
    x.user = user;
    x.file = path;
    x.gz = gzopen(path, "rb");
    if (!x.gz)
        return mt_fail(err, MT_EIO, "%s: cannot open: %s", path,
                       strerror(errno));
    gzbuffer(x.gz, XML_BLOCK);
    x.p = XML_ParserCreate_MM(NULL, &xml_mem, NULL);
    if (!x.p) {
        gzclose(x.gz);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    }
    XML_SetUserData(x.p, &x);
    XML_SetElementHandler(x.p, on_start, on_end);
    XML_SetCharacterDataHandler(x.p, on_text);
    st = run(&x, err);
    XML_ParserFree(x.p);
    gzclose(x.gz);
    return st;
}

void mtx_xml_capture(struct mt_xml *x, struct mt_buf *b)
{
    x->cap = b;
}

struct mt_buf *mtx_xml_captured(const struct mt_xml *x)
{
    return x->cap;
}

size_t mtx_xml_depth(const struct mt_xml *x)
{
    return x->depth;
}

int mtx_xml_at(const struct mt_xml *x, const char *suffix)
{
    size_t n = strlen(suffix);

    if (n > x->len || strcmp(x->path + x->len - n, suffix) != 0)
        return 0;
    return n == x->len || x->path[x->len - n - 1] == '/';
}

struct mt_error *mtx_xml_error(struct mt_xml *x)
{
    return &x->err;
}

uint64_t mtx_xml_offset(const struct mt_xml *x)
{
    return (uint64_t)gzoffset(x->gz);
}

const char *mtx_xml_attr(const char **attrs, const char *name)
{
    size_t i;

    for (i = 0; attrs && attrs[i]; i += 2)
        if (strcmp(attrs[i], name) == 0)
            return attrs[i + 1];
    return NULL;
}
