/* int8 vector sets: truncation and quantisation, flat search over int8
 * codes or float32, and the checksummed section file format (written to
 * path.tmp, fsynced, renamed; read back through mmap). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/simd.h"
#include "index/vec.h"
#include "medtrust/core.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the vector file format assumes a little-endian host"
#endif

_Static_assert(sizeof(struct mt_vec_hdr) == MT_VEC_HDR_SIZE,
               "vector file header must be 128 bytes");

#define VECSET_MAGIC "MTVECSET"
#define VECSET_VERSION 1u
#define VEC_FLAG_FLOAT 1u
#define VEC_FLAG_NORMALIZE 2u
#define VEC_FLAG_REFINE 4u
/* A residual r in [-1/2, 1/2] of a code step is kept as round(15 r), a
 * 4-bit value in -7..7. */
#define REFINE_STEPS 15
#define FLAT_BLOCK 256 /* rows per batched kernel call */

struct mt_vecset {
    struct mt_vecset_params p;
    uint32_t dims;
    uint32_t count;
    uint32_t cap;
    const int8_t *codes;   /* count * dims, row-major */
    const float *scales;   /* count */
    const float *floats;   /* count * dims, or NULL */
    const uint8_t *refine; /* count * rbytes nibbles, or NULL */
    uint32_t rbytes;       /* (dims + 1) / 2 */
    int8_t *codes_mem;     /* owned buffers while building */
    float *scales_mem;
    float *floats_mem;
    uint8_t *refine_mem;
    struct mt_vec_map map; /* owned when 'mapped' */
    int mapped;
    int readonly;
};

/* ==== Quantisation ==== */

static double sum_squares(const float *x, uint32_t dims)
{
    double s = 0.0;
    uint32_t i;

    for (i = 0; i < dims; i++)
        s += (double)x[i] * (double)x[i];
    return s;
}

enum mt_status mt_vec_normalize(float *x, uint32_t dims)
{
    double s = sum_squares(x, dims);
    float inv;
    uint32_t i;

    if (!(s > 0.0) || !isfinite(s))
        return MT_EINVAL;
    inv = (float)(1.0 / sqrt(s));
    for (i = 0; i < dims; i++)
        x[i] *= inv;
    return MT_OK;
}

enum mt_status mt_vec_truncate_normalize(const float *in, uint32_t dims,
                                         uint32_t new_dims, float *out)
{
    double s;
    float inv;
    uint32_t i;

    if (new_dims == 0 || new_dims > dims)
        return MT_EINVAL;
    s = sum_squares(in, new_dims);
    if (!(s > 0.0) || !isfinite(s))
        return MT_EINVAL;
    inv = (float)(1.0 / sqrt(s));
    for (i = 0; i < new_dims; i++)
        out[i] = in[i] * inv;
    return MT_OK;
}

float mt_vec_quantize(const float *x, uint32_t dims, int8_t *codes)
{
    float max = 0.0f;
    float inv;
    uint32_t i;

    for (i = 0; i < dims; i++)
        if (fabsf(x[i]) > max)
            max = fabsf(x[i]);
    if (!(max > 0.0f) || !isfinite(max)) {
        memset(codes, 0, dims);
        return 0.0f;
    }
    inv = 127.0f / max;
    for (i = 0; i < dims; i++) {
        long c = lrintf(x[i] * inv);
        c = c > 127 ? 127 : (c < -127 ? -127 : c);
        codes[i] = (int8_t)c;
    }
    return max / 127.0f;
}

/* ==== Top-k ==== */

static void topk_sift_down(struct mt_vec_hit *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t w = i;
        uint32_t l = 2 * i + 1;
        struct mt_vec_hit t;

        if (l < n && mt_vec_hit_better(h[w], h[l]))
            w = l;
        if (l + 1 < n && mt_vec_hit_better(h[w], h[l + 1]))
            w = l + 1;
        if (w == i)
            return;
        t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

int mt_vec_topk_push(struct mt_vec_topk *t, uint32_t id, float score)
{
    struct mt_vec_hit x = {id, score};
    uint32_t i;

    if (t->n < t->k) {
        i = t->n++;
        while (i > 0 && mt_vec_hit_better(t->h[(i - 1) / 2], x)) {
            t->h[i] = t->h[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        t->h[i] = x;
        return 1;
    }
    if (t->k == 0 || !mt_vec_hit_better(x, t->h[0]))
        return 0;
    t->h[0] = x;
    topk_sift_down(t->h, t->n, 0);
    return 1;
}

static int hit_cmp(const void *a, const void *b)
{
    const struct mt_vec_hit *x = a;
    const struct mt_vec_hit *y = b;

    if (mt_vec_hit_better(*x, *y))
        return -1;
    return mt_vec_hit_better(*y, *x);
}

void mt_vec_topk_sort(struct mt_vec_topk *t)
{
    if (t->n > 1)
        qsort(t->h, t->n, sizeof *t->h, hit_cmp);
}

/* ==== Checksum ==== */

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

void mt_vec_hash_init(struct mt_vec_hash *h, uint64_t seed)
{
    h->v[0] = seed + H_P1 + H_P2;
    h->v[1] = seed + H_P2;
    h->v[2] = seed;
    h->v[3] = seed - H_P1;
    h->len = 0;
}

void mt_vec_hash_update(struct mt_vec_hash *h, const void *p, size_t n)
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

uint64_t mt_vec_hash_final(const struct mt_vec_hash *h)
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

static uint64_t header_checksum(const struct mt_vec_hdr *hdr,
                                uint64_t payload_hash)
{
    struct mt_vec_hdr c = *hdr;
    struct mt_vec_hash h;

    c.checksum = 0;
    mt_vec_hash_init(&h, payload_hash);
    mt_vec_hash_update(&h, &c, sizeof c);
    return mt_vec_hash_final(&h);
}

/* ==== Writer ==== */

static enum mt_status write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return MT_EIO;
        c += w;
        n -= (size_t)w;
    }
    return MT_OK;
}

enum mt_status mt_vec_writer_begin(struct mt_vec_writer *w, const char *path,
                                   struct mt_error *err)
{
    static const unsigned char zero[MT_VEC_HDR_SIZE];
    size_t n = strlen(path);

    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->path = path;
    w->tmp = mt_malloc(n + 5);
    if (!w->tmp)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    memcpy(w->tmp, path, n);
    memcpy(w->tmp + n, ".tmp", 5);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0 || write_all(w->fd, zero, sizeof zero) != MT_OK) {
        int e = errno;
        mt_vec_writer_abort(w);
        return mt_fail(err, MT_EIO, "%s: cannot write: %s", path, strerror(e));
    }
    mt_vec_hash_init(&w->hash, 0);
    return MT_OK;
}

enum mt_status mt_vec_writer_put(struct mt_vec_writer *w, const void *p,
                                 size_t n, struct mt_error *err)
{
    unsigned char tail[64];
    size_t full = n & ~(size_t)63u;

    if (full && write_all(w->fd, p, full) != MT_OK)
        return mt_fail(err, MT_EIO, "%s: write failed: %s", w->path,
                       strerror(errno));
    mt_vec_hash_update(&w->hash, p, full);
    if (n > full) {
        memset(tail, 0, sizeof tail);
        memcpy(tail, (const char *)p + full, n - full);
        if (write_all(w->fd, tail, sizeof tail) != MT_OK)
            return mt_fail(err, MT_EIO, "%s: write failed: %s", w->path,
                           strerror(errno));
        mt_vec_hash_update(&w->hash, tail, sizeof tail);
    }
    w->len += mt_vec_pad64(n);
    return MT_OK;
}

static enum mt_status fsync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd;
    int rc;

    if (!slash)
        dir = mt_strdup(".");
    else
        dir = mt_strndup(path, slash == path ? 1 : (size_t)(slash - path));
    if (!dir)
        return MT_ENOMEM;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    mt_free(dir);
    if (fd < 0)
        return MT_EIO;
    rc = fsync(fd);
    close(fd);
    return rc == 0 ? MT_OK : MT_EIO;
}

enum mt_status mt_vec_writer_commit(struct mt_vec_writer *w,
                                    struct mt_vec_hdr *hdr,
                                    struct mt_error *err)
{
    enum mt_status st;

    hdr->payload_len = w->len;
    hdr->checksum = header_checksum(hdr, mt_vec_hash_final(&w->hash));
    if (pwrite(w->fd, hdr, sizeof *hdr, 0) != (ssize_t)sizeof *hdr ||
        fsync(w->fd) != 0 || close(w->fd) != 0) {
        st = mt_fail(err, MT_EIO, "%s: write failed: %s", w->path,
                     strerror(errno));
        w->fd = -1;
        mt_vec_writer_abort(w);
        return st;
    }
    w->fd = -1;
    if (rename(w->tmp, w->path) != 0) {
        st = mt_fail(err, MT_EIO, "%s: rename failed: %s", w->path,
                     strerror(errno));
        mt_vec_writer_abort(w);
        return st;
    }
    mt_free(w->tmp);
    w->tmp = NULL;
    st = fsync_dir(w->path);
    if (st != MT_OK)
        return mt_fail(err, st, "%s: cannot sync its directory", w->path);
    return MT_OK;
}

void mt_vec_writer_abort(struct mt_vec_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    if (w->tmp)
        unlink(w->tmp);
    mt_free(w->tmp);
    w->tmp = NULL;
}

/* ==== Mapped reader ==== */

static enum mt_status map_check(struct mt_vec_map *m, const char *path,
                                const char magic[8], uint32_t version,
                                struct mt_error *err)
{
    const struct mt_vec_hdr *h = m->hdr;
    struct mt_vec_hash hash;
    size_t plen = m->size - MT_VEC_HDR_SIZE;

    if (memcmp(h->magic, magic, 8) != 0)
        return mt_fail(err, MT_EPARSE, "%s: not a %.8s file", path, magic);
    if (h->version != version)
        return mt_fail(err, MT_EPARSE, "%s: unsupported version %u", path,
                       (unsigned)h->version);
    if (h->payload_len != plen || plen % 64 != 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: truncated or padded (%zu of "
                       "%llu payload bytes)",
                       path, plen, (unsigned long long)h->payload_len);
    mt_vec_hash_init(&hash, 0);
    mt_vec_hash_update(&hash, (const char *)m->base + MT_VEC_HDR_SIZE, plen);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* fuzz builds skip it so that mutations reach the structural checks
     * (tests/fuzz/fuzz_vec.c; never in production) */
    if (header_checksum(h, mt_vec_hash_final(&hash)) != h->checksum)
        return mt_fail(err, MT_EPARSE, "%s: checksum mismatch", path);
#endif
    return MT_OK;
}

enum mt_status mt_vec_map_open(struct mt_vec_map *m, const char *path,
                               const char magic[8], uint32_t version,
                               struct mt_error *err)
{
    struct stat sb;
    enum mt_status st;
    int fd;

    memset(m, 0, sizeof *m);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || sb.st_size < MT_VEC_HDR_SIZE) {
        close(fd);
        return mt_fail(err, MT_EPARSE, "%s: truncated header", path);
    }
    m->size = (size_t)sb.st_size;
    m->base = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m->base == MAP_FAILED) {
        m->base = NULL;
        return mt_fail(err, MT_EIO, "%s: mmap: %s", path, strerror(errno));
    }
    m->hdr = m->base;
    st = map_check(m, path, magic, version, err);
    if (st != MT_OK)
        mt_vec_map_close(m);
    return st;
}

const void *mt_vec_map_take(struct mt_vec_map *m, size_t n)
{
    size_t plen = m->size - MT_VEC_HDR_SIZE;
    const char *p;

    if (n > plen || mt_vec_pad64(n) > plen - m->off)
        return NULL;
    p = (const char *)m->base + MT_VEC_HDR_SIZE + m->off;
    m->off += mt_vec_pad64(n);
    return p;
}

void mt_vec_map_close(struct mt_vec_map *m)
{
    if (m->base)
        munmap(m->base, m->size);
    memset(m, 0, sizeof *m);
}

/* ==== Vector sets ==== */

struct mt_vecset_params mt_vecset_default_params(void)
{
    struct mt_vecset_params p = {0, 1, 1, MT_VEC_MAX_COUNT};
    return p;
}

enum mt_status mt_vecset_new(uint32_t dims,
                             const struct mt_vecset_params *params,
                             struct mt_vecset **out)
{
    struct mt_vecset *vs;

    *out = NULL;
    if (dims == 0 || dims > MT_VEC_MAX_DIMS)
        return MT_EINVAL;
    vs = mt_calloc(1, sizeof *vs);
    if (!vs)
        return MT_ENOMEM;
    vs->p = params ? *params : mt_vecset_default_params();
    if (vs->p.max_count == 0 || vs->p.max_count > MT_VEC_MAX_COUNT)
        vs->p.max_count = MT_VEC_MAX_COUNT;
    vs->dims = dims;
    vs->rbytes = (dims + 1) / 2;
    *out = vs;
    return MT_OK;
}

void mt_vecset_free(struct mt_vecset *vs)
{
    if (!vs)
        return;
    mt_free(vs->codes_mem);
    mt_free(vs->scales_mem);
    mt_free(vs->floats_mem);
    mt_free(vs->refine_mem);
    if (vs->mapped)
        mt_vec_map_close(&vs->map);
    mt_free(vs);
}

/* Grows every array to 'cap' rows; on failure the set stays usable at
 * its old capacity (arrays already grown are simply larger). */
static enum mt_status vecset_grow(struct mt_vecset *vs, uint32_t cap)
{
    void *p;

    p = mt_realloc(vs->scales_mem, (size_t)cap * sizeof(float));
    if (!p)
        return MT_ENOMEM;
    vs->scales = vs->scales_mem = p;
    p = mt_realloc(vs->codes_mem, (size_t)cap * vs->dims);
    if (!p)
        return MT_ENOMEM;
    vs->codes = vs->codes_mem = p;
    if (vs->p.keep_float) {
        p = mt_realloc(vs->floats_mem, (size_t)cap * vs->dims * sizeof(float));
        if (!p)
            return MT_ENOMEM;
        vs->floats = vs->floats_mem = p;
    }
    if (vs->p.refine) {
        p = mt_realloc(vs->refine_mem, (size_t)cap * vs->rbytes);
        if (!p)
            return MT_ENOMEM;
        vs->refine = vs->refine_mem = p;
    }
    vs->cap = cap;
    return MT_OK;
}

static int all_finite(const float *v, uint32_t dims)
{
    uint32_t i;

    for (i = 0; i < dims; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* Residual of each component against its code, in units of the code
 * step: r = x / scale - code in [-1/2, 1/2], kept as round(15 r), two
 * components a byte (low nibble first). */
static void put_residual(const float *x, uint32_t dims, const int8_t *codes,
                         float scale, uint8_t *out)
{
    uint32_t i;

    memset(out, 0, (dims + 1) / 2);
    if (!(scale > 0.0f))
        return;
    for (i = 0; i < dims; i++) {
        float r = x[i] / scale - (float)codes[i];
        long v = lrintf(r * REFINE_STEPS);
        v = v > 7 ? 7 : (v < -7 ? -7 : v);
        out[i / 2] |= (uint8_t)(((unsigned long)v & 15u) << (4 * (i & 1)));
    }
}

enum mt_status mt_vecset_add(struct mt_vecset *vs, const float *v, uint32_t *id)
{
    size_t row = (size_t)vs->count * vs->dims;
    double norm = 1.0;
    float scale;
    uint32_t i;

    if (vs->readonly)
        return MT_EUNSUPPORTED;
    if (vs->count >= vs->p.max_count)
        return MT_ELIMIT;
    if (!all_finite(v, vs->dims))
        return MT_EINVAL;
    if (vs->p.normalize) {
        norm = sqrt(sum_squares(v, vs->dims));
        if (!(norm > 0.0) || !isfinite(norm))
            return MT_EINVAL;
    }
    if (vs->count == vs->cap) {
        uint32_t cap = vs->cap ? vs->cap * 2 : 64;
        if (cap > vs->p.max_count)
            cap = vs->p.max_count;
        if (vecset_grow(vs, cap) != MT_OK)
            return MT_ENOMEM;
    }
    /* Quantisation is scale-invariant: codes of v/|v| are the codes of v
     * and only the scale divides by the norm. */
    scale = mt_vec_quantize(v, vs->dims, vs->codes_mem + row);
    vs->scales_mem[vs->count] = (float)((double)scale / norm);
    if (vs->refine_mem)
        put_residual(v, vs->dims, vs->codes_mem + row, scale,
                     vs->refine_mem + (size_t)vs->count * vs->rbytes);
    if (vs->floats_mem)
        for (i = 0; i < vs->dims; i++)
            vs->floats_mem[row + i] = (float)((double)v[i] / norm);
    if (id)
        *id = vs->count;
    vs->count++;
    return MT_OK;
}

uint32_t mt_vecset_count(const struct mt_vecset *vs)
{
    return vs->count;
}

uint32_t mt_vecset_dims(const struct mt_vecset *vs)
{
    return vs->dims;
}

int mt_vecset_has_float(const struct mt_vecset *vs)
{
    return vs->floats != NULL;
}

int mt_vecset_normalizes(const struct mt_vecset *vs)
{
    return vs->p.normalize;
}

const int8_t *mt_vecset_code(const struct mt_vecset *vs, uint32_t id)
{
    return vs->codes + (size_t)id * vs->dims;
}

float mt_vecset_scale(const struct mt_vecset *vs, uint32_t id)
{
    return vs->scales[id];
}

const int8_t *mt_vecset_codes(const struct mt_vecset *vs)
{
    return vs->codes;
}

const float *mt_vecset_scales(const struct mt_vecset *vs)
{
    return vs->scales;
}

const float *mt_vecset_float(const struct mt_vecset *vs, uint32_t id)
{
    return vs->floats ? vs->floats + (size_t)id * vs->dims : NULL;
}

const uint8_t *mt_vecset_refine(const struct mt_vecset *vs, uint32_t id)
{
    return vs->refine ? vs->refine + (size_t)id * vs->rbytes : NULL;
}

/* q . (code + residual / 15) * scale: the residual nibbles are unpacked
 * into int8 so that both halves use the float x int8 kernel. */
static float rescore_refined(const struct mt_vecset *vs, const float *q,
                             uint32_t id)
{
    const struct mt_simd_kernels *k = mt_simd_get();
    const uint8_t *r = mt_vecset_refine(vs, id);
    int8_t res[512];
    float dot = k->dot_f32_i8(q, mt_vecset_code(vs, id), vs->dims);
    uint32_t done;

    for (done = 0; done < vs->dims; done += (uint32_t)sizeof res) {
        uint32_t n = vs->dims - done;
        uint32_t i;
        n = n < sizeof res ? n : (uint32_t)sizeof res;
        for (i = 0; i < n; i++) {
            uint8_t b = r[(done + i) / 2];
            res[i] = (int8_t)((int8_t)(b << (4 * (1 - ((done + i) & 1)))) >> 4);
        }
        dot += k->dot_f32_i8(q + done, res, n) / (float)REFINE_STEPS;
    }
    return dot * vs->scales[id];
}

float mt_vecset_rescore(const struct mt_vecset *vs, const float *q, uint32_t id)
{
    const struct mt_simd_kernels *k = mt_simd_get();

    if (vs->floats)
        return k->dot_f32(q, mt_vecset_float(vs, id), vs->dims);
    if (vs->refine)
        return rescore_refined(vs, q, id);
    return k->dot_f32_i8(q, mt_vecset_code(vs, id), vs->dims) * vs->scales[id];
}

/* ==== Files ==== */

enum mt_status mt_vecset_put_sections(const struct mt_vecset *vs,
                                      struct mt_vec_writer *w, uint64_t *flags,
                                      struct mt_error *err)
{
    size_t n = vs->count;
    enum mt_status st;

    *flags = (vs->floats ? VEC_FLAG_FLOAT : 0) |
             (vs->p.normalize ? VEC_FLAG_NORMALIZE : 0) |
             (vs->refine ? VEC_FLAG_REFINE : 0);
    st = mt_vec_writer_put(w, vs->scales, n * sizeof(float), err);
    if (st == MT_OK && vs->floats)
        st =
            mt_vec_writer_put(w, vs->floats, n * vs->dims * sizeof(float), err);
    if (st == MT_OK)
        st = mt_vec_writer_put(w, vs->codes, n * vs->dims, err);
    if (st == MT_OK && vs->refine)
        st = mt_vec_writer_put(w, vs->refine, n * vs->rbytes, err);
    return st;
}

enum mt_status mt_vecset_write(const struct mt_vecset *vs, const char *path,
                               struct mt_error *err)
{
    struct mt_vec_writer w;
    struct mt_vec_hdr hdr;
    enum mt_status st;

    memset(&hdr, 0, sizeof hdr);
    memcpy(hdr.magic, VECSET_MAGIC, 8);
    hdr.version = VECSET_VERSION;
    hdr.dims = vs->dims;
    hdr.count = vs->count;
    st = mt_vec_writer_begin(&w, path, err);
    if (st != MT_OK)
        return st;
    st = mt_vecset_put_sections(vs, &w, &hdr.aux[0], err);
    if (st != MT_OK) {
        mt_vec_writer_abort(&w);
        return st;
    }
    return mt_vec_writer_commit(&w, &hdr, err);
}

enum mt_status mt_vecset_view(struct mt_vec_map *m, uint32_t dims,
                              uint64_t count, uint64_t flags,
                              struct mt_vecset **out, struct mt_error *err)
{
    struct mt_vecset_params p = mt_vecset_default_params();
    struct mt_vecset *vs;
    size_t n = (size_t)count;

    *out = NULL;
    if (dims == 0 || dims > MT_VEC_MAX_DIMS || count > MT_VEC_MAX_COUNT ||
        flags > (VEC_FLAG_FLOAT | VEC_FLAG_NORMALIZE | VEC_FLAG_REFINE))
        return mt_fail(err, MT_EPARSE, "bad vector header");
    p.keep_float = (flags & VEC_FLAG_FLOAT) != 0;
    p.normalize = (flags & VEC_FLAG_NORMALIZE) != 0;
    p.refine = (flags & VEC_FLAG_REFINE) != 0;
    if (mt_vecset_new(dims, &p, &vs) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    vs->readonly = 1;
    vs->count = vs->cap = (uint32_t)count;
    vs->scales = mt_vec_map_take(m, n * sizeof(float));
    if (p.keep_float)
        vs->floats = mt_vec_map_take(m, n * dims * sizeof(float));
    vs->codes = mt_vec_map_take(m, n * dims);
    if (p.refine)
        vs->refine = mt_vec_map_take(m, n * vs->rbytes);
    if (!vs->scales || !vs->codes || (p.keep_float && !vs->floats) ||
        (p.refine && !vs->refine)) {
        mt_vecset_free(vs);
        return mt_fail(err, MT_EPARSE, "vector sections truncated");
    }
    *out = vs;
    return MT_OK;
}

enum mt_status mt_vecset_open(const char *path, struct mt_vecset **out,
                              struct mt_error *err)
{
    struct mt_vec_map m;
    enum mt_status st;

    *out = NULL;
    st = mt_vec_map_open(&m, path, VECSET_MAGIC, VECSET_VERSION, err);
    if (st != MT_OK)
        return st;
    st = mt_vecset_view(&m, m.hdr->dims, m.hdr->count, m.hdr->aux[0], out, err);
    if (st != MT_OK) {
        mt_vec_map_close(&m);
        mt_error_prefix(err, "%s", path);
        return st;
    }
    if (m.off != m.size - MT_VEC_HDR_SIZE) {
        mt_vecset_free(*out);
        *out = NULL;
        mt_vec_map_close(&m);
        return mt_fail(err, MT_EPARSE, "%s: trailing bytes", path);
    }
    (*out)->map = m;
    (*out)->mapped = 1;
    return MT_OK;
}

/* ==== Search ==== */

enum mt_status mt_vecset_prepare_query(const struct mt_vecset *vs,
                                       const float *query, float *qf,
                                       int8_t *qcodes, float *qscale)
{
    memcpy(qf, query, (size_t)vs->dims * sizeof(float));
    if (!all_finite(qf, vs->dims))
        return MT_EINVAL;
    if (vs->p.normalize && mt_vec_normalize(qf, vs->dims) != MT_OK)
        return MT_EINVAL;
    *qscale = mt_vec_quantize(qf, vs->dims, qcodes);
    return MT_OK;
}

static int filtered_out(const struct mt_vec_filter *f, uint32_t id)
{
    return f && f->accept && !f->accept(id, f->user);
}

static void flat_scan(const struct mt_vecset *vs, const int8_t *qcodes,
                      float qscale, const struct mt_vec_filter *filter,
                      struct mt_vec_topk *t)
{
    const struct mt_simd_kernels *k = mt_simd_get();
    int32_t dots[FLAT_BLOCK];
    uint32_t base;
    uint32_t r;

    for (base = 0; base < vs->count; base += FLAT_BLOCK) {
        uint32_t nb = vs->count - base;
        nb = nb < FLAT_BLOCK ? nb : FLAT_BLOCK;
        k->dot_i8_batch(qcodes, vs->codes + (size_t)base * vs->dims, vs->dims,
                        nb, vs->dims, dots);
        for (r = 0; r < nb; r++) {
            uint32_t id = base + r;
            if (filtered_out(filter, id))
                continue;
            mt_vec_topk_push(t, id, (float)dots[r] * qscale * vs->scales[id]);
        }
    }
}

/* Re-scores the int8 candidates in t->h with mt_vecset_rescore and keeps
 * the best k of them in hits. */
static void rescore_pool(const struct mt_vecset *vs, const float *qf,
                         const struct mt_vec_topk *pool, uint32_t k,
                         struct mt_vec_hit *hits, uint32_t *n)
{
    struct mt_vec_topk t = {hits, 0, k};
    uint32_t i;

    for (i = 0; i < pool->n; i++)
        mt_vec_topk_push(&t, pool->h[i].id,
                         mt_vecset_rescore(vs, qf, pool->h[i].id));
    mt_vec_topk_sort(&t);
    *n = t.n;
}

/* Candidates the int8 scan keeps for re-scoring with the residual. */
uint32_t mt_vec_rescore_pool(uint32_t k)
{
    return k > 16 ? 4 * k : 64;
}

static uint32_t pool_size(const struct mt_vecset *vs, uint32_t k)
{
    uint32_t r = mt_vec_rescore_pool(k);

    if (!vs->refine)
        return k;
    return r < vs->count ? r : vs->count;
}

enum mt_status mt_vecset_search_flat(const struct mt_vecset *vs,
                                     const float *query, uint32_t k,
                                     const struct mt_vec_filter *filter,
                                     struct mt_vec_hit *hits, uint32_t *n)
{
    uint32_t r = pool_size(vs, k);
    struct mt_vec_topk t = {hits, 0, k};
    struct mt_vec_hit *pool = NULL;
    enum mt_status st;
    float qscale;
    float *qf;

    *n = 0;
    if (k == 0 || vs->count == 0)
        return MT_OK;
    qf = mt_malloc((size_t)vs->dims * (sizeof(float) + 1));
    if (r > k && qf) {
        pool = mt_malloc((size_t)r * sizeof *pool);
        t.h = pool;
        t.k = r;
    }
    if (!qf || (r > k && !pool)) {
        mt_free(qf);
        return MT_ENOMEM;
    }
    st = mt_vecset_prepare_query(vs, query, qf, (int8_t *)(qf + vs->dims),
                                 &qscale);
    if (st == MT_OK) {
        flat_scan(vs, (int8_t *)(qf + vs->dims), qscale, filter, &t);
        if (pool)
            rescore_pool(vs, qf, &t, k, hits, n);
        else {
            mt_vec_topk_sort(&t);
            *n = t.n;
        }
    }
    mt_free(pool);
    mt_free(qf);
    return st;
}

enum mt_status mt_vecset_search_float(const struct mt_vecset *vs,
                                      const float *query, uint32_t k,
                                      const struct mt_vec_filter *filter,
                                      struct mt_vec_hit *hits, uint32_t *n)
{
    const struct mt_simd_kernels *kern = mt_simd_get();
    struct mt_vec_topk t = {hits, 0, k};
    float *qf;
    uint32_t id;

    *n = 0;
    if (!vs->floats)
        return MT_EUNSUPPORTED;
    if (k == 0 || vs->count == 0)
        return MT_OK;
    qf = mt_malloc((size_t)vs->dims * sizeof(float));
    if (!qf)
        return MT_ENOMEM;
    memcpy(qf, query, (size_t)vs->dims * sizeof(float));
    if (!all_finite(qf, vs->dims) ||
        (vs->p.normalize && mt_vec_normalize(qf, vs->dims) != MT_OK)) {
        mt_free(qf);
        return MT_EINVAL;
    }
    for (id = 0; id < vs->count; id++)
        if (!filtered_out(filter, id))
            mt_vec_topk_push(
                &t, id, kern->dot_f32(qf, mt_vecset_float(vs, id), vs->dims));
    mt_vec_topk_sort(&t);
    *n = t.n;
    mt_free(qf);
    return MT_OK;
}
