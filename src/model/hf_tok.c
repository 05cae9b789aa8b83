/* tokenizer.json reader and encoder: added tokens split out first (on the
 * raw text, then on the normalized text for "normalized" ones), then the
 * normalizer, pre-tokenizer and model per section, truncation, and the
 * post-processor's template (special tokens, type ids), as the tokenizers
 * library does it. */
#include <string.h>
#include <utf8proc.h>

#include "core/buf.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/hf_tok_int.h"

#define MAX_SPECIAL 8 /* special-token ids one template adds, at most */

struct added {
    struct mtx_cpv text; /* content (normalized when 'normalized') */
    int32_t id;
    int normalized, lstrip, rstrip;
};

/* One part of a template: a text (seq 0 or 1) or special ids. */
struct tpl_item {
    int seq; /* -1: special tokens */
    int32_t ids[MAX_SPECIAL];
    size_t nids;
    int32_t type_id;
};

struct tpl {
    struct tpl_item items[8];
    size_t n;
};

struct mtx_hf_tok {
    struct mtx_hf_norm *norm;
    struct mtx_hf_pre *pre;
    struct mtx_hf_model *model;
    struct added *added;
    size_t nadded;
    struct tpl single, pair;
    int32_t pad_id;
    size_t max_len;
};

/* ==== Small containers ==== */

enum mt_status mtx_cpv_push(struct mtx_cpv *v, uint32_t c)
{
    if (mtx_grow((void **)&v->c, &v->cap, v->n + 1, sizeof *v->c) != MT_OK)
        return MT_ENOMEM;
    v->c[v->n++] = c;
    return MT_OK;
}

void mtx_cpv_free(struct mtx_cpv *v)
{
    mt_free(v->c);
    memset(v, 0, sizeof *v);
}

enum mt_status mtx_pieces_push(struct mtx_pieces *p, const uint32_t *c,
                               size_t n)
{
    struct mtx_cpv v = {0};

    if (mtx_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v) != MT_OK)
        return MT_ENOMEM;
    if (mtx_grow((void **)&v.c, &v.cap, n ? n : 1, sizeof *v.c) != MT_OK)
        return MT_ENOMEM;
    if (n)
        memcpy(v.c, c, n * sizeof *c);
    v.n = n;
    p->v[p->n++] = v;
    return MT_OK;
}

void mtx_pieces_free(struct mtx_pieces *p)
{
    size_t i;

    for (i = 0; i < p->n; i++)
        mtx_cpv_free(&p->v[i]);
    mt_free(p->v);
    memset(p, 0, sizeof *p);
}

enum mt_status mtx_idv_push(struct mtx_idv *v, int32_t id)
{
    if (mtx_grow((void **)&v->v, &v->cap, v->n + 1, sizeof *v->v) != MT_OK)
        return MT_ENOMEM;
    v->v[v->n++] = id;
    return MT_OK;
}

char *mtx_cp_utf8(const uint32_t *c, size_t n, size_t *len)
{
    char *s = mt_malloc(n * 4 + 1);
    size_t i, k = 0;

    if (!s)
        return NULL;
    for (i = 0; i < n; i++) {
        utf8proc_ssize_t w = utf8proc_encode_char((utf8proc_int32_t)c[i],
                                                  (utf8proc_uint8_t *)s + k);
        k += (size_t)(w > 0 ? w : 0);
    }
    s[k] = '\0';
    *len = k;
    return s;
}

enum mt_status mtx_cp_decode(const char *s, size_t n, struct mtx_cpv *v)
{
    size_t i = 0;

    while (i < n) {
        utf8proc_int32_t c = 0;
        utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(n - i), &c);
        if (r <= 0) {
            c = 0xFFFD;
            r = 1;
        }
        if (mtx_cpv_push(v, (uint32_t)c) != MT_OK)
            return MT_ENOMEM;
        i += (size_t)r;
    }
    return MT_OK;
}

/* ==== Added tokens ==== */

/* The longest added token (of the 'normalized' kind asked) matching t at
 * i, or -1. */
static long added_at(const struct mtx_hf_tok *t, const struct mtx_cpv *x,
                     size_t i, int normalized)
{
    long best = -1;
    size_t k, blen = 0;

    for (k = 0; k < t->nadded; k++) {
        const struct mtx_cpv *a = &t->added[k].text;
        if (t->added[k].normalized != normalized || a->n == 0 || a->n <= blen ||
            i + a->n > x->n || memcmp(x->c + i, a->c, a->n * sizeof *a->c) != 0)
            continue;
        best = (long)k;
        blen = a->n;
    }
    return best;
}

/* Splits x into sections: runs of text (tok -1) and added tokens,
 * trimming whitespace beside a token that strips it. */
struct section {
    size_t a, b;
    long tok;
};

static enum mt_status split_added(const struct mtx_hf_tok *t,
                                  const struct mtx_cpv *x, int normalized,
                                  struct section **out, size_t *n)
{
    size_t i = 0, s = 0, cap = 0;
    enum mt_status st = MT_OK;

    *n = 0;
    while (st == MT_OK && i <= x->n) {
        long k = i < x->n ? added_at(t, x, i, normalized) : -1;
        if (k < 0 && i < x->n) {
            i++;
            continue;
        }
        st = mtx_grow((void **)out, &cap, *n + 2, sizeof **out);
        if (st != MT_OK)
            break;
        if (i > s)
            (*out)[(*n)++] = (struct section){s, i, -1};
        if (k < 0)
            break;
        (*out)[(*n)++] = (struct section){i, i + t->added[k].text.n, k};
        i = s = i + t->added[k].text.n;
    }
    return st;
}

static void strip_beside(const struct mtx_hf_tok *t, const struct mtx_cpv *x,
                         struct section *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        const struct added *a = s[i].tok >= 0 ? &t->added[s[i].tok] : NULL;
        if (!a)
            continue;
        if (a->lstrip && i > 0 && s[i - 1].tok < 0)
            while (s[i - 1].b > s[i - 1].a &&
                   mtx_cp_is_space(x->c[s[i - 1].b - 1]))
                s[i - 1].b--;
        if (a->rstrip && i + 1 < n && s[i + 1].tok < 0)
            while (s[i + 1].a < s[i + 1].b && mtx_cp_is_space(x->c[s[i + 1].a]))
                s[i + 1].a++;
    }
}

/* ==== Encoding one text ==== */

static enum mt_status encode_plain(const struct mtx_hf_tok *t,
                                   const struct mtx_cpv *x, int first,
                                   struct mtx_idv *out)
{
    struct mtx_pieces p = {0};
    enum mt_status st = mtx_hf_pre_apply(t->pre, x, first, &p);
    size_t i;

    for (i = 0; st == MT_OK && i < p.n; i++)
        st = mtx_hf_model_encode(t->model, &p.v[i], out);
    mtx_pieces_free(&p);
    return st;
}

/* A raw section: normalized, then split on normalized added tokens. */
static enum mt_status encode_section(const struct mtx_hf_tok *t,
                                     const uint32_t *c, size_t n, int first,
                                     struct mtx_idv *out)
{
    struct mtx_cpv x = {0};
    struct section *s = NULL;
    size_t ns = 0, i;
    enum mt_status st = MT_OK;

    for (i = 0; st == MT_OK && i < n; i++)
        st = mtx_cpv_push(&x, c[i]);
    if (st == MT_OK)
        st = mtx_hf_norm_apply(t->norm, &x);
    if (st == MT_OK)
        st = split_added(t, &x, 1, &s, &ns);
    if (st == MT_OK)
        strip_beside(t, &x, s, ns);
    for (i = 0; st == MT_OK && i < ns; i++) {
        struct mtx_cpv part = {x.c + s[i].a, s[i].b - s[i].a, 0};
        if (s[i].tok >= 0)
            st = mtx_idv_push(out, t->added[s[i].tok].id);
        else if (part.n)
            st = encode_plain(t, &part, first, out);
    }
    mt_free(s);
    mtx_cpv_free(&x);
    return st;
}

static enum mt_status encode_text(const struct mtx_hf_tok *t, const char *p,
                                  size_t n, struct mtx_idv *out)
{
    struct mtx_cpv x = {0};
    struct section *s = NULL;
    size_t ns = 0, i;
    enum mt_status st = mtx_cp_decode(p, n, &x);

    if (st == MT_OK)
        st = split_added(t, &x, 0, &s, &ns);
    if (st == MT_OK)
        strip_beside(t, &x, s, ns);
    for (i = 0; st == MT_OK && i < ns; i++) {
        if (s[i].tok >= 0)
            st = mtx_idv_push(out, t->added[s[i].tok].id);
        else if (s[i].b > s[i].a)
            st = encode_section(t, x.c + s[i].a, s[i].b - s[i].a, i == 0, out);
    }
    mt_free(s);
    mtx_cpv_free(&x);
    return st;
}

/* ==== Post-processing and truncation ==== */

static size_t tpl_specials(const struct tpl *p)
{
    size_t i, n = 0;

    for (i = 0; i < p->n; i++)
        n += p->items[i].seq < 0 ? p->items[i].nids : 0;
    return n;
}

/* Cuts a (and b) so that with the template's special tokens the total is
 * at most max, as the tokenizers library's longest_first does it: the
 * shorter text is kept whole when the longer can take the rest; else each
 * gets half, the longer (b on a tie) the odd token. (Python's slow
 * tokenizers give the odd token to the other text.) */
static void truncate_pair(struct mtx_idv *a, struct mtx_idv *b, size_t max,
                          size_t specials)
{
    size_t room = max > specials ? max - specials : 0;
    size_t n1, n2;
    int swap;

    if (!b) {
        a->n = a->n < room ? a->n : room;
        return;
    }
    if (a->n + b->n <= room)
        return;
    swap = a->n > b->n;
    n1 = swap ? b->n : a->n; /* the shorter */
    n2 = n1 > room ? n1 : (n1 > room - n1 ? n1 : room - n1);
    if (n1 + n2 > room) {
        n1 = room / 2;
        n2 = n1 + room % 2;
    }
    a->n = a->n < (swap ? n2 : n1) ? a->n : (swap ? n2 : n1);
    b->n = b->n < (swap ? n1 : n2) ? b->n : (swap ? n1 : n2);
}

static enum mt_status emit(struct mtx_hf_enc *e, size_t *k, int32_t id,
                           int32_t type, uint8_t special)
{
    e->ids[*k] = id;
    e->type_ids[*k] = type;
    e->special[*k] = special;
    (*k)++;
    return MT_OK;
}

static enum mt_status apply_tpl(const struct tpl *p, const struct mtx_idv *a,
                                const struct mtx_idv *b, struct mtx_hf_enc *e)
{
    size_t n = a->n + (b ? b->n : 0) + tpl_specials(p) + 1, k = 0, i, j;

    e->ids = mt_malloc(n * sizeof *e->ids);
    e->type_ids = mt_malloc(n * sizeof *e->type_ids);
    e->special = mt_malloc(n);
    if (!e->ids || !e->type_ids || !e->special)
        return MT_ENOMEM;
    for (i = 0; i < p->n; i++) {
        const struct tpl_item *it = &p->items[i];
        const struct mtx_idv *s = it->seq == 0 ? a : it->seq == 1 ? b : NULL;
        for (j = 0; it->seq < 0 && j < it->nids; j++)
            emit(e, &k, it->ids[j], it->type_id, 1);
        for (j = 0; s && j < s->n; j++)
            emit(e, &k, s->v[j], it->type_id, 0);
    }
    e->n = k;
    return MT_OK;
}

enum mt_status mtx_hf_tok_encode(const struct mtx_hf_tok *t, const char *a,
                                 size_t na, const char *b, size_t nb,
                                 size_t max_len, struct mtx_hf_enc *out,
                                 struct mt_error *err)
{
    struct mtx_idv ia = {0}, ib = {0};
    const struct tpl *p = b ? &t->pair : &t->single;
    enum mt_status st = encode_text(t, a, na, &ia);

    memset(out, 0, sizeof *out);
    if (st == MT_OK && b)
        st = encode_text(t, b, nb, &ib);
    if (st == MT_OK && max_len)
        truncate_pair(&ia, b ? &ib : NULL, max_len, tpl_specials(p));
    if (st == MT_OK)
        st = apply_tpl(p, &ia, b ? &ib : NULL, out);
    mt_free(ia.v);
    mt_free(ib.v);
    if (st != MT_OK) {
        mtx_hf_enc_free(out);
        return mt_fail(err, st, "tokenizing: out of memory");
    }
    return MT_OK;
}

void mtx_hf_enc_free(struct mtx_hf_enc *e)
{
    if (!e)
        return;
    mt_free(e->ids);
    mt_free(e->type_ids);
    mt_free(e->special);
    memset(e, 0, sizeof *e);
}

int32_t mtx_hf_tok_pad_id(const struct mtx_hf_tok *t)
{
    return t->pad_id;
}

const char *mtx_hf_tok_kind(const struct mtx_hf_tok *t)
{
    return mtx_hf_model_kind(t->model);
}

size_t mtx_hf_tok_max_len(const struct mtx_hf_tok *t)
{
    return t->max_len;
}

void mtx_hf_tok_free(struct mtx_hf_tok *t)
{
    size_t i;

    if (!t)
        return;
    mtx_hf_norm_free(t->norm);
    mtx_hf_pre_free(t->pre);
    mtx_hf_model_free(t->model);
    for (i = 0; i < t->nadded; i++)
        mtx_cpv_free(&t->added[i].text);
    mt_free(t->added);
    mt_free(t);
}

/* ==== Loading ==== */

/* The ids of special token 'name': the post-processor's special_tokens
 * entry when it has one, else the added tokens and the vocabulary. */
static enum mt_status special_ids(const struct mtx_hf_tok *t,
                                  const json_t *specials, const char *name,
                                  struct tpl_item *it)
{
    const json_t *ids = json_object_get(json_object_get(specials, name), "ids");
    size_t i;
    int32_t id;

    for (i = 0; json_is_array(ids) && i < json_array_size(ids); i++) {
        if (it->nids == MAX_SPECIAL)
            return MT_ELIMIT;
        it->ids[it->nids++] =
            (int32_t)json_integer_value(json_array_get(ids, i));
    }
    if (json_is_array(ids))
        return MT_OK;
    id = mtx_hf_model_id(t->model, name, strlen(name));
    for (i = 0; id < 0 && i < t->nadded; i++) {
        size_t n = 0;
        char *s = mtx_cp_utf8(t->added[i].text.c, t->added[i].text.n, &n);
        if (s && strcmp(s, name) == 0)
            id = t->added[i].id;
        mt_free(s);
    }
    if (id < 0)
        return MT_ENOTFOUND;
    it->ids[it->nids++] = id;
    return MT_OK;
}

static enum mt_status read_tpl(struct mtx_hf_tok *t, const json_t *a,
                               const json_t *specials, struct tpl *p)
{
    size_t i;

    if (!json_is_array(a) || json_array_size(a) > 8)
        return MT_EPARSE;
    for (i = 0; i < json_array_size(a); i++) {
        const json_t *e = json_array_get(a, i);
        const json_t *sq = json_object_get(e, "Sequence");
        const json_t *sp = json_object_get(e, "SpecialToken");
        struct tpl_item *it = &p->items[p->n++];
        const char *id = json_string_value(json_object_get(sq ? sq : sp, "id"));
        memset(it, 0, sizeof *it);
        it->type_id = (int32_t)json_integer_value(
            json_object_get(sq ? sq : sp, "type_id"));
        if (!id)
            return MT_EPARSE;
        it->seq = sq ? (strcmp(id, "B") == 0) : -1;
        if (!sq && special_ids(t, specials, id, it) != MT_OK)
            return MT_ENOTFOUND;
    }
    return MT_OK;
}

/* BertProcessing and RobertaProcessing as templates: [CLS] A [SEP] and
 * [CLS] A [SEP] B [SEP] (BERT's B part of type 1), or <s> A </s> and
 * <s> A </s> </s> B </s> (all of type 0). */
static enum mt_status classic_tpl(struct mtx_hf_tok *t, const json_t *pp,
                                  int roberta)
{
    int32_t cls = (int32_t)json_integer_value(
        json_array_get(json_object_get(pp, "cls"), 1));
    int32_t sep = (int32_t)json_integer_value(
        json_array_get(json_object_get(pp, "sep"), 1));
    struct tpl_item c = {-1, {cls}, 1, 0}, s = {-1, {sep}, 1, 0};
    struct tpl_item a = {0, {0}, 0, 0}, b = {1, {0}, 0, roberta ? 0 : 1};
    struct tpl_item s1 = {-1, {sep}, 1, roberta ? 0 : 1};

    if (!json_is_array(json_object_get(pp, "cls")) ||
        !json_is_array(json_object_get(pp, "sep")))
        return MT_EPARSE;
    t->single = (struct tpl){{c, a, s}, 3};
    if (roberta)
        t->pair = (struct tpl){{c, a, s, s, b, s}, 6};
    else
        t->pair = (struct tpl){{c, a, s, b, s1}, 5};
    return MT_OK;
}

static enum mt_status read_post(struct mtx_hf_tok *t, const json_t *pp)
{
    const char *type = json_string_value(json_object_get(pp, "type"));
    const json_t *procs = json_object_get(pp, "processors");
    enum mt_status st = MT_OK;
    size_t i;

    t->single = (struct tpl){{{0, {0}, 0, 0}}, 1};
    t->pair = (struct tpl){{{0, {0}, 0, 0}, {1, {0}, 0, 1}}, 2};
    if (!type || strcmp(type, "ByteLevel") == 0)
        return MT_OK;
    if (strcmp(type, "Sequence") == 0) {
        for (i = 0; st == MT_OK && i < json_array_size(procs); i++)
            st = read_post(t, json_array_get(procs, i));
        return st;
    }
    if (strcmp(type, "BertProcessing") == 0)
        return classic_tpl(t, pp, 0);
    if (strcmp(type, "RobertaProcessing") == 0)
        return classic_tpl(t, pp, 1);
    if (strcmp(type, "TemplateProcessing") != 0)
        return MT_EUNSUPPORTED;
    memset(&t->single, 0, sizeof t->single);
    memset(&t->pair, 0, sizeof t->pair);
    st = read_tpl(t, json_object_get(pp, "single"),
                  json_object_get(pp, "special_tokens"), &t->single);
    if (st == MT_OK)
        st = read_tpl(t, json_object_get(pp, "pair"),
                      json_object_get(pp, "special_tokens"), &t->pair);
    return st;
}

static enum mt_status read_added(struct mtx_hf_tok *t, const json_t *a)
{
    size_t i;
    enum mt_status st = MT_OK;

    t->added = mt_calloc(json_array_size(a) + 1, sizeof *t->added);
    if (!t->added)
        return MT_ENOMEM;
    for (i = 0; st == MT_OK && i < json_array_size(a); i++) {
        const json_t *e = json_array_get(a, i);
        const json_t *c = json_object_get(e, "content");
        struct added *d = &t->added[t->nadded];
        int special = json_is_true(json_object_get(e, "special"));
        const json_t *nz = json_object_get(e, "normalized");
        if (!json_is_string(c) || !json_is_integer(json_object_get(e, "id")))
            return MT_EPARSE;
        d->id = (int32_t)json_integer_value(json_object_get(e, "id"));
        d->normalized = json_is_boolean(nz) ? json_is_true(nz) : !special;
        d->lstrip = json_is_true(json_object_get(e, "lstrip"));
        d->rstrip = json_is_true(json_object_get(e, "rstrip"));
        t->nadded++;
        st = mtx_cp_decode(json_string_value(c), json_string_length(c),
                           &d->text);
        if (st == MT_OK && d->normalized)
            st = mtx_hf_norm_apply(t->norm, &d->text);
    }
    return st;
}

static void read_limits(struct mtx_hf_tok *t, const json_t *root)
{
    const json_t *pad = json_object_get(root, "padding");
    const json_t *tr = json_object_get(root, "truncation");
    static const char *const pads[] = {"[PAD]", "<pad>", "<|endoftext|>"};
    size_t i;

    t->pad_id = 0;
    for (i = 0; i < 3; i++) {
        int32_t id = mtx_hf_model_id(t->model, pads[i], strlen(pads[i]));
        if (id >= 0) {
            t->pad_id = id;
            break;
        }
    }
    if (json_is_integer(json_object_get(pad, "pad_id")))
        t->pad_id = (int32_t)json_integer_value(json_object_get(pad, "pad_id"));
    if (json_is_integer(json_object_get(tr, "max_length")) &&
        json_integer_value(json_object_get(tr, "max_length")) > 0)
        t->max_len =
            (size_t)json_integer_value(json_object_get(tr, "max_length"));
}

static enum mt_status load_parts(struct mtx_hf_tok *t, const json_t *root,
                                 const char *path, struct mt_error *err)
{
    enum mt_status st;

    st = mtx_hf_norm_new(json_object_get(root, "normalizer"), path, &t->norm,
                         err);
    if (st == MT_OK)
        st = mtx_hf_pre_new(json_object_get(root, "pre_tokenizer"), path,
                            &t->pre, err);
    if (st == MT_OK)
        st = mtx_hf_model_new(json_object_get(root, "model"), path, &t->model,
                              err);
    if (st != MT_OK)
        return st;
    st = read_added(t, json_object_get(root, "added_tokens"));
    if (st != MT_OK)
        return mt_fail(err, st, "%s: added_tokens: %s", path,
                       st == MT_ENOMEM ? "out of memory"
                                       : "an entry lacks content or id");
    st = read_post(t, json_object_get(root, "post_processor"));
    if (st != MT_OK)
        return mt_fail(err, st, "%s: post_processor: %s", path,
                       st == MT_EUNSUPPORTED
                           ? "type not supported (TemplateProcessing, "
                             "BertProcessing, RobertaProcessing, ByteLevel, "
                             "Sequence are)"
                           : "a template names a token the vocabulary lacks");
    read_limits(t, root);
    return MT_OK;
}

enum mt_status mtx_hf_tok_load(const char *path, struct mtx_hf_tok **out,
                               struct mt_error *err)
{
    json_error_t je;
    json_t *root;
    struct mtx_hf_tok *t;
    enum mt_status st;

    mtx_jsonl_init_alloc();
    root = json_load_file(path, 0, &je);
    if (!root)
        return mt_fail(err, MT_EPARSE, "%s:%d: %s", path, je.line, je.text);
    t = mt_calloc(1, sizeof *t);
    st = t ? load_parts(t, root, path, err)
           : mt_fail(err, MT_ENOMEM, "out of memory");
    json_decref(root);
    if (st != MT_OK) {
        mtx_hf_tok_free(t);
        return st;
    }
    *out = t;
    return MT_OK;
}
