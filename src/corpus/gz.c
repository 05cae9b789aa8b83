/* Input files for the XML importers, gzip or plain, told apart by the
 * gzip magic as zlib's gzread tells them (a plain file is read as it is;
 * gzip members one after another are one stream; bytes after the last
 * member that start no member are ignored). gzip is inflated by Intel's
 * ISA-L (igzip, Debian libisal-dev), which checks each member's CRC-32
 * and length as zlib does: zlib's inflate and crc32 were a quarter of a
 * PubMed import's instructions, ISA-L takes about a third of that
 * (BENCHMARKS.md). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/igzip_lib.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define GZ_IN ((size_t)256 << 10) /* compressed bytes read at a time */

struct mtx_gz {
    int fd;
    int gzip;   /* else the file is read as it is */
    int in_eof; /* read() said end of file (or sniff read it all) */
    int done;   /* the last member ended: nothing more to read */
    unsigned char *in;
    size_t in_len;    /* bytes in 'in' (next_in/avail_in point into it) */
    uint64_t in_read; /* compressed bytes read from the file */
    struct inflate_state st;
};

static enum mt_status fill(struct mtx_gz *g, struct mt_error *err)
{
    ssize_t r;

    do
        r = read(g->fd, g->in, GZ_IN);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return mt_fail(err, MT_EIO, "read failed: %s", strerror(errno));
    g->in_len = (size_t)r;
    g->in_read += (uint64_t)r;
    g->in_eof = r == 0;
    g->st.next_in = g->in;
    g->st.avail_in = (uint32_t)r;
    return MT_OK;
}

/* After a member: are the next two input bytes the gzip magic? Reads on
 * when fewer are left (a member may end right before a read's end). */
static enum mt_status magic_next(struct mtx_gz *g, int *yes,
                                 struct mt_error *err)
{
    unsigned char first = 0;
    size_t have = g->st.avail_in;
    enum mt_status st;

    *yes = 0;
    if (have >= 2) {
        *yes = g->st.next_in[0] == 0x1f && g->st.next_in[1] == 0x8b;
        return MT_OK;
    }
    if (g->in_eof)
        return MT_OK; /* a byte or none left: trailing garbage */
    if (have == 1)
        first = g->st.next_in[0];
    st = fill(g, err);
    if (st != MT_OK || g->st.avail_in == 0)
        return st;
    if (have == 0)
        return magic_next(g, yes, err);
    *yes = first == 0x1f && g->st.next_in[0] == 0x8b;
    if (*yes) { /* the magic's first byte was in the old input: back in */
        memmove(g->in + 1, g->st.next_in, g->st.avail_in);
        g->in[0] = first;
        g->st.next_in = g->in;
        g->st.avail_in++;
    }
    return MT_OK;
}

/* Reads the first bytes (two at least, unless the file is shorter): gzip
 * when they are its magic. */
static enum mt_status sniff(struct mtx_gz *g, struct mt_error *err)
{
    size_t have = 0;
    ssize_t r;

    while (have < 2) {
        do
            r = read(g->fd, g->in + have, GZ_IN - have);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            return mt_fail(err, MT_EIO, "read failed: %s", strerror(errno));
        if (r == 0)
            break;
        have += (size_t)r;
    }
    g->in_eof = have < 2;
    g->in_read = have;
    g->st.next_in = g->in;
    g->st.avail_in = (uint32_t)have;
    g->gzip = have >= 2 && g->in[0] == 0x1f && g->in[1] == 0x8b;
    return MT_OK;
}

static void member_start(struct mtx_gz *g)
{
    unsigned char *next = g->st.next_in;
    uint32_t avail = g->st.avail_in;

    isal_inflate_init(&g->st);
    g->st.crc_flag = ISAL_GZIP; /* header parsed, CRC and length checked */
    g->st.next_in = next;
    g->st.avail_in = avail;
}

static const char *why(int ret)
{
    switch (ret) {
    case ISAL_INCORRECT_CHECKSUM:
        return "gzip data is corrupt (its CRC or length check fails)";
    case ISAL_INVALID_WRAPPER:
        return "gzip data is corrupt (bad gzip header)";
    case ISAL_NEED_DICT:
        return "gzip data needs a preset dictionary";
    default:
        return "gzip data is corrupt (invalid deflate data)";
    }
}

enum mt_status mtx_gz_open(const char *path, struct mtx_gz **out,
                           struct mt_error *err)
{
    struct mtx_gz *g = mt_calloc(1, sizeof *g);
    enum mt_status st;

    if (!g)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    g->in = mt_malloc(GZ_IN + 1); /* + a magic byte put back */
    g->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!g->in || g->fd < 0) {
        st = g->in ? mt_fail(err, MT_EIO, "%s: cannot open: %s", path,
                             strerror(errno))
                   : mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
        mtx_gz_close(g);
        return st;
    }
    st = sniff(g, err);
    if (st != MT_OK) {
        mt_error_prefix(err, "%s", path);
        mtx_gz_close(g);
        return st;
    }
    if (g->gzip)
        member_start(g);
    *out = g;
    return MT_OK;
}

/* A plain file: what is left of the first read, then read() itself. */
static enum mt_status read_plain(struct mtx_gz *g, char *buf, size_t n,
                                 size_t *got, struct mt_error *err)
{
    size_t take = g->st.avail_in < n ? g->st.avail_in : n;
    ssize_t r;

    if (take || g->in_eof) {
        memcpy(buf, g->st.next_in, take);
        g->st.next_in += take;
        g->st.avail_in -= (uint32_t)take;
        *got = take;
        return MT_OK;
    }
    do
        r = read(g->fd, buf, n);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return mt_fail(err, MT_EIO, "read failed: %s", strerror(errno));
    g->in_read += (uint64_t)r;
    g->in_eof = r == 0;
    *got = (size_t)r;
    return MT_OK;
}

/* After a member's end: another member, or the end of the stream. */
static enum mt_status next_member(struct mtx_gz *g, struct mt_error *err)
{
    int more = 0;
    enum mt_status st = magic_next(g, &more, err);

    if (st == MT_OK && more)
        member_start(g);
    g->done = st == MT_OK && !more;
    return st;
}

enum mt_status mtx_gz_read(struct mtx_gz *g, char *buf, size_t n, size_t *got,
                           struct mt_error *err)
{
    enum mt_status st = MT_OK;
    int ret;

    *got = 0;
    if (!g->gzip)
        return read_plain(g, buf, n, got, err);
    n = n > UINT32_MAX ? UINT32_MAX : n;
    while (st == MT_OK && *got == 0 && !g->done && n > 0) {
        if (g->st.block_state == ISAL_BLOCK_FINISH) {
            st = next_member(g, err);
            continue;
        }
        if (g->st.avail_in == 0 && !g->in_eof)
            st = fill(g, err);
        if (st != MT_OK)
            break;
        g->st.next_out = (uint8_t *)buf;
        g->st.avail_out = (uint32_t)n;
        ret = isal_inflate(&g->st);
        if (ret < 0)
            return mt_fail(err, MT_EPARSE, "%s", why(ret));
        *got = n - g->st.avail_out;
        if (*got == 0 && g->st.avail_in == 0 && g->in_eof &&
            g->st.block_state != ISAL_BLOCK_FINISH)
            return mt_fail(err, MT_EPARSE,
                           "gzip data ends early (truncated file)");
    }
    return st;
}

uint64_t mtx_gz_offset(const struct mtx_gz *g)
{
    return g->in_read - g->st.avail_in;
}

void mtx_gz_close(struct mtx_gz *g)
{
    if (!g)
        return;
    if (g->fd >= 0)
        close(g->fd);
    mt_free(g->in);
    mt_free(g);
}
