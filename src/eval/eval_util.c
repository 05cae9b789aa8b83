/* Eval helpers: Python whitespace rules, a small string hash map, whole-file
 * reading and clipping. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/file.h"
#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/segment_zh.h"
#include "text/utf8.h"

#define EV_MAX_FILE ((size_t)1 << 30)

/* Python's str.isspace() (text/segment_zh.c). */
static int py_space_cp(int32_t c)
{
    return mtx_py_isspace(c);
}

size_t mtx_ev_space_len(const char *p, size_t n)
{
    int32_t cp;
    size_t len;

    if (n == 0)
        return 0;
    if ((unsigned char)p[0] < 0x80)
        return py_space_cp((unsigned char)p[0]) ? 1 : 0;
    len = mtx_utf8_decode(p, n, &cp);
    return cp >= 0 && py_space_cp(cp) ? len : 0;
}

int mtx_ev_next_token(const char *p, size_t n, size_t *pos, struct mt_str *tok)
{
    size_t i = *pos;
    size_t s;
    size_t w;

    while (i < n && (w = mtx_ev_space_len(p + i, n - i)) > 0)
        i += w;
    if (i >= n) {
        *pos = n;
        return 0;
    }
    s = i;
    while (i < n && mtx_ev_space_len(p + i, n - i) == 0)
        i++;
    tok->p = p + s;
    tok->n = i - s;
    *pos = i;
    return 1;
}

/* ==== Map ==== */

static size_t map_slot(const struct mt_ev_map *m, struct mt_str k)
{
    size_t i = (size_t)mtx_fnv1a(MTX_FNV1A_INIT, k.p, k.n) & (m->cap - 1);

    while (m->keys[i].p && !mtx_str_eq(m->keys[i], k))
        i = (i + 1) & (m->cap - 1);
    return i;
}

long mtx_ev_map_get(const struct mt_ev_map *m, struct mt_str k)
{
    size_t i;

    if (m->cap == 0)
        return -1;
    i = map_slot(m, k);
    return m->keys[i].p ? m->vals[i] : -1;
}

static enum mt_status map_grow(struct mt_ev_map *m)
{
    struct mt_ev_map g = {NULL, NULL, m->cap ? m->cap * 2 : 64, 0};
    size_t i;

    g.keys = mt_calloc(g.cap, sizeof *g.keys);
    g.vals = mt_calloc(g.cap, sizeof *g.vals);
    if (!g.keys || !g.vals) {
        mtx_ev_map_free(&g);
        return MT_ENOMEM;
    }
    for (i = 0; i < m->cap; i++) {
        if (m->keys[i].p) {
            size_t s = map_slot(&g, m->keys[i]);
            g.keys[s] = m->keys[i];
            g.vals[s] = m->vals[i];
        }
    }
    g.len = m->len;
    mtx_ev_map_free(m);
    *m = g;
    return MT_OK;
}

enum mt_status mtx_ev_map_put(struct mt_ev_map *m, struct mt_str k, long v)
{
    size_t i;

    if ((m->len + 1) * 2 > m->cap && map_grow(m) != MT_OK)
        return MT_ENOMEM;
    if (!k.p)
        k.p = ""; /* a NULL pointer marks an empty slot */
    i = map_slot(m, k);
    if (!m->keys[i].p)
        m->len++;
    m->keys[i] = k;
    m->vals[i] = v;
    return MT_OK;
}

void mtx_ev_map_free(struct mt_ev_map *m)
{
    mt_free(m->keys);
    mt_free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ==== Files ==== */

enum mt_status mtx_ev_read_file(const char *path, char **data, size_t *n,
                                struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT(EV_MAX_FILE);
    enum mt_status st = mtx_file_read_all(path, &b, err);

    if (st == MT_OK && (st = mtx_buf_reserve(&b, 1)) != MT_OK)
        mt_fail(err, st, "%s: cannot read: %s", path, mt_status_str(st));
    if (st != MT_OK) {
        mtx_buf_free(&b);
        if (st == MT_ENOTFOUND && err) /* as any file that cannot open */
            err->status = MT_EIO;
        return st == MT_ENOTFOUND ? MT_EIO : st;
    }
    *n = b.len;
    *data = mtx_buf_take(&b);
    return MT_OK;
}

double mtx_ev_clip01(double v)
{
    if (v < 0.0)
        return 0.0;
    return v > 1.0 ? 1.0 : v;
}
