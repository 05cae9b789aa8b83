/* Vector and graph files: sections in the segment container (segment.c,
 * CRC32C), and the reader for files written before it (a 128-byte header
 * and a 64-bit hash). Layouts in vec.h, "Files". */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/segment.h"
#include "index/vec.h"
#include "medtrust/core.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the vector file formats assume a little-endian host"
#endif

/* The open checks the CRC of every section but the vectors themselves
 * and the kind's lazy ones (mtx_vec_kind.lazy): the metadata, the scales
 * and a graph's tables, which the open reads. The codes, residuals and
 * floats and a graph's links, all but a few MB of a 25M-abstract index's
 * 16.9 GB of vector files, are left to mtx_vec_file_check() (`medtrust
 * stats --check`): reading them before each first search costs minutes
 * and evicts what searches need. Any bytes there are safe to search
 * (every code is a code; a graph's blocks are read defensively, hnsw.c
 * read_links), so damage gives wrong distances, never a wrong read;
 * Lucene leaves its per-file checksums to CheckIndex the same way. Fuzz
 * builds skip the CRCs at open altogether so that mutations reach the
 * structural checks behind them (tests/fuzz/fuzz_vec.c). */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CHECK_AT_OPEN 0
#else
#define CHECK_AT_OPEN 1
#endif

/* ==== Files written before: header and hash ==== */

/* The old file header (little-endian, 128 bytes). The payload is the
 * arrays in order, each padded with zeros to a multiple of 64 bytes.
 * checksum = hash(header with checksum 0, seed = hash(payload, seed 0)). */
#define OLD_HDR_SIZE 128u
#define OLD_VERSION 1u
struct old_hdr {
    char magic[8];
    uint32_t version;
    uint32_t dims;
    uint64_t count;
    uint64_t payload_len;
    uint64_t checksum;
    uint64_t aux[11]; /* vector flags, then the graph's fields */
};
_Static_assert(sizeof(struct old_hdr) == OLD_HDR_SIZE,
               "old vector file header must be 128 bytes");

/* 64-bit checksum over whole 32-byte blocks (4 lanes, xxh64-style
 * rounds), as the old writer computed it. */
struct old_hash {
    uint64_t v[4];
    uint64_t len;
};

#define H_P1 0x9E3779B185EBCA87ull
#define H_P2 0xC2B2AE3D27D4EB4Full
#define H_P3 0x165667B19E3779F9ull

static uint64_t rotl64(uint64_t x, unsigned r)
{
    return (x << r) | (x >> (64u - r));
}

static uint64_t hash_round(uint64_t acc, uint64_t w)
{
    return rotl64(acc + w * H_P2, 31) * H_P1;
}

static void hash_init(struct old_hash *h, uint64_t seed)
{
    h->v[0] = seed + H_P1 + H_P2;
    h->v[1] = seed + H_P2;
    h->v[2] = seed;
    h->v[3] = seed - H_P1;
    h->len = 0;
}

/* n must be a multiple of 32 (the payload is one of 64). */
static void hash_update(struct old_hash *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t w[4];
    size_t i;

    for (i = 0; i + 32 <= n; i += 32) {
        memcpy(w, b + i, 32);
        h->v[0] = hash_round(h->v[0], w[0]);
        h->v[1] = hash_round(h->v[1], w[1]);
        h->v[2] = hash_round(h->v[2], w[2]);
        h->v[3] = hash_round(h->v[3], w[3]);
    }
    h->len += n;
}

static uint64_t hash_final(const struct old_hash *h)
{
    uint64_t x = rotl64(h->v[0], 1) + rotl64(h->v[1], 7) + rotl64(h->v[2], 12) +
                 rotl64(h->v[3], 18);

    x ^= h->len;
    x ^= x >> 33;
    x *= H_P2;
    x ^= x >> 29;
    x *= H_P3;
    x ^= x >> 32;
    return x;
}

static uint64_t old_checksum(const struct old_hdr *hdr, uint64_t payload_hash)
{
    struct old_hdr c = *hdr;
    struct old_hash h;

    c.checksum = 0;
    hash_init(&h, payload_hash);
    hash_update(&h, &c, sizeof c);
    return hash_final(&h);
}

/* ==== Open files of either form ==== */

struct mtx_vec_file {
    struct mt_seg *seg; /* the segment form, or NULL for an old file */
    char *path;
    void *base; /* an old file's mapping */
    size_t size;
    const struct old_hdr *hdr;
    size_t off; /* an old file's next array, from the payload start */
};

void mtx_vec_file_close(struct mtx_vec_file *f)
{
    if (!f)
        return;
    mtx_seg_close(f->seg);
    if (f->base)
        munmap(f->base, f->size);
    mt_free(f->path);
    mt_free(f);
}

void mtx_vec_file_advise_random(const struct mtx_vec_file *f)
{
    if (f && f->seg)
        mtx_seg_advise_random(f->seg);
    else if (f && f->base)
        (void)madvise(f->base, f->size, MADV_RANDOM);
}

const char *mtx_vec_file_name(const struct mtx_vec_file *f)
{
    return f->path;
}

uint32_t mtx_vec_file_version(const struct mtx_vec_file *f)
{
    return f->seg ? mtx_seg_version(f->seg) : OLD_VERSION;
}

static enum mt_status old_check(struct mtx_vec_file *f, struct mt_error *err)
{
    const struct old_hdr *h = f->hdr;
    size_t plen = f->size - OLD_HDR_SIZE;
    struct old_hash hash;

    if (h->version != OLD_VERSION)
        return mt_fail(err, MT_EPARSE, "%s: unsupported version %u", f->path,
                       (unsigned)h->version);
    if (h->payload_len != plen || plen % 64 != 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: truncated or padded (%zu of %llu payload bytes)",
                       f->path, plen, (unsigned long long)h->payload_len);
    hash_init(&hash, 0);
    hash_update(&hash, (const char *)f->base + OLD_HDR_SIZE, plen);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    if (old_checksum(h, hash_final(&hash)) != h->checksum)
        return mt_fail(err, MT_EPARSE, "%s: checksum mismatch", f->path);
#endif
    return MT_OK;
}

/* Maps an old file whose first 8 bytes were its magic. */
static enum mt_status old_open(struct mtx_vec_file *f, int fd, size_t size,
                               struct mt_error *err)
{
    if (size < OLD_HDR_SIZE)
        return mt_fail(err, MT_EPARSE, "%s: truncated header", f->path);
    f->base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f->base == MAP_FAILED) {
        f->base = NULL;
        return mt_fail(err, MT_EIO, "%s: mmap: %s", f->path, strerror(errno));
    }
    f->size = size;
    f->hdr = f->base;
    return old_check(f, err);
}

/* Reads the first 8 bytes (zeros when shorter) and the size. */
static enum mt_status peek(struct mtx_vec_file *f, int fd, char magic[8],
                           size_t *size, struct mt_error *err)
{
    struct stat sb;
    ssize_t r;

    memset(magic, 0, 8);
    if (fstat(fd, &sb) != 0 || sb.st_size < 0)
        return mt_fail(err, MT_EIO, "%s: stat: %s", f->path, strerror(errno));
    *size = (size_t)sb.st_size;
    do
        r = pread(fd, magic, 8, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return mt_fail(err, MT_EIO, "%s: read: %s", f->path, strerror(errno));
    return MT_OK;
}

static enum mt_status file_open(struct mtx_vec_file *f,
                                const struct mtx_vec_kind *k,
                                struct mt_error *err)
{
    char magic[8];
    size_t size = 0;
    enum mt_status st;
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return mt_fail(err, MT_EIO, "%s: %s", f->path, strerror(errno));
    st = peek(f, fd, magic, &size, err);
    if (st == MT_OK && memcmp(magic, k->old_magic, 8) == 0) {
        st = old_open(f, fd, size, err);
        close(fd);
        return st;
    }
    close(fd);
    if (st != MT_OK)
        return st;
    st = mtx_seg_open(f->path, k->magic, MT_SEG_LAZY_CRC, &f->seg, err);
    if (st == MT_ENOTFOUND) /* removed since the open above */
        st = MT_EIO;
    if (st == MT_OK && (mtx_seg_version(f->seg) < k->oldest ||
                        mtx_seg_version(f->seg) > k->version))
        st = mt_fail(err, MT_EPARSE, "%s: unsupported version %u", f->path,
                     (unsigned)mtx_seg_version(f->seg));
    if (st == MT_OK && CHECK_AT_OPEN)
        st = mtx_seg_verify_all(f->seg, k->lazy, NULL, NULL, err);
    return st;
}

enum mt_status mtx_vec_file_open(const char *path, const struct mtx_vec_kind *k,
                                 struct mtx_vec_file **out,
                                 struct mt_error *err)
{
    struct mtx_vec_file *f = mt_calloc(1, sizeof *f);
    enum mt_status st;

    if (f)
        f->path = mt_strdup(path);
    if (!f || !f->path) {
        mtx_vec_file_close(f);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    }
    st = file_open(f, k, err);
    if (st != MT_OK) {
        mtx_vec_file_close(f);
        return st;
    }
    *out = f;
    return MT_OK;
}

enum mt_status mtx_vec_file_check(const struct mtx_vec_file *f,
                                  void (*step)(uint64_t bytes, void *user),
                                  void *user, struct mt_error *err)
{
    /* an old file's hash covers all of it and was checked at open */
    return f->seg ? mtx_seg_verify_all(f->seg, NULL, step, user, err) : MT_OK;
}

uint64_t mtx_vec_file_check_bytes(const struct mtx_vec_file *f)
{
    return f->seg ? mtx_seg_payload(f->seg) : 0;
}

/* ==== Sections ==== */

static enum mt_status old_meta(const struct mtx_vec_file *f, uint32_t id,
                               uint64_t *v, size_t n, struct mt_error *err)
{
    const struct old_hdr *h = f->hdr;

    if (id == MT_VEC_SEC_META && n == 3) {
        v[0] = h->dims;
        v[1] = h->count;
        v[2] = h->aux[0];
        return MT_OK;
    }
    if (id == MT_VEC_SEC_META || n > 10)
        return mt_fail(err, MT_EPARSE, "%s: bad header", f->path);
    memcpy(v, h->aux + 1, n * sizeof *v);
    return MT_OK;
}

enum mt_status mtx_vec_file_meta(const struct mtx_vec_file *f, uint32_t id,
                                 uint64_t *v, size_t n, struct mt_error *err)
{
    const void *p;
    size_t size;
    char ids[5];
    enum mt_status st;

    if (!f->seg)
        return old_meta(f, id, v, n, err);
    st = mtx_seg_section(f->seg, id, &p, &size, err);
    if (st != MT_OK)
        return MT_EPARSE;
    if (size < n * sizeof *v)
        return mt_fail(err, MT_EPARSE, "%s: section '%s' too short", f->path,
                       mtx_seg_id_str(id, ids));
    memcpy(v, p, n * sizeof *v);
    return MT_OK;
}

static size_t pad64(size_t n)
{
    return (n + 63u) & ~(size_t)63u;
}

enum mt_status mtx_vec_file_take(struct mtx_vec_file *f, uint32_t id, size_t n,
                                 const void **p, struct mt_error *err)
{
    size_t size;
    char ids[5];
    size_t plen;

    mtx_seg_id_str(id, ids);
    if (f->seg) {
        if (mtx_seg_section(f->seg, id, p, &size, err) != MT_OK)
            return MT_EPARSE;
        if (size != n)
            return mt_fail(err, MT_EPARSE,
                           "%s: section '%s' holds %zu bytes, not %zu", f->path,
                           ids, size, n);
        return MT_OK;
    }
    plen = f->size - OLD_HDR_SIZE;
    if (n > plen || pad64(n) > plen - f->off)
        return mt_fail(err, MT_EPARSE, "%s: truncated before '%s'", f->path,
                       ids);
    *p = (const char *)f->base + OLD_HDR_SIZE + f->off;
    f->off += pad64(n);
    return MT_OK;
}

enum mt_status mtx_vec_file_done(const struct mtx_vec_file *f,
                                 struct mt_error *err)
{
    if (!f->seg && f->off != f->size - OLD_HDR_SIZE)
        return mt_fail(err, MT_EPARSE, "%s: trailing bytes", f->path);
    return MT_OK;
}

/* ==== Writing (the segment form only) ==== */

enum mt_status mtx_vec_file_create(const char *path,
                                   const struct mtx_vec_kind *k,
                                   struct mt_seg_writer **out,
                                   struct mt_error *err)
{
    struct mt_seg_writer *w = NULL;
    enum mt_status st =
        mtx_seg_writer_open(path, k->magic, k->version, &w, err);

    if (st == MT_OK)
        st = mtx_seg_writer_set_align(w, MT_VEC_FILE_ALIGN, err);
    if (st != MT_OK) {
        mtx_seg_writer_abort(w);
        return st;
    }
    *out = w;
    return MT_OK;
}

enum mt_status mtx_vec_file_put(struct mt_seg_writer *w, uint32_t id,
                                const void *p, size_t n, struct mt_error *err)
{
    enum mt_status st = mtx_seg_writer_begin(w, id, err);

    return st == MT_OK ? mtx_seg_writer_write(w, p, n, err) : st;
}
