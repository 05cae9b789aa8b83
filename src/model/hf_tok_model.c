/* tokenizer.json models: WordPiece (greedy longest match, "##" pieces),
 * Unigram (Viterbi over the pieces' log probabilities, unknown characters
 * scored min - 10 and fused) and BPE (lowest-ranked merge first, the
 * leftmost on a tie), as the tokenizers library runs them. */
#include <float.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/hf_tok_int.h"
#include "text/utf8.h"

enum model_kind { M_WORDPIECE, M_UNIGRAM, M_BPE };

struct mtx_hf_model {
    enum model_kind k;
    struct mtx_vocab vocab;
    int32_t unk;      /* -1: none */
    char *prefix;     /* WordPiece / BPE continuing_subword_prefix */
    char *suffix;     /* BPE end_of_word_suffix */
    size_t max_chars; /* WordPiece max_input_chars_per_word */
    double *scores;   /* Unigram, by id */
    size_t nscores;
    double unk_score;
    size_t max_piece;       /* Unigram: longest piece in characters */
    struct mtx_vocab ranks; /* BPE: "a\0b" -> rank */
};

/* ==== The vocabulary map ==== */

static uint64_t hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h;
}

static enum mt_status vocab_grow(struct mtx_vocab *v)
{
    struct mtx_vocab g = {0};
    size_t i;

    g.cap = v->cap ? v->cap * 2 : 1024;
    g.keys = mt_calloc(g.cap, sizeof *g.keys);
    g.lens = mt_calloc(g.cap, sizeof *g.lens);
    g.ids = mt_calloc(g.cap, sizeof *g.ids);
    if (!g.keys || !g.lens || !g.ids) {
        mtx_vocab_free(&g);
        return MT_ENOMEM;
    }
    for (i = 0; i < v->cap; i++) {
        size_t h;
        if (!v->keys[i])
            continue;
        h = (size_t)hash(v->keys[i], v->lens[i]) & (g.cap - 1);
        while (g.keys[h])
            h = (h + 1) & (g.cap - 1);
        g.keys[h] = v->keys[i];
        g.lens[h] = v->lens[i];
        g.ids[h] = v->ids[i];
    }
    g.n = v->n;
    mt_free(v->keys);
    mt_free(v->lens);
    mt_free(v->ids);
    *v = g;
    return MT_OK;
}

enum mt_status mtx_vocab_put(struct mtx_vocab *v, const char *k, size_t n,
                             int32_t id)
{
    size_t h;

    if ((v->n + 1) * 2 > v->cap && vocab_grow(v) != MT_OK)
        return MT_ENOMEM;
    h = (size_t)hash(k, n) & (v->cap - 1);
    while (v->keys[h]) {
        if (v->lens[h] == n && memcmp(v->keys[h], k, n) == 0) {
            v->ids[h] = id;
            return MT_OK;
        }
        h = (h + 1) & (v->cap - 1);
    }
    v->keys[h] = mt_malloc(n + 1);
    if (!v->keys[h])
        return MT_ENOMEM;
    memcpy(v->keys[h], k, n);
    v->keys[h][n] = '\0';
    v->lens[h] = n;
    v->ids[h] = id;
    v->n++;
    return MT_OK;
}

int32_t mtx_vocab_get(const struct mtx_vocab *v, const char *k, size_t n)
{
    size_t h;

    if (!v->cap)
        return -1;
    h = (size_t)hash(k, n) & (v->cap - 1);
    while (v->keys[h]) {
        if (v->lens[h] == n && memcmp(v->keys[h], k, n) == 0)
            return v->ids[h];
        h = (h + 1) & (v->cap - 1);
    }
    return -1;
}

void mtx_vocab_free(struct mtx_vocab *v)
{
    size_t i;

    for (i = 0; v->keys && i < v->cap; i++)
        mt_free(v->keys[i]);
    mt_free(v->keys);
    mt_free(v->lens);
    mt_free(v->ids);
    memset(v, 0, sizeof *v);
}

/* ==== WordPiece ==== */

/* UTF-8 of c[0..n) appended at d (room for 4 bytes a code point). */
static size_t put_utf8(const uint32_t *c, size_t n, char *d)
{
    size_t i, k = 0;

    for (i = 0; i < n; i++)
        k += mtx_utf8_encode((int32_t)c[i], d + k);
    return k;
}

/* The id of prefix + c[a..b), or -1 (a stack key for the usual short
 * pieces: this runs for every candidate piece). */
static int32_t piece_id(const struct mtx_hf_model *m, const uint32_t *c,
                        size_t a, size_t b, const char *prefix)
{
    size_t pn = prefix ? strlen(prefix) : 0, need = pn + 4 * (b - a), n;
    char small[256];
    char *k = need <= sizeof small ? small : mt_malloc(need + 1);
    int32_t id = -1;

    if (k) {
        memcpy(k, prefix ? prefix : "", pn);
        n = pn + put_utf8(c + a, b - a, k + pn);
        id = mtx_vocab_get(&m->vocab, k, n);
    }
    if (k != small)
        mt_free(k);
    return id;
}

static enum mt_status wordpiece(const struct mtx_hf_model *m,
                                const struct mtx_cpv *w, struct mtx_idv *out)
{
    size_t start = 0, mark = out->n;
    enum mt_status st = MT_OK;

    if (w->n > m->max_chars)
        return mtx_idv_push(out, m->unk);
    while (st == MT_OK && start < w->n) {
        size_t end = w->n;
        int32_t id = -1;
        while (end > start && id < 0) {
            id = piece_id(m, w->c, start, end, start ? m->prefix : NULL);
            if (id < 0)
                end--;
        }
        if (id < 0) { /* the whole word is unknown */
            out->n = mark;
            return mtx_idv_push(out, m->unk);
        }
        st = mtx_idv_push(out, id);
        start = end;
    }
    return st;
}

/* ==== Unigram ==== */

struct vnode {
    double score; /* best path score ending here */
    size_t begin; /* begin of the best piece ending here */
    int32_t id;   /* its id */
    int set;
};

/* Viterbi as the library's lattice decides it: at each end position the
 * first-inserted best node wins (nodes are inserted by begin position,
 * then length), an unknown single character when no piece of length 1
 * starts there. */
static void viterbi_step(const struct mtx_hf_model *m, const struct mtx_cpv *w,
                         size_t b, struct vnode *best)
{
    size_t len;
    int single = 0;

    for (len = 1; len <= m->max_piece && b + len <= w->n; len++) {
        int32_t id = piece_id(m, w->c, b, b + len, NULL);
        double s;
        if (id < 0 || (size_t)id >= m->nscores)
            continue;
        single |= len == 1;
        s = best[b].score + (id == m->unk ? m->unk_score : m->scores[id]);
        if (!best[b + len].set || s > best[b + len].score)
            best[b + len] = (struct vnode){s, b, id, 1};
    }
    if (!single) {
        double s = best[b].score + m->unk_score;
        if (!best[b + 1].set || s > best[b + 1].score)
            best[b + 1] = (struct vnode){s, b, m->unk, 1};
    }
}

static enum mt_status unigram(const struct mtx_hf_model *m,
                              const struct mtx_cpv *w, struct mtx_idv *out)
{
    struct vnode *best = mt_calloc(w->n + 1, sizeof *best);
    int32_t *rev = mt_malloc((w->n + 1) * sizeof *rev);
    enum mt_status st = MT_OK;
    size_t b, k = 0, pos = w->n;
    int prev_unk = 0;

    if (!best || !rev) {
        mt_free(best);
        mt_free(rev);
        return MT_ENOMEM;
    }
    best[0].set = 1;
    for (b = 0; b < w->n; b++)
        viterbi_step(m, w, b, best);
    while (pos > 0) {
        rev[k++] = best[pos].id;
        pos = best[pos].begin;
    }
    while (st == MT_OK && k > 0) { /* a run of unknowns is one */
        int32_t id = rev[--k];
        if (id == m->unk && prev_unk)
            continue;
        prev_unk = id == m->unk;
        st = mtx_idv_push(out, id);
    }
    mt_free(best);
    mt_free(rev);
    return st;
}

/* ==== BPE ==== */

struct sym {
    uint32_t *c; /* code points of the symbol */
    size_t n;
};

/* The rank of merging a and b, or -1. */
static int32_t merge_rank(const struct mtx_hf_model *m, const struct sym *a,
                          const struct sym *b)
{
    size_t need = 4 * (a->n + b->n) + 1, na;
    char small[256];
    char *k = need <= sizeof small ? small : mt_malloc(need);
    int32_t r = -1;

    if (k) {
        na = put_utf8(a->c, a->n, k);
        k[na] = '\0';
        r = mtx_vocab_get(&m->ranks, k,
                          na + 1 + put_utf8(b->c, b->n, k + na + 1));
    }
    if (k != small)
        mt_free(k);
    return r;
}

/* Merges the lowest-ranked adjacent pair until none is a merge. The
 * symbols are views into w (adjacent, so a merge widens the left one). */
static size_t bpe_merge(const struct mtx_hf_model *m, struct sym *s, size_t n)
{
    for (;;) {
        int32_t best = -1;
        size_t at = 0, i;
        for (i = 0; i + 1 < n; i++) {
            int32_t r = merge_rank(m, &s[i], &s[i + 1]);
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                at = i;
            }
        }
        if (best < 0)
            return n;
        s[at].n += s[at + 1].n;
        memmove(s + at + 1, s + at + 2, (n - at - 2) * sizeof *s);
        n--;
    }
}

static enum mt_status bpe(const struct mtx_hf_model *m, const struct mtx_cpv *w,
                          struct mtx_idv *out)
{
    struct sym *s = mt_malloc((w->n ? w->n : 1) * sizeof *s);
    enum mt_status st = MT_OK;
    size_t i, n;

    if (!s)
        return MT_ENOMEM;
    for (i = 0; i < w->n; i++)
        s[i] = (struct sym){w->c + i, 1};
    n = bpe_merge(m, s, w->n);
    for (i = 0; st == MT_OK && i < n; i++) {
        int32_t id =
            piece_id(m, s[i].c, 0, s[i].n, i && m->prefix ? m->prefix : NULL);
        if (id < 0 && m->unk < 0)
            continue; /* no unknown token: dropped, as the library does */
        st = mtx_idv_push(out, id < 0 ? m->unk : id);
    }
    mt_free(s);
    return st;
}

enum mt_status mtx_hf_model_encode(const struct mtx_hf_model *m,
                                   const struct mtx_cpv *piece,
                                   struct mtx_idv *out)
{
    if (piece->n == 0)
        return MT_OK;
    if (m->k == M_WORDPIECE)
        return wordpiece(m, piece, out);
    if (m->k == M_UNIGRAM)
        return unigram(m, piece, out);
    return bpe(m, piece, out);
}

int32_t mtx_hf_model_id(const struct mtx_hf_model *m, const char *k, size_t n)
{
    return mtx_vocab_get(&m->vocab, k, n);
}

const char *mtx_hf_model_kind(const struct mtx_hf_model *m)
{
    static const char *const names[] = {"WordPiece", "Unigram", "BPE"};

    return names[m->k];
}

void mtx_hf_model_free(struct mtx_hf_model *m)
{
    if (!m)
        return;
    mtx_vocab_free(&m->vocab);
    mtx_vocab_free(&m->ranks);
    mt_free(m->prefix);
    mt_free(m->suffix);
    mt_free(m->scores);
    mt_free(m);
}

/* ==== Reading ==== */

static enum mt_status read_vocab_map(json_t *v, struct mtx_hf_model *m)
{
    const char *k;
    json_t *id;

    if (!json_is_object(v))
        return MT_EPARSE;
    json_object_foreach(v, k, id)
    {
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > INT32_MAX)
            return MT_EPARSE;
        if (mtx_vocab_put(&m->vocab, k, strlen(k),
                          (int32_t)json_integer_value(id)) != MT_OK)
            return MT_ENOMEM;
    }
    return MT_OK;
}

static int32_t unk_from(const json_t *j, const struct mtx_hf_model *m)
{
    const char *u = json_string_value(json_object_get(j, "unk_token"));

    return u ? mtx_vocab_get(&m->vocab, u, strlen(u)) : -1;
}

static enum mt_status read_wordpiece(const json_t *j, struct mtx_hf_model *m)
{
    const json_t *mc = json_object_get(j, "max_input_chars_per_word");
    const char *p =
        json_string_value(json_object_get(j, "continuing_subword_prefix"));
    enum mt_status st = read_vocab_map(json_object_get(j, "vocab"), m);

    m->max_chars = json_is_integer(mc) && json_integer_value(mc) > 0
                       ? (size_t)json_integer_value(mc)
                       : 100;
    m->prefix = mt_strdup(p ? p : "##");
    if (st == MT_OK && !m->prefix)
        st = MT_ENOMEM;
    m->unk = unk_from(j, m);
    if (st == MT_OK && m->unk < 0)
        st = MT_EPARSE; /* WordPiece needs its unknown token */
    return st;
}

static enum mt_status read_unigram(const json_t *j, struct mtx_hf_model *m)
{
    const json_t *v = json_object_get(j, "vocab");
    const json_t *u = json_object_get(j, "unk_id");
    double min = DBL_MAX;
    size_t i;

    if (!json_is_array(v) || json_array_size(v) == 0)
        return MT_EPARSE;
    m->nscores = json_array_size(v);
    m->scores = mt_calloc(m->nscores, sizeof *m->scores);
    if (!m->scores)
        return MT_ENOMEM;
    for (i = 0; i < m->nscores; i++) {
        const json_t *e = json_array_get(v, i);
        const char *p = json_string_value(json_array_get(e, 0));
        const json_t *s = json_array_get(e, 1);
        if (!p || !json_is_number(s))
            return MT_EPARSE;
        m->scores[i] = json_number_value(s);
        min = m->scores[i] < min ? m->scores[i] : min;
        if (mtx_vocab_put(&m->vocab, p, strlen(p), (int32_t)i) != MT_OK)
            return MT_ENOMEM;
        if (mtx_utf8_count(p, strlen(p)) > m->max_piece)
            m->max_piece = mtx_utf8_count(p, strlen(p));
    }
    m->unk = json_is_integer(u) ? (int32_t)json_integer_value(u) : -1;
    if (m->unk < 0 || (size_t)m->unk >= m->nscores)
        return MT_EPARSE;
    m->unk_score = min - 10.0;
    return MT_OK;
}

/* One merge, "a b" or ["a", "b"], into m->ranks as "a\0b". */
static enum mt_status read_merge(const json_t *e, int32_t rank,
                                 struct mtx_hf_model *m)
{
    const char *a = json_string_value(e), *b, *sp;
    char *k;
    size_t na, nb;
    enum mt_status st;

    if (a && (sp = strchr(a, ' '))) {
        na = (size_t)(sp - a);
        b = sp + 1;
    } else {
        a = json_string_value(json_array_get(e, 0));
        b = json_string_value(json_array_get(e, 1));
        if (!a || !b)
            return MT_EPARSE;
        na = strlen(a);
    }
    nb = strlen(b);
    k = mt_malloc(na + nb + 1);
    if (!k)
        return MT_ENOMEM;
    memcpy(k, a, na);
    k[na] = '\0';
    memcpy(k + na + 1, b, nb);
    st = mtx_vocab_put(&m->ranks, k, na + nb + 1, rank);
    mt_free(k);
    return st;
}

static enum mt_status read_bpe(const json_t *j, struct mtx_hf_model *m)
{
    const json_t *merges = json_object_get(j, "merges");
    const char *p =
        json_string_value(json_object_get(j, "continuing_subword_prefix"));
    enum mt_status st = read_vocab_map(json_object_get(j, "vocab"), m);
    size_t i;

    if (st == MT_OK && !json_is_array(merges))
        st = MT_EPARSE;
    for (i = 0; st == MT_OK && i < json_array_size(merges); i++)
        st = read_merge(json_array_get(merges, i), (int32_t)i, m);
    if (st == MT_OK && p && !(m->prefix = mt_strdup(p)))
        st = MT_ENOMEM;
    if (st == MT_OK &&
        json_is_string(json_object_get(j, "end_of_word_suffix")) &&
        *json_string_value(json_object_get(j, "end_of_word_suffix")))
        st = MT_EUNSUPPORTED;
    if (st == MT_OK && json_is_true(json_object_get(j, "byte_fallback")))
        st = MT_EUNSUPPORTED;
    m->unk = unk_from(j, m);
    return st;
}

enum mt_status mtx_hf_model_new(const json_t *j, const char *path,
                                struct mtx_hf_model **out, struct mt_error *err)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    struct mtx_hf_model *m;
    enum mt_status st;

    if (!type && json_is_object(json_object_get(j, "vocab")))
        type = json_object_get(j, "merges") ? "BPE" : "WordPiece";
    if (!type || (strcmp(type, "WordPiece") != 0 &&
                  strcmp(type, "Unigram") != 0 && strcmp(type, "BPE") != 0))
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: model type '%s' is not supported (WordPiece, "
                       "Unigram and BPE are)",
                       path, type ? type : "(none)");
    m = mt_calloc(1, sizeof *m);
    if (!m)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    m->unk = -1;
    m->k = type[0] == 'W' ? M_WORDPIECE : type[0] == 'U' ? M_UNIGRAM : M_BPE;
    st = m->k == M_WORDPIECE ? read_wordpiece(j, m)
         : m->k == M_UNIGRAM ? read_unigram(j, m)
                             : read_bpe(j, m);
    if (st != MT_OK) {
        mtx_hf_model_free(m);
        return mt_fail(err, st, "%s: model (%s): %s", path, type,
                       st == MT_EUNSUPPORTED
                           ? "end_of_word_suffix and byte_fallback are not "
                             "supported"
                           : "bad or missing vocab, merges or unk_token");
    }
    *out = m;
    return MT_OK;
}
