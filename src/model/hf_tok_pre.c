/* tokenizer.json pre-tokenizers as the tokenizers library (Rust) runs them:
 * BertPreTokenizer, Whitespace, WhitespaceSplit, Punctuation, Digits,
 * Metaspace, ByteLevel (GPT-2's split pattern, written out as a scanner)
 * and Sequence. */
#include <string.h>
#include <utf8proc.h>

#include "medtrust/core.h"
#include "model/hf_tok_int.h"

enum pre_kind {
    P_BERT,
    P_WS,
    P_WS_SPLIT,
    P_PUNCT,
    P_DIGITS,
    P_META,
    P_BYTE,
    P_SEQ,
};

struct mtx_hf_pre {
    enum pre_kind k;
    int individual;   /* Digits */
    uint32_t repl;    /* Metaspace replacement */
    int prepend;      /* Metaspace: 0 never, 1 always, 2 first */
    int split;        /* Metaspace */
    int prefix_space; /* ByteLevel */
    int use_regex;    /* ByteLevel */
    struct mtx_hf_pre **seq;
    size_t nseq;
};

static utf8proc_category_t cat(uint32_t c)
{
    return utf8proc_category((utf8proc_int32_t)c);
}

static int is_letter(uint32_t c)
{
    utf8proc_category_t k = cat(c);

    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

static int is_number(uint32_t c)
{
    utf8proc_category_t k = cat(c);

    return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

/* Unicode \w: letters, marks, decimal and letter numbers, connector
 * punctuation, and the joiners. */
static int is_word(uint32_t c)
{
    utf8proc_category_t k = cat(c);

    return is_letter(c) ||
           (k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME) ||
           k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL ||
           k == UTF8PROC_CATEGORY_PC || c == 0x200C || c == 0x200D;
}

/* ==== Splitting by a class ==== */

enum behavior { REMOVED, ISOLATED, CONTIGUOUS };

/* Splits piece t by 'is': matches removed, each isolated, or runs of
 * matches kept together (Contiguous); the rest are pieces of their own. */
static enum mt_status split_by(const struct mtx_cpv *t, int (*is)(uint32_t),
                               enum behavior b, struct mtx_pieces *out)
{
    size_t i = 0, s = 0;
    enum mt_status st = MT_OK;

    while (st == MT_OK && i < t->n) {
        size_t e;
        if (!is(t->c[i])) {
            i++;
            continue;
        }
        if (i > s)
            st = mtx_pieces_push(out, t->c + s, i - s);
        e = i + 1;
        while (b == CONTIGUOUS && e < t->n && is(t->c[e]))
            e++;
        if (st == MT_OK && b != REMOVED)
            st = mtx_pieces_push(out, t->c + i, e - i);
        i = s = e;
    }
    if (st == MT_OK && s < t->n)
        st = mtx_pieces_push(out, t->c + s, t->n - s);
    return st;
}

static enum mt_status bert_pre(const struct mtx_cpv *t, struct mtx_pieces *out)
{
    struct mtx_pieces ws = {0};
    enum mt_status st = split_by(t, mtx_cp_is_space, REMOVED, &ws);
    size_t i;

    for (i = 0; st == MT_OK && i < ws.n; i++)
        st = split_by(&ws.v[i], mtx_cp_is_punct, ISOLATED, out);
    mtx_pieces_free(&ws);
    return st;
}

/* Whitespace: the matches of \w+|[^\w\s]+. */
static enum mt_status ws_pre(const struct mtx_cpv *t, struct mtx_pieces *out)
{
    size_t i = 0;
    enum mt_status st = MT_OK;

    while (st == MT_OK && i < t->n) {
        size_t e = i + 1;
        int w = is_word(t->c[i]);
        if (mtx_cp_is_space(t->c[i])) {
            i++;
            continue;
        }
        while (e < t->n && !mtx_cp_is_space(t->c[e]) && is_word(t->c[e]) == w)
            e++;
        st = mtx_pieces_push(out, t->c + i, e - i);
        i = e;
    }
    return st;
}

/* ==== Metaspace ==== */

static enum mt_status meta_pre(const struct mtx_hf_pre *p,
                               const struct mtx_cpv *t, int first,
                               struct mtx_pieces *out)
{
    struct mtx_cpv s = {0};
    enum mt_status st = MT_OK;
    size_t i, a = 0;

    if ((p->prepend == 1 || (p->prepend == 2 && first)) &&
        (t->n == 0 || (t->c[0] != ' ' && t->c[0] != p->repl)))
        st = mtx_cpv_push(&s, p->repl);
    for (i = 0; st == MT_OK && i < t->n; i++)
        st = mtx_cpv_push(&s, t->c[i] == ' ' ? p->repl : t->c[i]);
    if (st == MT_OK && !p->split && s.n)
        st = mtx_pieces_push(out, s.c, s.n);
    /* MergedWithNext: each replacement starts a piece; consecutive ones
     * stay together with the text after them. */
    for (i = 1; st == MT_OK && p->split && i <= s.n; i++) {
        if (i < s.n && !(s.c[i] == p->repl && s.c[i - 1] != p->repl))
            continue;
        st = mtx_pieces_push(out, s.c + a, i - a);
        a = i;
    }
    mtx_cpv_free(&s);
    return st;
}

/* ==== ByteLevel ==== */

/* GPT-2's byte-to-character table: printable bytes map to themselves,
 * the others to U+0100 onwards in byte order. */
static uint32_t byte_char(unsigned char b)
{
    unsigned n = 0, i;

    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
        return b;
    for (i = 0; i < b; i++)
        if (!((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE))
            n++;
    return 256 + n;
}

/* Runs of characters of one class from j; the end. */
static size_t run(const struct mtx_cpv *t, size_t j, int (*is)(uint32_t))
{
    while (j < t->n && is(t->c[j]))
        j++;
    return j;
}

static int is_other(uint32_t c)
{
    return !mtx_cp_is_space(c) && !is_letter(c) && !is_number(c);
}

/* The end of the match of
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * at t[i]. */
static size_t gpt2_match(const struct mtx_cpv *t, size_t i)
{
    static const char *const cont[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    static int (*const cls[3])(uint32_t) = {is_letter, is_number, is_other};
    size_t j = i + (t->c[i] == ' '), k, e;

    for (k = 0; t->c[i] == '\'' && k < 7; k++) {
        size_t l = strlen(cont[k]);
        if (i + l < t->n && t->c[i + 1] == (uint32_t)cont[k][0] &&
            (l == 1 || t->c[i + 2] == (uint32_t)cont[k][1]))
            return i + 1 + l;
    }
    for (k = 0; k < 3; k++)
        if (j < t->n && cls[k](t->c[j]))
            return run(t, j, cls[k]);
    e = run(t, i, mtx_cp_is_space);
    if (e < t->n && e - i > 1)
        return e - 1; /* \s+(?!\S): leave the last space to the word */
    return e > i ? e : i + 1;
}

static enum mt_status byte_piece(const uint32_t *c, size_t n,
                                 struct mtx_pieces *out)
{
    size_t len = 0, i;
    char *s = mtx_cp_utf8(c, n, &len);
    struct mtx_cpv v = {0};
    enum mt_status st = s ? MT_OK : MT_ENOMEM;

    for (i = 0; st == MT_OK && i < len; i++)
        st = mtx_cpv_push(&v, byte_char((unsigned char)s[i]));
    if (st == MT_OK)
        st = mtx_pieces_push(out, v.c, v.n);
    mtx_cpv_free(&v);
    mt_free(s);
    return st;
}

static enum mt_status byte_pre(const struct mtx_hf_pre *p,
                               const struct mtx_cpv *t, struct mtx_pieces *out)
{
    struct mtx_cpv s = {0};
    enum mt_status st = MT_OK;
    size_t i = 0;

    if (p->prefix_space && (t->n == 0 || t->c[0] != ' '))
        st = mtx_cpv_push(&s, ' ');
    for (i = 0; st == MT_OK && i < t->n; i++)
        st = mtx_cpv_push(&s, t->c[i]);
    if (st == MT_OK && !p->use_regex && s.n)
        st = byte_piece(s.c, s.n, out);
    for (i = 0; st == MT_OK && p->use_regex && i < s.n;) {
        size_t e = gpt2_match(&s, i);
        st = byte_piece(s.c + i, e - i, out);
        i = e;
    }
    mtx_cpv_free(&s);
    return st;
}

/* ==== Dispatch ==== */

static enum mt_status apply_one(const struct mtx_hf_pre *p,
                                const struct mtx_cpv *t, int first,
                                struct mtx_pieces *out);

static enum mt_status seq_pre(const struct mtx_hf_pre *p,
                              const struct mtx_cpv *t, int first,
                              struct mtx_pieces *out)
{
    struct mtx_pieces cur = {0}, next = {0};
    enum mt_status st = mtx_pieces_push(&cur, t->c, t->n);
    size_t i, k;

    for (k = 0; st == MT_OK && k < p->nseq; k++) {
        for (i = 0; st == MT_OK && i < cur.n; i++)
            st = apply_one(p->seq[k], &cur.v[i], first, &next);
        mtx_pieces_free(&cur);
        cur = next;
        memset(&next, 0, sizeof next);
    }
    for (i = 0; st == MT_OK && i < cur.n; i++)
        st = mtx_pieces_push(out, cur.v[i].c, cur.v[i].n);
    mtx_pieces_free(&cur);
    return st;
}

static enum mt_status apply_one(const struct mtx_hf_pre *p,
                                const struct mtx_cpv *t, int first,
                                struct mtx_pieces *out)
{
    switch (p->k) {
    case P_BERT:
        return bert_pre(t, out);
    case P_WS:
        return ws_pre(t, out);
    case P_WS_SPLIT:
        return split_by(t, mtx_cp_is_space, REMOVED, out);
    case P_PUNCT:
        return split_by(t, mtx_cp_is_punct, ISOLATED, out);
    case P_DIGITS:
        return split_by(t, is_number, p->individual ? ISOLATED : CONTIGUOUS,
                        out);
    case P_META:
        return meta_pre(p, t, first, out);
    case P_BYTE:
        return byte_pre(p, t, out);
    case P_SEQ:
        return seq_pre(p, t, first, out);
    }
    return MT_EINTERNAL;
}

enum mt_status mtx_hf_pre_apply(const struct mtx_hf_pre *p,
                                const struct mtx_cpv *t, int first,
                                struct mtx_pieces *out)
{
    if (!p)
        return t->n ? mtx_pieces_push(out, t->c, t->n) : MT_OK;
    return apply_one(p, t, first, out);
}

void mtx_hf_pre_free(struct mtx_hf_pre *p)
{
    size_t i;

    if (!p)
        return;
    for (i = 0; i < p->nseq; i++)
        mtx_hf_pre_free(p->seq[i]);
    mt_free(p->seq);
    mt_free(p);
}

/* ==== Reading ==== */

static const char *const pre_names[] = {
    "BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation",
    "Digits",           "Metaspace",  "ByteLevel",       "Sequence",
};

static int jbool(const json_t *o, const char *k, int dflt)
{
    const json_t *v = json_object_get(o, k);

    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static enum mt_status meta_fields(const json_t *j, const char *path,
                                  struct mtx_hf_pre *p, struct mt_error *err)
{
    const char *r = json_string_value(json_object_get(j, "replacement"));
    const char *s = json_string_value(json_object_get(j, "prepend_scheme"));
    int32_t c = 0x2581;

    if (r &&
        (utf8proc_iterate((const utf8proc_uint8_t *)r, -1, &c) <= 0 || c < 0))
        return mt_fail(err, MT_EPARSE,
                       "%s: Metaspace replacement is not "
                       "UTF-8",
                       path);
    p->repl = (uint32_t)c;
    p->split = jbool(j, "split", 1);
    p->prepend = jbool(j, "add_prefix_space", 1); /* the older field */
    if (s)
        p->prepend = strcmp(s, "never") == 0   ? 0
                     : strcmp(s, "first") == 0 ? 2
                                               : 1;
    return MT_OK;
}

static enum mt_status pre_seq(const json_t *j, const char *path,
                              struct mtx_hf_pre *p, struct mt_error *err)
{
    const json_t *a = json_object_get(j, "pretokenizers");
    enum mt_status st = MT_OK;
    size_t i;

    if (!json_is_array(a))
        return mt_fail(err, MT_EPARSE,
                       "%s: pre_tokenizer Sequence has no "
                       "\"pretokenizers\" array",
                       path);
    p->seq = mt_calloc(json_array_size(a) + 1, sizeof *p->seq);
    if (!p->seq)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; st == MT_OK && i < json_array_size(a); i++) {
        st = mtx_hf_pre_new(json_array_get(a, i), path, &p->seq[p->nseq], err);
        if (st == MT_OK && p->seq[p->nseq])
            p->nseq++;
    }
    return st;
}

enum mt_status mtx_hf_pre_new(const json_t *j, const char *path,
                              struct mtx_hf_pre **out, struct mt_error *err)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    struct mtx_hf_pre *p;
    enum mt_status st = MT_OK;
    size_t i, n = sizeof pre_names / sizeof pre_names[0];

    *out = NULL;
    if (!j || json_is_null(j))
        return MT_OK;
    for (i = 0; type && i < n; i++)
        if (strcmp(type, pre_names[i]) == 0)
            break;
    if (!type || i == n)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: pre_tokenizer type '%s' is not supported", path,
                       type ? type : "(none)");
    p = mt_calloc(1, sizeof *p);
    if (!p)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    p->k = (enum pre_kind)i;
    p->individual = jbool(j, "individual_digits", 0);
    p->prefix_space = jbool(j, "add_prefix_space", 1);
    p->use_regex = jbool(j, "use_regex", 1);
    if (p->k == P_META)
        st = meta_fields(j, path, p, err);
    else if (p->k == P_SEQ)
        st = pre_seq(j, path, p, err);
    if (st != MT_OK) {
        mtx_hf_pre_free(p);
        return st;
    }
    *out = p;
    return MT_OK;
}
