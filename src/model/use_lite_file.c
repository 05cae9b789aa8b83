/* USE-lite weight file: finding it, mapping it read-only, and refusing it
 * unless magic, version, size, CRC-32 and every tensor's shape check out.
 * An int8 file is dequantised to float32 once, at open. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/selfpath.h"
#include "medtrust/core.h"
#include "model/use_lite.h"

#ifndef MT_USE_LITE_DATADIR
#define MT_USE_LITE_DATADIR "/usr/local/share/medtrust"
#endif
#define WEIGHTS_NAME "use-lite.mtw"

/* ==== CRC-32 ==== */

/* zlib's: the same CRC as a byte-wise table, several bytes a step (the
 * open of the 28 MB file spent 3% of a 1,000-sentence `embed` here). */
uint32_t mtx_ul_crc32(uint32_t crc, const void *p, size_t n)
{
    return (uint32_t)crc32_z(crc, p, n);
}

/* ==== Finding the file ==== */

static int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* Tries dir/rel; on success returns a copy of the path. */
static char *try_path(const char *dir, const char *rel)
{
    char path[PATH_MAX + 64];

    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return readable(path) ? mt_strdup(path) : NULL;
}

/* Beside the program or libmedtrust.so (Python): the build tree's
 * build/use-lite.mtw, or PREFIX/{bin,lib}/../share/medtrust. */
static const char *const rels[] = {WEIGHTS_NAME, "../" WEIGHTS_NAME,
                                   "../share/medtrust/" WEIGHTS_NAME,
                                   "../../" WEIGHTS_NAME};

char *mtx_ul_find_weights(struct mt_error *err)
{
    const char *env = getenv("MEDTRUST_USE_LITE");
    char *found;

    if (env && *env) {
        if (readable(env))
            return mt_strdup(env);
        mt_fail(err, MT_ENOTFOUND, "MEDTRUST_USE_LITE=%s: %s", env,
                strerror(errno));
        return NULL;
    }
    found = mtx_self_find(rels, sizeof rels / sizeof rels[0]);
    if (!found)
        found = try_path(MT_USE_LITE_DATADIR, WEIGHTS_NAME);
    if (!found)
        found = try_path("build", WEIGHTS_NAME);
    if (!found)
        mt_fail(err, MT_ENOTFOUND,
                "use-lite weights (" WEIGHTS_NAME ") not found: run "
                "scripts/bootstrap and make, or set MEDTRUST_USE_LITE");
    return found;
}

/* ==== Validation ==== */

struct expect {
    const char *name;
    uint32_t k, n; /* n = 0 for vectors */
    int matrix;    /* 1: packed matmul weight, 2: embedding */
};

/* The tensors in file order, with their slot in struct mt_ul_weights. */
static const struct expect expects[] = {
    {"embed", MT_UL_VOCAB, MT_UL_EMB, 2},
    {"timing_inv", 1, 128, 0},
    {"l0.ln1_g", 256, 0, 0},
    {"l0.ln1_b", 256, 0, 0},
    {"l0.w_qkv", 256, 768, 1},
    {"l0.b_qkv", 768, 0, 0},
    {"l0.w_out", 256, 512, 1},
    {"l0.b_out", 512, 0, 0},
    {"l0.ln2_g", 512, 0, 0},
    {"l0.ln2_b", 512, 0, 0},
    {"l0.w_ff1", 512, 1536, 1},
    {"l0.b_ff1", 1536, 0, 0},
    {"l0.w_ff2", 1536, 512, 1},
    {"l0.b_ff2", 512, 0, 0},
    {"l0.w_res", 256, 512, 1},
    {"l0.b_res", 512, 0, 0},
    {"l1.ln1_g", 512, 0, 0},
    {"l1.ln1_b", 512, 0, 0},
    {"l1.w_qkv", 512, 1536, 1},
    {"l1.b_qkv", 1536, 0, 0},
    {"l1.w_out", 512, 512, 1},
    {"l1.b_out", 512, 0, 0},
    {"l1.ln2_g", 512, 0, 0},
    {"l1.ln2_b", 512, 0, 0},
    {"l1.w_ff1", 512, 1536, 1},
    {"l1.b_ff1", 1536, 0, 0},
    {"l1.w_ff2", 1536, 512, 1},
    {"l1.b_ff2", 512, 0, 0},
    {"w_pool", 512, 512, 1},
    {"b_pool", 512, 0, 0},
};
#define N_EXPECT (sizeof expects / sizeof expects[0])

static const float **slot(struct mt_ul_weights *w, size_t i)
{
    const float **slots[N_EXPECT] = {
        &w->embed,          &w->timing_inv,     &w->layer[0].ln1_g,
        &w->layer[0].ln1_b, &w->layer[0].w_qkv, &w->layer[0].b_qkv,
        &w->layer[0].w_out, &w->layer[0].b_out, &w->layer[0].ln2_g,
        &w->layer[0].ln2_b, &w->layer[0].w_ff1, &w->layer[0].b_ff1,
        &w->layer[0].w_ff2, &w->layer[0].b_ff2, &w->layer[0].w_res,
        &w->layer[0].b_res, &w->layer[1].ln1_g, &w->layer[1].ln1_b,
        &w->layer[1].w_qkv, &w->layer[1].b_qkv, &w->layer[1].w_out,
        &w->layer[1].b_out, &w->layer[1].ln2_g, &w->layer[1].ln2_b,
        &w->layer[1].w_ff1, &w->layer[1].b_ff1, &w->layer[1].w_ff2,
        &w->layer[1].b_ff2, &w->w_pool,         &w->b_pool};
    return slots[i];
}

static const struct mt_ul_tensor *find_tensor(const struct mt_ul_model *m,
                                              const char *name)
{
    const struct mt_ul_header *h = m->map;
    const struct mt_ul_tensor *t =
        (const struct mt_ul_tensor *)((const char *)m->map + sizeof *h);
    uint32_t i;

    for (i = 0; i < h->n_tensors; i++)
        if (strncmp(t[i].name, name, MT_UL_NAME_MAX) == 0)
            return &t[i];
    return NULL;
}

/* Bytes tensor 'e' must hold in 'dtype'. */
static uint64_t want_bytes(const struct expect *e, uint32_t dtype)
{
    uint64_t count = (uint64_t)e->k * (e->n ? e->n : 1);

    if (dtype == MT_UL_F32 || dtype == MT_UL_PACKED)
        return count * 4;
    return ((count + 63) & ~(uint64_t)63) +
           (uint64_t)(dtype == MT_UL_I8ROW ? e->k : e->n) * 4;
}

static int dtype_ok(const struct expect *e, uint32_t dtype, int int8)
{
    if (e->matrix == 0)
        return dtype == MT_UL_F32;
    if (!int8)
        return dtype == (e->matrix == 1 ? MT_UL_PACKED : MT_UL_F32);
    return dtype == (e->matrix == 1 ? MT_UL_I8PACK : MT_UL_I8ROW);
}

static enum mt_status check_tensor(const struct mt_ul_model *m, size_t i,
                                   const struct mt_ul_tensor **out,
                                   struct mt_error *err)
{
    const struct expect *e = &expects[i];
    const struct mt_ul_tensor *t = find_tensor(m, e->name);

    if (!t)
        return mt_fail(err, MT_EPARSE, "no tensor %s", e->name);
    if (t->dims[0] != e->k || t->dims[1] != e->n ||
        !dtype_ok(e, t->dtype, m->int8))
        return mt_fail(err, MT_EPARSE, "tensor %s: bad shape or type", e->name);
    if (t->offset % 64 || t->offset > m->map_len ||
        t->nbytes != want_bytes(e, t->dtype) ||
        t->nbytes > m->map_len - t->offset)
        return mt_fail(err, MT_EPARSE, "tensor %s: bad extent", e->name);
    *out = t;
    return MT_OK;
}

static enum mt_status check_header(const struct mt_ul_model *m,
                                   struct mt_error *err)
{
    const struct mt_ul_header *h = m->map;
    const char *base = m->map;
    uint32_t crc;

    if (m->map_len < sizeof *h || memcmp(h->magic, MT_UL_MAGIC, 8) != 0)
        return mt_fail(err, MT_EPARSE, "not a use-lite weight file");
    if (h->version != MT_UL_VERSION)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "weight file version %u, expected %u (reconvert)",
                       h->version, MT_UL_VERSION);
    if (h->file_size != m->map_len)
        return mt_fail(err, MT_EPARSE, "weight file truncated or extended");
    crc = mtx_ul_crc32(0, base + sizeof *h, m->map_len - sizeof *h);
    if (crc != h->checksum)
        return mt_fail(err, MT_EPARSE,
                       "weight file checksum mismatch (corrupted)");
    if (h->n_tensors > 256 || h->n_pieces < MT_UL_RESERVED ||
        h->n_pieces > MT_UL_VOCAB ||
        h->pieces_off !=
            sizeof *h + h->n_tensors * sizeof(struct mt_ul_tensor) ||
        h->strings_off !=
            h->pieces_off + h->n_pieces * sizeof(struct mt_ul_piece) ||
        h->strings_len > m->map_len - h->strings_off)
        return mt_fail(err, MT_EPARSE, "weight file: bad tables");
    return MT_OK;
}

static enum mt_status check_pieces(struct mt_ul_model *m, struct mt_error *err)
{
    const struct mt_ul_header *h = m->map;
    uint32_t i;

    m->pieces =
        (const struct mt_ul_piece *)(const void *)((const char *)m->map +
                                                   h->pieces_off);
    m->strings = (const char *)m->map + h->strings_off;
    m->n_pieces = h->n_pieces;
    for (i = 0; i < m->n_pieces; i++)
        if (m->pieces[i].str_off > h->strings_len ||
            m->pieces[i].str_len > h->strings_len - m->pieces[i].str_off)
            return mt_fail(err, MT_EPARSE, "piece %u: bad string", i);
    return MT_OK;
}

/* ==== int8 ==== */

static void dequant(const struct expect *e, const char *src, float *dst)
{
    size_t count = (size_t)e->k * e->n, i;
    const int8_t *q = (const int8_t *)src;
    const float *s =
        (const float *)(const void *)(src + ((count + 63) & ~(size_t)63));

    for (i = 0; i < count; i++) {
        /* embedding: scale per row; packed: per column (lane of panel) */
        size_t g = e->matrix == 2
                       ? i / e->n
                       : (i / ((size_t)e->k * MT_UL_PANEL)) * MT_UL_PANEL +
                             i % MT_UL_PANEL;
        dst[i] = (float)q[i] * s[g];
    }
}

static size_t deq_floats(void)
{
    size_t i, total = 0;

    for (i = 0; i < N_EXPECT; i++)
        if (expects[i].matrix)
            total += (size_t)expects[i].k * expects[i].n;
    return total;
}

static enum mt_status bind_tensors(struct mt_ul_model *m, struct mt_error *err)
{
    const struct mt_ul_tensor *t = NULL;
    size_t i, used = 0;
    enum mt_status st;

    if (m->int8) {
        m->deq = mt_malloc(deq_floats() * sizeof *m->deq);
        if (!m->deq)
            return mt_fail(err, MT_ENOMEM, "dequantising weights");
    }
    for (i = 0; i < N_EXPECT; i++) {
        const char *p;
        st = check_tensor(m, i, &t, err);
        if (st != MT_OK)
            return st;
        p = (const char *)m->map + t->offset;
        *slot(&m->w, i) = (const float *)(const void *)p;
        if (m->int8 && expects[i].matrix) {
            dequant(&expects[i], p, m->deq + used);
            *slot(&m->w, i) = m->deq + used;
            used += (size_t)expects[i].k * expects[i].n;
        }
    }
    m->w.layer[0].din = 256;
    m->w.layer[1].din = 512;
    return MT_OK;
}

/* ==== Open / close ==== */

static enum mt_status map_file(struct mt_ul_model *m, const char *path,
                               struct mt_error *err)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || sb.st_size <= 0 ||
        (uint64_t)sb.st_size > ((uint64_t)1 << 32)) {
        close(fd);
        return mt_fail(err, MT_EPARSE, "%s: not a weight file", path);
    }
    m->map_len = (size_t)sb.st_size;
    m->map = mmap(NULL, m->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m->map == MAP_FAILED) {
        m->map = NULL;
        return mt_fail(err, MT_EIO, "%s: mmap: %s", path, strerror(errno));
    }
    return MT_OK;
}

enum mt_status mtx_ul_model_open(const char *path, struct mt_ul_model **out,
                                 struct mt_error *err)
{
    struct mt_ul_model *m = mt_calloc(1, sizeof *m);
    enum mt_status st;

    if (!m)
        return mt_fail(err, MT_ENOMEM, "use-lite model");
    st = map_file(m, path, err);
    if (st == MT_OK)
        st = check_header(m, err);
    if (st == MT_OK) {
        m->int8 = (((const struct mt_ul_header *)m->map)->flags &
                   MT_UL_FLAG_INT8) != 0;
        st = check_pieces(m, err);
    }
    if (st == MT_OK)
        st = bind_tensors(m, err);
    if (st == MT_OK && mtx_ul_trie_build(m) != MT_OK)
        st = mt_fail(err, MT_ENOMEM, "use-lite tokenizer");
    if (st != MT_OK) {
        mt_error_prefix(err, "%s", path);
        mtx_ul_model_close(m);
        return st;
    }
    *out = m;
    return MT_OK;
}

void mtx_ul_model_close(struct mt_ul_model *m)
{
    size_t l;
    int i;

    if (!m)
        return;
    mtx_ul_trie_free(&m->trie);
    mt_free(m->js_len);
    for (l = 0; l < 2; l++)
        for (i = 0; i < MT_UL_N_Q; i++)
            mtx_ul_qmat_free(&m->q[l][i]);
    mt_free(m->deq);
    if (m->map)
        munmap(m->map, m->map_len);
    mt_free(m);
}
