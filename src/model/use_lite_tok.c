/* USE-lite tokenizer: the SentencePiece unigram segmentation of the
 * package's JavaScript (@energetic-ai/embeddings tokenizer.ts), step for
 * step, including its tie-breaking and its "best === 0" quirk. */
#include <string.h>
#include <utf8proc.h>

#include "medtrust/core.h"
#include "model/use_lite.h"

#define WORD_MARK 0x2581u /* U+2581 LOWER ONE EIGHTH BLOCK */
#define NFKC_OPTIONS (UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT)

/* ==== UTF-8 ==== */

/* Decodes one code point at s (n >= 1 bytes) as the WHATWG decoder (and
 * so Node) does: a maximal invalid subpart becomes one U+FFFD. Returns the
 * bytes consumed. */
static size_t decode_one(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char lo = 0x80, hi = 0xBF, b = s[0];
    size_t need, i;
    uint32_t c;

    *cp = 0xFFFDu;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        c = b & 0x1Fu;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        c = b & 0x0Fu;
        lo = b == 0xE0 ? 0xA0 : 0x80;
        hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        c = b & 0x07u;
        lo = b == 0xF0 ? 0x90 : 0x80;
        hi = b == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 1;
    }
    for (i = 1; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi)
            return i; /* the offending byte is decoded again */
        c = (c << 6) | (s[i] & 0x3Fu);
        lo = 0x80;
        hi = 0xBF;
    }
    *cp = c;
    return need + 1;
}

/* Copies text into valid UTF-8 (invalid parts -> U+FFFD). *out is freed
 * by the caller with mt_free. */
static enum mt_status sanitize(struct mt_str text, char **out, size_t *len)
{
    const unsigned char *s = (const unsigned char *)text.p;
    size_t i = 0, o = 0;
    char *buf = mt_malloc(text.n * 3 + 4);
    uint32_t cp;

    if (!buf)
        return MT_ENOMEM;
    while (i < text.n) {
        i += decode_one(s + i, text.n - i, &cp);
        o += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp,
                                          (utf8proc_uint8_t *)buf + o);
    }
    buf[o] = '\0';
    *out = buf;
    *len = o;
    return MT_OK;
}

/* Cuts n to at most max bytes without splitting a UTF-8 sequence. */
static size_t cut_utf8(const char *p, size_t n, size_t max)
{
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* NFKC of text as code points, with the word marks the JS adds:
 * "▁" + text.replace(/ /g, "▁") when non-empty. */
static enum mt_status symbols(struct mt_str text, int32_t **sym, size_t *n)
{
    char *u8 = NULL;
    size_t len, i;
    utf8proc_ssize_t need, got;
    int32_t *cp;
    enum mt_status st = sanitize(text, &u8, &len);

    if (st != MT_OK)
        return st;
    need = utf8proc_decompose((const utf8proc_uint8_t *)u8,
                              (utf8proc_ssize_t)len, NULL, 0, NFKC_OPTIONS);
    cp = need >= 0 ? mt_malloc(((size_t)need + 1) * sizeof *cp) : NULL;
    if (!cp) {
        mt_free(u8);
        return need >= 0 ? MT_ENOMEM : MT_EINTERNAL;
    }
    got = utf8proc_decompose((const utf8proc_uint8_t *)u8,
                             (utf8proc_ssize_t)len, cp + 1, need, NFKC_OPTIONS);
    mt_free(u8);
    if (got >= 0)
        got = utf8proc_normalize_utf32(cp + 1, got, NFKC_OPTIONS);
    if (got < 0) {
        mt_free(cp);
        return MT_EINTERNAL;
    }
    cp[0] = (int32_t)WORD_MARK;
    for (i = 1; i <= (size_t)got; i++)
        if (cp[i] == ' ')
            cp[i] = (int32_t)WORD_MARK;
    *sym = cp;
    *n = got > 0 ? (size_t)got + 1 : 0;
    return MT_OK;
}

/* ==== Trie ==== */

static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static uint64_t edge_key(uint32_t node, uint32_t cp)
{
    return ((uint64_t)node + 1) << 21 | cp;
}

/* Returns the child of 'node' along 'cp', or 0 (the root is never a
 * child). */
static uint32_t trie_child(const struct mt_ul_trie *t, uint32_t node,
                           uint32_t cp)
{
    uint64_t key = edge_key(node, cp);
    size_t i = slot_of(key, t->cap);

    while (t->keys[i]) {
        if (t->keys[i] == key)
            return t->child[i];
        i = (i + 1) & (t->cap - 1);
    }
    return 0;
}

static uint32_t trie_add(struct mt_ul_trie *t, uint32_t node, uint32_t cp)
{
    uint64_t key = edge_key(node, cp);
    size_t i = slot_of(key, t->cap);

    while (t->keys[i]) {
        if (t->keys[i] == key)
            return t->child[i];
        i = (i + 1) & (t->cap - 1);
    }
    t->keys[i] = key;
    t->child[i] = (uint32_t)t->n_nodes;
    t->piece[t->n_nodes] = -1;
    return (uint32_t)t->n_nodes++;
}

/* Inserts piece 'idx' as Trie.insert does: a later duplicate wins. */
static void insert_piece(struct mt_ul_model *m, uint32_t idx)
{
    const struct mt_ul_piece *p = &m->pieces[idx];
    const unsigned char *s = (const unsigned char *)m->strings + p->str_off;
    size_t i = 0;
    uint32_t node = 0, depth = 0, cp;
    uint16_t js = 0;

    while (i < p->str_len) {
        i += decode_one(s + i, p->str_len - i, &cp);
        js = (uint16_t)(js + (cp > 0xFFFF ? 2 : 1));
        depth++;
        if (idx >= MT_UL_RESERVED)
            node = trie_add(&m->trie, node, cp);
    }
    m->js_len[idx] = js;
    if (idx < MT_UL_RESERVED || depth == 0)
        return;
    m->trie.piece[node] = (int32_t)idx;
    if (depth > m->trie.max_depth)
        m->trie.max_depth = depth;
}

enum mt_status mtx_ul_trie_build(struct mt_ul_model *m)
{
    struct mt_ul_trie *t = &m->trie;
    size_t total = 1, i;

    for (i = 0; i < m->n_pieces; i++)
        total += m->pieces[i].str_len; /* bytes >= code points */
    t->cap = 1;
    while (t->cap < 2 * total)
        t->cap <<= 1;
    t->keys = mt_calloc(t->cap, sizeof *t->keys);
    t->child = mt_malloc(t->cap * sizeof *t->child);
    t->piece = mt_malloc(total * sizeof *t->piece);
    m->js_len = mt_calloc(m->n_pieces, sizeof *m->js_len);
    if (!t->keys || !t->child || !t->piece || !m->js_len)
        return MT_ENOMEM;
    t->piece[0] = -1;
    t->n_nodes = 1;
    for (i = 0; i < m->n_pieces; i++)
        insert_piece(m, (uint32_t)i);
    return MT_OK;
}

void mtx_ul_trie_free(struct mt_ul_trie *t)
{
    mt_free(t->keys);
    mt_free(t->child);
    mt_free(t->piece);
    memset(t, 0, sizeof *t);
}

/* ==== Viterbi ==== */

struct lattice {
    double *best;  /* best[e]: score of the best path to position e */
    int32_t *word; /* word[e]: last piece on that path */
};

/* The JS update rule, in the JS order (start ascending per end). */
static void relax(struct lattice *l, size_t s, size_t e, int32_t idx,
                  double score)
{
    double sc = score + l->best[s];

    if (l->best[e] == 0.0 || sc >= l->best[e]) {
        l->best[e] = sc;
        l->word[e] = idx;
    }
}

static void forward(const struct mt_ul_model *m, const int32_t *sym, size_t n,
                    struct lattice *l)
{
    size_t s, e;

    for (s = 0; s < n; s++) {
        uint32_t node = 0;
        int matched = 0;
        for (e = s + 1; e <= n; e++) {
            node = trie_child(&m->trie, node, (uint32_t)sym[e - 1]);
            if (!node)
                break;
            if (m->trie.piece[node] >= 0) {
                int32_t idx = m->trie.piece[node];
                relax(l, s, e, idx, m->pieces[idx].score);
                matched = 1;
            }
        }
        if (!matched) /* commonPrefixSearch's fallback: [ss[0]], 0, 0 */
            relax(l, s, s + 1, 0, 0.0);
    }
}

/* Walks back from the end (stepping by each piece's UTF-16 length, as the
 * JS does), merges runs of unknowns and reverses. Returns the count. */
static size_t backtrack(const struct mt_ul_model *m, const struct lattice *l,
                        size_t n, int32_t *ids)
{
    size_t k = 0, i;
    long iter = (long)n;
    int prev_unk = 0;

    while (iter > 0) {
        int32_t id = l->word[iter];
        if (!(prev_unk && id == 0))
            ids[k++] = id;
        prev_unk = id == 0;
        /* a crafted file could hold a zero-length piece 0: never stall */
        iter -= m->js_len[id] ? (long)m->js_len[id] : 1;
    }
    for (i = 0; i < k / 2; i++) {
        int32_t t = ids[i];
        ids[i] = ids[k - 1 - i];
        ids[k - 1 - i] = t;
    }
    return k;
}

enum mt_status mtx_ul_tokenize(const struct mt_ul_model *m, struct mt_str text,
                               int32_t **ids, size_t *n_ids)
{
    int32_t *sym = NULL;
    size_t n = 0;
    struct lattice l = {NULL, NULL};
    enum mt_status st;

    text.n = cut_utf8(text.p, text.n, MT_UL_MAX_TEXT);
    st = symbols(text, &sym, &n);
    if (st != MT_OK)
        return st;
    l.best = mt_calloc(n + 1, sizeof *l.best);
    l.word = mt_calloc(n + 1, sizeof *l.word);
    *ids = mt_malloc((n + 1) * sizeof **ids);
    if (!l.best || !l.word || !*ids) {
        mt_free(*ids);
        *ids = NULL;
        st = MT_ENOMEM;
    } else {
        forward(m, sym, n, &l);
        *n_ids = backtrack(m, &l, n, *ids);
    }
    mt_free(sym);
    mt_free(l.best);
    mt_free(l.word);
    return st;
}
