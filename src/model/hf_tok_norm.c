/* tokenizer.json normalizers and pre-tokenizers, as the tokenizers library
 * (Rust) runs them. Where transformers.js differs from it, this follows
 * the Rust library, which the models were trained with, and says so:
 * BertNormalizer pads CJK characters outside the BMP too (transformers.js
 * walks UTF-16 units and misses them), Punctuation isolates each mark
 * (transformers.js keeps a run together), Whitespace's \w is Unicode
 * (transformers.js's is ASCII). Precompiled runs the SentencePiece
 * charsmap as the Rust library does (transformers.js approximates it with
 * NFKC); a Precompiled without a charsmap gets transformers.js's
 * approximation. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <utf8proc.h>

#include "medtrust/core.h"
#include "model/hf_tok_int.h"
#include "text/utf8.h"

enum norm_kind {
    N_BERT,
    N_LOWER,
    N_NFC,
    N_NFD,
    N_NFKC,
    N_NFKD,
    N_STRIP_ACC,
    N_STRIP,
    N_REPLACE,
    N_PREPEND,
    N_PRECOMPILED,
    N_SEQ,
};

struct mtx_hf_norm {
    enum norm_kind k;
    int clean, chinese, lower, strip_acc; /* BertNormalizer */
    int left, right;                      /* Strip */
    struct mtx_cpv pat, content;          /* Replace, Prepend */
    size_t min_rep; /* Replace: pat[0] repeated >= min_rep; 0 = literal */
    uint32_t *trie; /* Precompiled: the charsmap's double array, or NULL */
    size_t ntrie;
    char *repl; /* its NUL-separated replacements */
    size_t nrepl;
    struct mtx_hf_norm **seq;
    size_t nseq;
};

static enum mt_status charsmap_apply(const struct mtx_hf_norm *n,
                                     struct mtx_cpv *t);

/* ==== Unicode helpers ==== */

int mtx_cp_is_space(uint32_t c)
{
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 ||
        c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
        c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000)
        return 1;
    return 0;
}

static utf8proc_category_t cat(uint32_t c)
{
    return utf8proc_category((utf8proc_int32_t)c);
}

int mtx_cp_is_punct(uint32_t c)
{
    utf8proc_category_t k;

    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126))
        return 1;
    k = cat(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

/* Rust tokenizers' is_control: every "other" category but tab, newline
 * and carriage return. */
static int is_control(uint32_t c)
{
    utf8proc_category_t k;

    if (c == '\t' || c == '\n' || c == '\r')
        return 0;
    k = cat(c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF ||
           k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CS ||
           k == UTF8PROC_CATEGORY_CN;
}

/* The CJK blocks BERT pads with spaces (its _is_chinese_char). */
static int is_cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Swaps the contents of a and b. */
static void cpv_swap(struct mtx_cpv *a, struct mtx_cpv *b)
{
    struct mtx_cpv t = *a;

    *a = *b;
    *b = t;
}

/* Runs utf8proc_map with 'opts' over t. */
static enum mt_status unicode_form(struct mtx_cpv *t, int opts)
{
    size_t n = 0;
    char *s = mtx_cp_utf8(t->c, t->n, &n);
    utf8proc_uint8_t *o = NULL;
    utf8proc_ssize_t r;
    enum mt_status st;

    if (!s)
        return MT_ENOMEM;
    r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &o,
                     (utf8proc_option_t)opts);
    mt_free(s);
    if (r < 0)
        return r == UTF8PROC_ERROR_NOMEM ? MT_ENOMEM : MT_EINVAL;
    t->n = 0;
    st = mtx_cp_decode((const char *)o, (size_t)r, t);
    free(o); /* utf8proc allocates with malloc */
    return st;
}

/* Full lowercase mapping per character, as Rust's char::to_lowercase
 * (the one multi-character mapping is U+0130). */
static enum mt_status lowercase(struct mtx_cpv *t)
{
    struct mtx_cpv o = {0};
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < t->n; i++) {
        if (t->c[i] == 0x130) {
            st = mtx_cpv_push(&o, 'i');
            if (st == MT_OK)
                st = mtx_cpv_push(&o, 0x307);
            continue;
        }
        st = mtx_cpv_push(
            &o, (uint32_t)utf8proc_tolower((utf8proc_int32_t)t->c[i]));
    }
    if (st == MT_OK)
        cpv_swap(t, &o);
    mtx_cpv_free(&o);
    return st;
}

/* Drops code points of the mark categories: Mn alone for BertNormalizer,
 * Mn, Mc and Me for StripAccents. */
static void drop_marks(struct mtx_cpv *t, int all_marks)
{
    size_t i, k = 0;

    for (i = 0; i < t->n; i++) {
        utf8proc_category_t c = cat(t->c[i]);
        int m = c == UTF8PROC_CATEGORY_MN ||
                (all_marks &&
                 (c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME));
        if (!m)
            t->c[k++] = t->c[i];
    }
    t->n = k;
}

#define NF_D (UTF8PROC_STABLE | UTF8PROC_DECOMPOSE)
#define NF_C (UTF8PROC_STABLE | UTF8PROC_COMPOSE)

/* ==== BertNormalizer ==== */

static enum mt_status bert_clean(const struct mtx_hf_norm *n, struct mtx_cpv *t)
{
    struct mtx_cpv o = {0};
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < t->n; i++) {
        uint32_t c = t->c[i];
        if (n->clean && (c == 0 || c == 0xFFFD || is_control(c)))
            continue;
        if (n->clean && mtx_cp_is_space(c))
            c = ' ';
        if (n->chinese && is_cjk(c)) {
            st = mtx_cpv_push(&o, ' ');
            if (st == MT_OK)
                st = mtx_cpv_push(&o, c);
            if (st == MT_OK)
                st = mtx_cpv_push(&o, ' ');
            continue;
        }
        st = mtx_cpv_push(&o, c);
    }
    if (st == MT_OK)
        cpv_swap(t, &o);
    mtx_cpv_free(&o);
    return st;
}

static enum mt_status bert_norm(const struct mtx_hf_norm *n, struct mtx_cpv *t)
{
    enum mt_status st = bert_clean(n, t);
    int strip = n->strip_acc < 0 ? n->lower : n->strip_acc;

    if (st == MT_OK && n->lower)
        st = lowercase(t);
    if (st == MT_OK && strip) {
        st = unicode_form(t, NF_D);
        if (st == MT_OK)
            drop_marks(t, 0);
    }
    return st;
}

/* ==== Replace, Strip, Prepend, Precompiled ==== */

/* Length of the match of n's pattern at t[i], 0 when none. */
static size_t match_at(const struct mtx_hf_norm *n, const struct mtx_cpv *t,
                       size_t i)
{
    size_t k = 0;

    if (n->min_rep == 0) {
        if (n->pat.n == 0 || i + n->pat.n > t->n ||
            memcmp(t->c + i, n->pat.c, n->pat.n * sizeof *t->c) != 0)
            return 0;
        return n->pat.n;
    }
    while (i + k < t->n && t->c[i + k] == n->pat.c[0])
        k++;
    return k >= n->min_rep ? k : 0;
}

static enum mt_status replace(const struct mtx_hf_norm *n, struct mtx_cpv *t)
{
    struct mtx_cpv o = {0};
    enum mt_status st = MT_OK;
    size_t i = 0, j;

    while (st == MT_OK && i < t->n) {
        size_t m = match_at(n, t, i);
        if (m == 0) {
            st = mtx_cpv_push(&o, t->c[i++]);
            continue;
        }
        for (j = 0; st == MT_OK && j < n->content.n; j++)
            st = mtx_cpv_push(&o, n->content.c[j]);
        i += m;
    }
    if (st == MT_OK)
        cpv_swap(t, &o);
    mtx_cpv_free(&o);
    return st;
}

static void strip(const struct mtx_hf_norm *n, struct mtx_cpv *t)
{
    size_t a = 0, b = t->n;

    while (n->left && a < b && mtx_cp_is_space(t->c[a]))
        a++;
    while (n->right && b > a && mtx_cp_is_space(t->c[b - 1]))
        b--;
    memmove(t->c, t->c + a, (b - a) * sizeof *t->c);
    t->n = b - a;
}

static enum mt_status prepend(const struct mtx_hf_norm *n, struct mtx_cpv *t)
{
    struct mtx_cpv o = {0};
    enum mt_status st = MT_OK;
    size_t i;

    if (t->n == 0) /* the library prepends to non-empty text only */
        return MT_OK;
    for (i = 0; st == MT_OK && i < n->content.n; i++)
        st = mtx_cpv_push(&o, n->content.c[i]);
    for (i = 0; st == MT_OK && i < t->n; i++)
        st = mtx_cpv_push(&o, t->c[i]);
    if (st == MT_OK)
        cpv_swap(t, &o);
    mtx_cpv_free(&o);
    return st;
}

/* SentencePiece's nmt_nfkc as transformers.js applies it: controls
 * dropped, the space-like characters mapped to ' ', then NFKC. */
static enum mt_status approx_nfkc(struct mtx_cpv *t)
{
    size_t i, k = 0;

    for (i = 0; i < t->n; i++) {
        uint32_t c = t->c[i];
        if ((c >= 1 && c <= 8) || c == 0x0B || (c >= 0x0E && c <= 0x1F) ||
            c == 0x7F || c == 0x8F || c == 0x9F)
            continue;
        if (c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0xA0 ||
            c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || c == 0x2028 ||
            c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x2581 ||
            c == 0x3000 || c == 0xFEFF || c == 0xFFFD)
            c = ' ';
        t->c[k++] = c;
    }
    t->n = k;
    return unicode_form(t, NF_C | UTF8PROC_COMPAT);
}

enum mt_status mtx_hf_norm_apply(const struct mtx_hf_norm *n, struct mtx_cpv *t)
{
    enum mt_status st = MT_OK;
    size_t i;

    if (!n)
        return MT_OK;
    switch (n->k) {
    case N_BERT:
        return bert_norm(n, t);
    case N_LOWER:
        return lowercase(t);
    case N_NFC:
        return unicode_form(t, NF_C);
    case N_NFD:
        return unicode_form(t, NF_D);
    case N_NFKC:
        return unicode_form(t, NF_C | UTF8PROC_COMPAT);
    case N_NFKD:
        return unicode_form(t, NF_D | UTF8PROC_COMPAT);
    case N_STRIP_ACC:
        drop_marks(t, 1);
        return MT_OK;
    case N_STRIP:
        strip(n, t);
        return MT_OK;
    case N_REPLACE:
        return replace(n, t);
    case N_PREPEND:
        return prepend(n, t);
    case N_PRECOMPILED:
        return n->trie ? charsmap_apply(n, t) : approx_nfkc(t);
    case N_SEQ:
        for (i = 0; st == MT_OK && i < n->nseq; i++)
            st = mtx_hf_norm_apply(n->seq[i], t);
        return st;
    }
    return MT_OK;
}

void mtx_hf_norm_free(struct mtx_hf_norm *n)
{
    size_t i;

    if (!n)
        return;
    for (i = 0; i < n->nseq; i++)
        mtx_hf_norm_free(n->seq[i]);
    mt_free(n->seq);
    mtx_cpv_free(&n->pat);
    mtx_cpv_free(&n->content);
    mt_free(n->trie);
    mt_free(n->repl);
    mt_free(n);
}

/* ==== SentencePiece's precompiled charsmap ==== */

/* The value of the shortest key in the charsmap's double array (darts)
 * that is a prefix of s[0..n), or -1: what Hugging Face's spm_precompiled
 * takes (its first common-prefix result). */
static long first_prefix(const struct mtx_hf_norm *m, const unsigned char *s,
                         size_t n)
{
    size_t pos, i;
    uint32_t u = m->trie[0];

#define DA_OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))
    pos = DA_OFFSET(u);
    for (i = 0; i < n && s[i]; i++) {
        pos ^= s[i];
        if (pos >= m->ntrie)
            return -1;
        u = m->trie[pos];
        if ((u & ((1u << 31) | 0xFFu)) != s[i])
            return -1;
        pos ^= DA_OFFSET(u);
        if (((u >> 8) & 1u) && pos < m->ntrie)
            return (long)(m->trie[pos] & ((1u << 31) - 1));
    }
#undef DA_OFFSET
    return -1;
}

/* Appends the replacement of chunk s[0..n) to o; 0 when there is none. */
static int transform(const struct mtx_hf_norm *m, const char *s, size_t n,
                     struct mtx_cpv *o, enum mt_status *st)
{
    long v = first_prefix(m, (const unsigned char *)s, n);
    size_t e;

    if (v < 0 || (size_t)v >= m->nrepl)
        return 0;
    e = (size_t)v;
    while (e < m->nrepl && m->repl[e])
        e++;
    *st = mtx_cp_decode(m->repl + v, e - (size_t)v, o);
    return 1;
}

/* One grapheme cluster c[0..k): replaced whole when it is under 6 bytes
 * and a rule matches, else character by character (spm_precompiled's
 * normalize_string, "weird" by its author's own word, kept as it is). */
static enum mt_status charsmap_grapheme(const struct mtx_hf_norm *m,
                                        const uint32_t *c, size_t k,
                                        struct mtx_cpv *o)
{
    size_t len = 0, i;
    char *s = mtx_cp_utf8(c, k, &len);
    enum mt_status st = s ? MT_OK : MT_ENOMEM;

    if (st == MT_OK && len < 6 && transform(m, s, len, o, &st)) {
        mt_free(s);
        return st;
    }
    for (i = 0; st == MT_OK && i < k; i++) {
        char one[4];
        size_t w = mtx_utf8_encode((int32_t)c[i], one);
        if (!transform(m, one, w, o, &st))
            st = mtx_cpv_push(o, c[i]);
    }
    mt_free(s);
    return st;
}

static enum mt_status charsmap_apply(const struct mtx_hf_norm *n,
                                     struct mtx_cpv *t)
{
    struct mtx_cpv o = {0};
    enum mt_status st = MT_OK;
    utf8proc_int32_t state = 0;
    size_t a = 0, i;

    for (i = 1; st == MT_OK && i <= t->n; i++) {
        if (i < t->n && !utf8proc_grapheme_break_stateful(
                            (utf8proc_int32_t)t->c[i - 1],
                            (utf8proc_int32_t)t->c[i], &state))
            continue;
        st = charsmap_grapheme(n, t->c + a, i - a, &o);
        a = i;
        state = 0;
    }
    if (st == MT_OK)
        cpv_swap(t, &o);
    mtx_cpv_free(&o);
    return st;
}

static int b64(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes base64 s (padding optional) into a new buffer. */
static unsigned char *b64_decode(const char *s, size_t n, size_t *out)
{
    unsigned char *d = mt_malloc(n / 4 * 3 + 3);
    uint32_t acc = 0;
    size_t i, k = 0;
    int bits = 0;

    for (i = 0; d && i < n && s[i] != '='; i++) {
        int v = b64((unsigned char)s[i]);
        if (v < 0) {
            mt_free(d);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            d[k++] = (unsigned char)(acc >> bits);
        }
    }
    *out = k;
    return d;
}

/* [u32 trie bytes][trie: u32 units, little-endian][replacements]. */
static enum mt_status read_charsmap(const json_t *j, const char *path,
                                    struct mtx_hf_norm *n, struct mt_error *err)
{
    const json_t *v = json_object_get(j, "precompiled_charsmap");
    size_t len = 0, ts, i;
    unsigned char *b;

    if (!json_is_string(v) || json_string_length(v) == 0)
        return MT_OK; /* none: transformers.js's approximation */
    b = b64_decode(json_string_value(v), json_string_length(v), &len);
    ts = b && len >= 4 ? (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 |
                             (size_t)b[3] << 24
                       : 0;
    if (!b || ts == 0 || ts % 4 || ts > len - 4) {
        mt_free(b);
        return mt_fail(err, MT_EPARSE,
                       "%s: normalizer Precompiled: precompiled_charsmap is "
                       "not a SentencePiece charsmap",
                       path);
    }
    n->ntrie = ts / 4;
    n->trie = mt_malloc(ts);
    n->nrepl = len - 4 - ts;
    n->repl = mt_malloc(n->nrepl + 1);
    for (i = 0; n->trie && i < n->ntrie; i++)
        n->trie[i] = (uint32_t)b[4 + 4 * i] | (uint32_t)b[5 + 4 * i] << 8 |
                     (uint32_t)b[6 + 4 * i] << 16 |
                     (uint32_t)b[7 + 4 * i] << 24;
    if (n->repl)
        memcpy(n->repl, b + 4 + ts, n->nrepl);
    mt_free(b);
    if (!n->trie || !n->repl)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    return MT_OK;
}

/* ==== Reading normalizers ==== */

/* A boolean field: 1, 0, or 'dflt' when absent or null. */
static int jbool(const json_t *o, const char *k, int dflt)
{
    const json_t *v = json_object_get(o, k);

    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static enum mt_status jstr_cp(const json_t *o, const char *k,
                              struct mtx_cpv *out)
{
    const json_t *v = json_object_get(o, k);

    if (!json_is_string(v))
        return MT_EPARSE;
    return mtx_cp_decode(json_string_value(v), json_string_length(v), out);
}

/* A Replace pattern: {"String": s}, or {"Regex": r} when r is a literal
 * without metacharacters or "C{N,}" / "C+" for one character C. */
static enum mt_status read_pattern(const json_t *p, struct mtx_hf_norm *n)
{
    const char *r = json_string_value(json_object_get(p, "Regex"));
    size_t len, i;
    unsigned long m;
    char *end;

    if (json_is_string(json_object_get(p, "String")))
        return jstr_cp(p, "String", &n->pat);
    if (!r)
        return MT_EPARSE;
    len = strlen(r);
    if (len >= 2 && strcspn(r, "\\^$.|?*+()[]{}") == len - 1 &&
        r[len - 1] == '+' && (unsigned char)r[0] < 0x80) {
        n->min_rep = 1;
        return mtx_cpv_push(&n->pat, (unsigned char)r[0]);
    }
    if (len >= 5 && (unsigned char)r[0] < 0x80 &&
        !strchr("\\^$.|?*+()[]{}", r[0]) && r[1] == '{' &&
        (m = strtoul(r + 2, &end, 10)) > 0 && strcmp(end, ",}") == 0) {
        n->min_rep = m;
        return mtx_cpv_push(&n->pat, (unsigned char)r[0]);
    }
    for (i = 0; i < len; i++)
        if (strchr("\\^$.|?*+()[]{}", r[i]))
            return MT_EUNSUPPORTED;
    return mtx_cp_decode(r, len, &n->pat);
}

static enum mt_status norm_seq(const json_t *j, const char *path,
                               struct mtx_hf_norm *n, struct mt_error *err)
{
    const json_t *a = json_object_get(j, "normalizers");
    size_t i;
    enum mt_status st = MT_OK;

    if (!json_is_array(a))
        return mt_fail(err, MT_EPARSE,
                       "%s: normalizer Sequence has no "
                       "\"normalizers\" array",
                       path);
    n->seq = mt_calloc(json_array_size(a) + 1, sizeof *n->seq);
    if (!n->seq)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; st == MT_OK && i < json_array_size(a); i++) {
        st = mtx_hf_norm_new(json_array_get(a, i), path, &n->seq[n->nseq], err);
        if (st == MT_OK && n->seq[n->nseq])
            n->nseq++;
    }
    return st;
}

static const struct {
    const char *name;
    enum norm_kind k;
} norm_names[] = {
    {"BertNormalizer", N_BERT},
    {"Lowercase", N_LOWER},
    {"NFC", N_NFC},
    {"NFD", N_NFD},
    {"NFKC", N_NFKC},
    {"NFKD", N_NFKD},
    {"StripAccents", N_STRIP_ACC},
    {"Strip", N_STRIP},
    {"Replace", N_REPLACE},
    {"Prepend", N_PREPEND},
    {"Precompiled", N_PRECOMPILED},
    {"Sequence", N_SEQ},
};

static enum mt_status norm_fields(const json_t *j, const char *path,
                                  struct mtx_hf_norm *n, struct mt_error *err)
{
    enum mt_status st = MT_OK;

    n->clean = jbool(j, "clean_text", 1);
    n->chinese = jbool(j, "handle_chinese_chars", 1);
    n->lower = jbool(j, "lowercase", 1);
    n->strip_acc = jbool(j, "strip_accents", -1);
    n->left = jbool(j, "strip_left", 1);
    n->right = jbool(j, "strip_right", 1);
    if (n->k == N_REPLACE) {
        st = read_pattern(json_object_get(j, "pattern"), n);
        if (st == MT_OK)
            st = jstr_cp(j, "content", &n->content);
    } else if (n->k == N_PREPEND) {
        st = jstr_cp(j, "prepend", &n->content);
    } else if (n->k == N_SEQ) {
        return norm_seq(j, path, n, err);
    } else if (n->k == N_PRECOMPILED) {
        return read_charsmap(j, path, n, err);
    }
    if (st == MT_EUNSUPPORTED)
        return mt_fail(err, st,
                       "%s: normalizer Replace: the regex pattern "
                       "is not one medtrust implements (a literal, C+ or "
                       "C{N,})",
                       path);
    if (st != MT_OK)
        return mt_fail(err, st, "%s: normalizer %s: bad or missing fields",
                       path, norm_names[n->k].name);
    return MT_OK;
}

enum mt_status mtx_hf_norm_new(const json_t *j, const char *path,
                               struct mtx_hf_norm **out, struct mt_error *err)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    struct mtx_hf_norm *n;
    enum mt_status st;
    size_t i;

    *out = NULL;
    if (!j || json_is_null(j))
        return MT_OK;
    for (i = 0; type && i < sizeof norm_names / sizeof norm_names[0]; i++)
        if (strcmp(type, norm_names[i].name) == 0)
            break;
    if (!type || i == sizeof norm_names / sizeof norm_names[0])
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: normalizer type '%s' is not supported", path,
                       type ? type : "(none)");
    n = mt_calloc(1, sizeof *n);
    if (!n)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    n->k = norm_names[i].k;
    st = norm_fields(j, path, n, err);
    if (st != MT_OK) {
        mtx_hf_norm_free(n);
        return st;
    }
    *out = n;
    return MT_OK;
}
