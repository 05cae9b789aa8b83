/* jieba's data for segment_zh.c, parsed from memory (the eval layer reads
 * the files): the prefix dictionary (dict.txt as jieba's gen_pfdict reads
 * it) and the finalseg HMM tables (hmm.txt, dumped from jieba's prob_*.py
 * by scripts/bootstrap). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/core.h"
#include "text/segment_zh_int.h"

/* ==== Prefix dictionary ==== */

static uint32_t hash_bytes(const char *p, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static size_t slot_of(const struct mtx_jieba *j, const char *p, size_t n)
{
    size_t i = hash_bytes(p, n) & (j->cap - 1);

    for (;; i = (i + 1) & (j->cap - 1)) {
        const struct mtx_jb_entry *e = &j->tab[i];

        if (e->len == 0)
            return i;
        if (e->len == n && memcmp(j->text + e->off, p, n) == 0)
            return i;
    }
}

int64_t mtx_jb_freq(const struct mtx_jieba *j, const char *p, size_t n)
{
    const struct mtx_jb_entry *e;

    if (n == 0 || j->cap == 0)
        return -1;
    e = &j->tab[slot_of(j, p, n)];
    return e->len ? e->freq : -1;
}

static enum mt_status grow(struct mtx_jieba *j)
{
    struct mtx_jb_entry *old = j->tab;
    size_t ocap = j->cap;
    size_t i;

    j->cap = ocap ? ocap * 2 : 1u << 16;
    j->tab = mt_calloc(j->cap, sizeof *j->tab);
    if (!j->tab) {
        j->tab = old;
        j->cap = ocap;
        return MT_ENOMEM;
    }
    for (i = 0; i < ocap; i++)
        if (old[i].len)
            j->tab[slot_of(j, j->text + old[i].off, old[i].len)] = old[i];
    mt_free(old);
    return MT_OK;
}

/* lfreq[word] = freq for the word; each shorter prefix not yet present
 * gets 0, as gen_pfdict does. 'off' is the word's offset in j->text. */
static enum mt_status put_word(struct mtx_jieba *j, size_t off, size_t n,
                               int64_t freq)
{
    const char *w = j->text + off;
    size_t k = 0;

    while (k < n) {
        size_t step = mtx_jb_char_len(w + k, n - k);
        struct mtx_jb_entry *e;

        if ((j->used + 1) * 2 > j->cap && grow(j) != MT_OK)
            return MT_ENOMEM;
        k += step;
        e = &j->tab[slot_of(j, w, k)];
        if (e->len == 0) {
            e->off = (uint32_t)off;
            e->len = (uint32_t)k;
            e->freq = 0;
            j->used++;
        }
        if (k == n)
            e->freq = freq;
    }
    return MT_OK;
}

/* One "word freq [tag]" line: line.strip() (ASCII whitespace), then
 * split(' ')[:2] and int(freq). */
static enum mt_status dict_line(struct mtx_jieba *j, size_t a, size_t b,
                                const char *path, size_t lineno,
                                struct mt_error *err)
{
    const char *t = j->text;
    size_t sp, e;
    int64_t f = 0;

    while (a < b && strchr(" \t\r\v\f", t[a]))
        a++;
    while (b > a && strchr(" \t\r\v\f", t[b - 1]))
        b--;
    for (sp = a; sp < b && t[sp] != ' '; sp++)
        ;
    for (e = sp + 1; e < b && t[e] >= '0' && t[e] <= '9'; e++)
        if (f <= (INT64_C(1) << 40)) /* past it: refused below, no overflow */
            f = f * 10 + (t[e] - '0');
    if (sp >= b || sp == a || e == sp + 1 || (e < b && t[e] != ' ') ||
        f > (INT64_C(1) << 40))
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: not a jieba dictionary line (word freq "
                       "[tag]); rerun scripts/bootstrap",
                       path, lineno);
    j->total += f;
    return put_word(j, a, sp - a, f);
}

static enum mt_status load_dict(struct mtx_jieba *j, const char *path,
                                struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t a = 0, i, line = 1;

    if (j->text_n > UINT32_MAX)
        return mt_fail(err, MT_ELIMIT, "%s: over 4 GiB", path);
    for (i = 0; i < j->text_n && st == MT_OK; i++) {
        if (j->text[i] != '\n')
            continue;
        st = dict_line(j, a, i, path, line++, err);
        a = i + 1;
    }
    if (st == MT_OK && a < j->text_n)
        st = dict_line(j, a, j->text_n, path, line, err);
    if (st == MT_OK && j->total <= 0)
        st = mt_fail(err, MT_EPARSE, "%s: no words; rerun scripts/bootstrap",
                     path);
    return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
}

/* ==== HMM tables ==== */

static int state_of(const char *s)
{
    const char *p = s && s[0] && !s[1] ? strchr("BMES", s[0]) : NULL;

    return p ? (int)(p - "BMES") : -1;
}

static enum mt_status add_emit(struct mtx_jieba *j, int s, long cp, double v)
{
    struct mtx_jb_emit *e = &j->emit[s];

    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 4096;
        struct mtx_jb_emit_row *r = mt_realloc(e->row, cap * sizeof *r);

        if (!r)
            return MT_ENOMEM;
        e->row = r;
        e->cap = cap;
    }
    if (e->n && e->row[e->n - 1].cp >= cp)
        return MT_EPARSE; /* the dump writes each state's rows sorted */
    e->row[e->n].cp = (int32_t)cp;
    e->row[e->n++].logp = v;
    return MT_OK;
}

/* "start S P", "trans S T P" or "emit S HEX P"; '#' lines are comments. */
static enum mt_status hmm_line(struct mtx_jieba *j, char *line)
{
    char *f[5] = {0};
    char *save = NULL, *end;
    int k = 0, s;
    double v;

    for (char *t = strtok_r(line, " \r", &save); t && k < 5;
         t = strtok_r(NULL, " \r", &save))
        f[k++] = t;
    if (k == 0 || f[0][0] == '#')
        return MT_OK;
    s = state_of(f[1]);
    v = f[k - 1] ? strtod(f[k - 1], &end) : 0;
    if (s < 0 || *end)
        return MT_EPARSE;
    if (k == 3 && strcmp(f[0], "start") == 0) {
        j->start[s] = v;
        return MT_OK;
    }
    if (k == 4 && strcmp(f[0], "trans") == 0 && state_of(f[2]) >= 0) {
        j->trans[s][state_of(f[2])] = v;
        return MT_OK;
    }
    if (k == 4 && strcmp(f[0], "emit") == 0) {
        long cp = strtol(f[2], &end, 16);
        return *end || cp < 0 || cp > 0x10ffff ? MT_EPARSE
                                               : add_emit(j, s, cp, v);
    }
    return MT_EPARSE;
}

static enum mt_status load_hmm(struct mtx_jieba *j, char *hmm, const char *path,
                               struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t line = 1;
    char *p, *nl;

    for (int s = 0; s < 4; s++)
        for (int t = 0; t < 4; t++)
            j->trans[s][t] = MTX_JB_MIN_FLOAT; /* trans_p[y0].get(y) */
    for (p = hmm; st == MT_OK && p && *p; p = nl, line++) {
        nl = strchr(p, '\n');
        if (nl)
            *nl++ = '\0';
        st = hmm_line(j, p);
    }
    if (st == MT_ENOMEM)
        return mt_fail(err, st, "out of memory");
    if (st != MT_OK)
        return mt_fail(err, st,
                       "%s:%zu: not a jieba HMM table line; rerun "
                       "scripts/bootstrap",
                       path, line - 1);
    if (!j->emit[0].n || !j->emit[3].n)
        return mt_fail(err, MT_EPARSE,
                       "%s: no emission table; rerun "
                       "scripts/bootstrap",
                       path);
    return MT_OK;
}

enum mt_status mtx_jieba_load(char *dict, size_t dict_n, char *hmm,
                              const char *dict_name, const char *hmm_name,
                              struct mtx_jieba **out, struct mt_error *err)
{
    struct mtx_jieba *j = mt_calloc(1, sizeof *j);
    enum mt_status st;

    *out = NULL;
    if (!j) {
        mt_free(dict);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    j->text = dict;
    j->text_n = dict_n;
    st = load_dict(j, dict_name, err);
    if (st == MT_OK)
        st = load_hmm(j, hmm, hmm_name, err);
    if (st != MT_OK) {
        mtx_jieba_close(j);
        return st;
    }
    j->log_total = log((double)j->total);
    *out = j;
    return MT_OK;
}

void mtx_jieba_close(struct mtx_jieba *j)
{
    if (!j)
        return;
    mt_free(j->tab);
    mt_free(j->text);
    for (int s = 0; s < 4; s++)
        mt_free(j->emit[s].row);
    mt_free(j);
}
