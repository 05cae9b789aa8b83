/* Private to segment_zh*.c: the loaded jieba data. */
#ifndef MT_TEXT_SEGMENT_ZH_INT_H
#define MT_TEXT_SEGMENT_ZH_INT_H

#include <math.h>
#include <stdint.h>

#include "text/segment_zh.h"

/* finalseg's MIN_FLOAT: the log probability of what a table lacks. */
#define MTX_JB_MIN_FLOAT (-3.14e100)

/* The HMM states in jieba's order 'BMES'. */
enum { MTX_JB_B, MTX_JB_M, MTX_JB_E, MTX_JB_S };

/* One dictionary word or word prefix: bytes text[off, off + len); freq 0
 * for a prefix that is no word (jieba's lfreq). len 0: an empty slot. */
struct mtx_jb_entry {
    uint32_t off;
    uint32_t len;
    int64_t freq;
};

struct mtx_jb_emit_row {
    int32_t cp;
    double logp;
};

/* emit_p[state], sorted by code point. */
struct mtx_jb_emit {
    struct mtx_jb_emit_row *row;
    size_t n, cap;
};

struct mtx_jieba {
    char *text; /* dict.txt, which the entries point into */
    size_t text_n;
    struct mtx_jb_entry *tab; /* open addressing, cap a power of two */
    size_t cap, used;
    int64_t total;    /* sum of every line's freq (duplicates included) */
    double log_total; /* log(total) */
    double start[4];
    double trans[4][4]; /* MIN_FLOAT where jieba's table has no entry */
    struct mtx_jb_emit emit[4];
};

/* Frequency of the word p[0..n): >0 a word, 0 a prefix only, -1 absent. */
int64_t mtx_jb_freq(const struct mtx_jieba *j, const char *p, size_t n);

/* Bytes of the character at p (1..4; 1 for an ill-formed byte). */
size_t mtx_jb_char_len(const char *p, size_t n);

#endif
