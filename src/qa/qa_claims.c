/* Claims of an answer: sentences, their bracketed citations, and uncited
 * middle sentences merged into the neighbouring claim they fit best
 * (VerifAI); also the hashed-words fallback embedding and the closing
 * yes/no/maybe of an answer. */
#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "qa/qa_int.h"
#include "medtrust/core.h"
#include "model/embed.h"
#include "text/sentence.h"

#define QA_MAX_REFS 32    /* citations kept per sentence */
#define QA_GROUP_MAX 1024 /* bytes inside one bracket group */

struct cite_ctx {
    struct mt_arena *a;
    const char *pre;
    const char *suf;
    const char *const *known;
    size_t nknown;
};

/* ==== Citations ==== */

static long find_known(const struct cite_ctx *c, const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < c->nknown; i++)
        if (strlen(c->known[i]) == n && memcmp(c->known[i], p, n) == 0)
            return (long)i;
    return -1;
}

/* "PMID: 123", "PMID 123" or "PMID123" (any case): the digits into id. */
static int pmid_form(struct mt_str it, struct mt_str *id)
{
    size_t i = 4;

    if (it.n <= 4 || strncasecmp(it.p, "PMID", 4) != 0)
        return 0;
    while (i < it.n && (it.p[i] == ':' || it.p[i] == ' '))
        i++;
    *id = (struct mt_str){it.p + i, it.n - i};
    for (; i < it.n; i++)
        if (!isdigit((unsigned char)it.p[i]))
            return 0;
    return id->n > 0;
}

/* The id an item names: pre + id + suf, "PMID: id", or a bare known id. */
static int item_id(const struct cite_ctx *c, struct mt_str it,
                   struct mt_str *id)
{
    size_t np = strlen(c->pre);
    size_t ns = strlen(c->suf);

    it = mtx_str_trim(it);
    if (pmid_form(it, id))
        return 1;
    if (it.n > np + ns && memcmp(it.p, c->pre, np) == 0 &&
        memcmp(it.p + it.n - ns, c->suf, ns) == 0) {
        *id = mtx_str_trim((struct mt_str){it.p + np, it.n - np - ns});
        return id->n > 0 && np + ns > 0;
    }
    *id = it;
    return it.n > 0 && find_known(c, it.p, it.n) >= 0;
}

static enum mt_status add_ref(const struct cite_ctx *c, struct mt_qa_sent *s,
                              struct mt_str id)
{
    size_t i;
    char *k;

    for (i = 0; i < s->nrefs; i++)
        if (mtx_str_eq_c(id, s->refs[i]))
            return MT_OK;
    if (s->nrefs == QA_MAX_REFS)
        return MT_OK;
    k = mtx_arena_strndup(c->a, id.p, id.n);
    if (!k)
        return MT_ENOMEM;
    s->docs[s->nrefs] = find_known(c, id.p, id.n);
    s->refs[s->nrefs++] = k;
    return MT_OK;
}

/* Reads the group p[0..n) (between the brackets). Returns 1 and adds its
 * ids to s when every item is a citation, 0 when it is other text. */
static int cite_group(const struct cite_ctx *c, const char *p, size_t n,
                      struct mt_qa_sent *s, enum mt_status *st)
{
    struct mt_str id;
    size_t i = 0;

    if (n == 0 || n > QA_GROUP_MAX)
        return 0;
    while (i <= n) { /* every item must be a citation */
        size_t j = i;

        while (j < n && p[j] != ',' && p[j] != ';')
            j++;
        if (!item_id(c, (struct mt_str){p + i, j - i}, &id))
            return 0;
        i = j + 1;
    }
    for (i = 0; i <= n && *st == MT_OK;) {
        size_t j = i;

        while (j < n && p[j] != ',' && p[j] != ';')
            j++;
        item_id(c, (struct mt_str){p + i, j - i}, &id);
        *st = add_ref(c, s, id);
        i = j + 1;
    }
    return 1;
}

static enum mt_status sent_init(struct mt_arena *a, struct mt_qa_sent *s)
{
    s->refs = mtx_arena_alloc(a, QA_MAX_REFS * sizeof *s->refs);
    s->docs = mtx_arena_alloc(a, QA_MAX_REFS * sizeof *s->docs);
    s->nrefs = 0;
    return s->refs && s->docs ? MT_OK : MT_ENOMEM;
}

static void trim_tail(struct mt_buf *t)
{
    while (t->len > 0 && isspace((unsigned char)t->data[t->len - 1]))
        t->data[--t->len] = '\0';
}

static int id_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_' || ch == '-';
}

/* A citation standing in the text without brackets, as VerifAI matches
 * "PUBMED:\d+" anywhere: the label (pre + id + suf, the id of letters,
 * digits, '_' or '-') or "PMID: digits", at a word start. Returns its
 * length (0: none) and its id. */
static size_t inline_cite(const struct cite_ctx *c, const char *p, size_t n,
                          struct mt_str *id)
{
    size_t np = strlen(c->pre);
    size_t ns = strlen(c->suf);
    size_t k = np;

    if (np > 0 && n > np && memcmp(p, c->pre, np) == 0) {
        while (k < n && id_char(p[k]) && (ns == 0 || p[k] != c->suf[0]))
            k++;
        if (k > np && k + ns <= n && memcmp(p + k, c->suf, ns) == 0) {
            *id = (struct mt_str){p + np, k - np};
            return k + ns;
        }
    }
    if (n > 4 && strncasecmp(p, "PMID", 4) == 0) {
        k = 4;
        while (k < n && (p[k] == ':' || p[k] == ' '))
            k++;
        while (k < n && isdigit((unsigned char)p[k]))
            k++;
        if (pmid_form((struct mt_str){p, k}, id))
            return k;
    }
    return 0;
}

/* The closing bracket of a group opening at p[0] ('[' or '('), or NULL. */
static const char *group_end(const char *p, size_t n)
{
    if (p[0] == '[')
        return memchr(p, ']', n);
    return p[0] == '(' ? memchr(p, ')', n) : NULL;
}

/* One sentence p[0..n): its text without citation groups, and its
 * citations: groups in [...] or (...) whose every item is a citation,
 * and labels or PMIDs standing alone; those that open it go to 'prev'
 * (may be NULL). */
static enum mt_status parse_sent(const struct cite_ctx *c, const char *p,
                                 size_t n, struct mt_qa_sent *s,
                                 struct mt_qa_sent *prev)
{
    struct mt_buf t = MT_BUF_INIT(n + 2);
    enum mt_status st = mtx_buf_reserve(&t, n + 1);
    size_t i = 0;
    int lead = 1;

    while (st == MT_OK && i < n) {
        const char *e = group_end(p + i, n - i);
        struct mt_qa_sent *to = lead && prev ? prev : s;
        struct mt_str id;
        size_t k = i == 0 || !id_char(p[i - 1])
                       ? inline_cite(c, p + i, n - i, &id)
                       : 0;

        if (e && cite_group(c, p + i + 1, (size_t)(e - (p + i)) - 1, to, &st)) {
            trim_tail(&t);
            i = (size_t)(e - p) + 1;
            continue;
        }
        if (k > 0) {
            trim_tail(&t);
            st = add_ref(c, to, id);
            i += k;
            continue;
        }
        lead = lead && isspace((unsigned char)p[i]);
        st = mtx_buf_putc(&t, p[i++]);
    }
    if (st == MT_OK) {
        struct mt_str x = mtx_str_trim((struct mt_str){t.data, t.len});

        s->text = mtx_arena_strndup(c->a, x.p ? x.p : "", x.n);
        st = s->text ? MT_OK : MT_ENOMEM;
    }
    mtx_buf_free(&t);
    return st;
}

enum mt_status mtx_qa_parse_answer(struct mt_arena *a, const char *answer,
                                   const char *pre, const char *suf,
                                   const char *const *known, size_t nknown,
                                   struct mt_qa_sent **out, size_t *n)
{
    struct cite_ctx c = {a, pre, suf, known, nknown};
    struct mt_span *sp = NULL;
    struct mt_qa_sent *v;
    size_t cnt = 0, i, k = 0;
    enum mt_status st =
        mtx_sentences_split(answer, strlen(answer), &sp, &cnt, NULL);

    *n = 0;
    if (st != MT_OK)
        return st;
    v = mtx_arena_alloc(a, (cnt + 1) * sizeof *v);
    st = v ? MT_OK : MT_ENOMEM;
    for (i = 0; st == MT_OK && i < cnt; i++) {
        st = sent_init(a, &v[k]);
        if (st == MT_OK)
            st = parse_sent(&c, answer + sp[i].start, sp[i].end - sp[i].start,
                            &v[k], k ? &v[k - 1] : NULL);
        if (st == MT_OK && v[k].text[0]) /* only citations: merged */
            k++;
    }
    mt_free(sp);
    *out = v;
    *n = st == MT_OK ? k : 0;
    return st;
}

/* ==== Grouping ==== */

double mtx_qa_dot(const float *a, const float *b, uint32_t dims)
{
    double s = 0;
    uint32_t i;

    for (i = 0; i < dims; i++)
        s += (double)a[i] * (double)b[i];
    return s;
}

/* Best similarity of sentence g to a sentence of the known documents
 * claim c cites. */
static double sim(const struct mt_qa_sent *s, size_t g, size_t c,
                  const float *sv, const float *dv, const size_t *off,
                  uint32_t dims)
{
    double best = -1e300;
    size_t k;
    size_t j;

    for (k = 0; k < s[c].nrefs; k++) {
        long d = s[c].docs[k];

        for (j = d < 0 ? 0 : off[d]; d >= 0 && j < off[d + 1]; j++) {
            double v = mtx_qa_dot(sv + g * dims, dv + j * dims, dims);

            if (v > best)
                best = v;
        }
    }
    return best;
}

void mtx_qa_group(const struct mt_qa_sent *s, size_t n, const float *sent_vecs,
                  const float *doc_vecs, const size_t *doc_off, uint32_t dims,
                  long *owner)
{
    size_t i, j, g;

    for (i = 0; i < n; i++)
        owner[i] = s[i].nrefs ? (long)i : -1;
    for (i = 0; i < n && !s[i].nrefs; i++)
        ;
    while (i < n) {
        int right = 0;

        for (j = i + 1; j < n && !s[j].nrefs; j++)
            ;
        if (j == n)
            break; /* the rest is a conclusion */
        for (g = i + 1; g < j; g++) {
            if (!right && sent_vecs && doc_vecs && doc_off)
                right = sim(s, g, j, sent_vecs, doc_vecs, doc_off, dims) >
                        sim(s, g, i, sent_vecs, doc_vecs, doc_off, dims);
            owner[g] = (long)(right ? j : i);
        }
        i = j;
    }
}

/* Common English words that carry no topic; skipped when hashing. */
static int stop_word(const char *w, size_t n)
{
    static const char *const stop[] = {
        "the",  "and",   "for",   "with",  "that",  "this", "was",
        "were", "are",   "from",  "have",  "has",   "had",  "not",
        "but",  "its",   "their", "these", "those", "than", "then",
        "been", "which", "who",   "into",  "also",
    };
    size_t i;

    for (i = 0; i < sizeof stop / sizeof stop[0]; i++)
        if (strlen(stop[i]) == n && strncasecmp(stop[i], w, n) == 0)
            return 1;
    return n < 3;
}

void mtx_qa_hash_embed(const char *s, size_t n, float *out)
{
    size_t i = 0;
    double norm = 0;

    memset(out, 0, QA_HASH_DIMS * sizeof *out);
    while (i < n) {
        uint32_t h = 2166136261u;
        size_t w = i;

        for (; i < n &&
               (isalnum((unsigned char)s[i]) || (unsigned char)s[i] >= 0x80);
             i++)
            h = (h ^ (unsigned char)tolower((unsigned char)s[i])) * 16777619u;
        if (i > w && !stop_word(s + w, i - w))
            out[h % QA_HASH_DIMS] += 1.0f;
        else if (i == w)
            i++;
    }
    for (i = 0; i < QA_HASH_DIMS; i++) { /* sublinear tf: 1 + ln(tf) */
        if (out[i] > 0)
            out[i] = 1.0f + logf(out[i]);
        norm += (double)out[i] * (double)out[i];
    }
    for (i = 0; norm > 0 && i < QA_HASH_DIMS; i++)
        out[i] = (float)((double)out[i] / sqrt(norm));
}

/* ==== The closing verdict ==== */

static const char *verdict_word(const char *p)
{
    static const char *const words[] = {"yes", "no", "maybe"};
    size_t i;

    for (i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);

        if (strncasecmp(p, words[i], n) == 0 && !isalnum((unsigned char)p[n]))
            return words[i];
    }
    return NULL;
}

/* The word after the last "answer:" (markdown and quotes skipped). */
static const char *after_answer(const char *a)
{
    const char *last = NULL;
    const char *p;

    for (p = a; *p; p++)
        if (strncasecmp(p, "answer:", 7) == 0)
            last = p + 7;
    if (!last)
        return NULL;
    while (*last && strchr(" \t*_\"'`", *last))
        last++;
    return verdict_word(last);
}

const char *mtx_qa_final_word(const char *answer)
{
    const char *w = after_answer(answer);
    const char *line = answer;
    const char *p;

    if (w)
        return w;
    for (p = answer; *p; p++) /* the last line with text */
        if (*p == '\n' && p[1] && !isspace((unsigned char)p[1]))
            line = p + 1;
    for (p = line; *p && *p != '\n'; p++) {
        const char *v = p == line || !isalnum((unsigned char)p[-1])
                            ? verdict_word(p)
                            : NULL;

        if (v)
            w = v;
    }
    return w;
}

/* ==== Claims of a result ==== */

/* The spans document d adds: its sentences, or the document whole with
 * MT_QA_ATTRIB_DOCUMENT (VerifAI's published verification.py embeds each
 * cited document whole: its shown text, up to doc_chars). */
static enum mt_status doc_spans(const struct qa_run *r, const char *d,
                                struct mt_str **t, size_t *nt, size_t *cap,
                                struct mt_error *err)
{
    struct mt_span *sp = NULL;
    size_t ns = 0, k;
    enum mt_status st;

    if (r->p.attribution == MT_QA_ATTRIB_DOCUMENT) {
        st = mtx_grow((void **)t, cap, *nt + 2, sizeof **t);
        if (st == MT_OK)
            (*t)[(*nt)++] = mtx_str_from(d);
        return st;
    }
    st = mtx_sentences_split(d, strlen(d), &sp, &ns, err);
    if (st == MT_OK)
        st = mtx_grow((void **)t, cap, *nt + ns + 1, sizeof **t);
    for (k = 0; st == MT_OK && k < ns; k++)
        (*t)[(*nt)++] =
            (struct mt_str){d + sp[k].start, sp[k].end - sp[k].start};
    mt_free(sp);
    return st;
}

/* The answer's sentences, then every sentence of every document (each
 * document's from off[d] on), or each document whole with
 * MT_QA_ATTRIB_DOCUMENT, as spans in t; returns the count. */
static enum mt_status gap_texts(const struct qa_run *r,
                                const struct mt_qa_sent *s, size_t n,
                                struct mt_str **t, size_t *nt, size_t *off,
                                struct mt_error *err)
{
    const struct mt_qa_result *res = r->res;
    size_t cap = n + 16, i;
    enum mt_status st = MT_OK;

    *nt = 0;
    *t = mt_calloc(cap, sizeof **t);
    for (i = 0; *t && i < n; i++)
        (*t)[(*nt)++] = mtx_str_from(s[i].text);
    for (i = 0; st == MT_OK && *t && i < res->ndocs; i++) {
        off[i] = *nt - n;
        st = doc_spans(r, res->docs[i].text, t, nt, &cap, err);
    }
    off[res->ndocs] = *t ? *nt - n : 0;
    return *t ? st : mt_fail(err, MT_ENOMEM, "ask: out of memory");
}

/* Vectors of the answer's sentences and of every document sentence, when
 * a gap needs them (VerifAI compares with sentences, not whole
 * documents). */
static enum mt_status vectors(struct qa_run *r, const struct mt_qa_sent *s,
                              size_t n, float **sv, float **dv, size_t *off,
                              uint32_t *dims, struct mt_error *err)
{
    struct mt_str *t = NULL;
    float *all = NULL;
    size_t nt = 0;
    enum mt_status st = gap_texts(r, s, n, &t, &nt, off, err);

    if (st == MT_OK)
        st = mtx_qa_embed(r->q, t, nt, &all, dims, err);
    mt_free(t);
    if (st != MT_OK)
        return st;
    *sv = all;
    *dv = all + n * *dims;
    return MT_OK;
}

/* Whether an uncited sentence stands between two cited ones. */
static int has_gap(const struct mt_qa_sent *s, size_t n)
{
    size_t i;
    int seen = 0, gap = 0;

    for (i = 0; i < n; i++) {
        if (s[i].nrefs && seen && gap)
            return 1;
        seen |= s[i].nrefs > 0;
        gap = seen && !s[i].nrefs;
    }
    return 0;
}

/* Claim h: its members' texts joined, and h's citations. */
static enum mt_status make_claim(struct qa_run *r, const struct mt_qa_sent *s,
                                 size_t n, const long *owner, size_t h,
                                 struct mt_qa_claim *c)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < n; i++)
        if (owner[i] == (long)h)
            st = mtx_buf_printf(&b, "%s%s", b.len ? " " : "", s[i].text);
    memset(c, 0, sizeof *c);
    if (st == MT_OK) {
        c->text = mtx_qa_keep(r, b.data ? b.data : "", b.len);
        st = c->text ? MT_OK : MT_ENOMEM;
    }
    c->refs = s[h].refs;
    c->nrefs = s[h].nrefs;
    mtx_buf_free(&b);
    return st;
}

static enum mt_status build_claims(struct qa_run *r, const struct mt_qa_sent *s,
                                   size_t n, const long *owner)
{
    struct mt_qa_result *res = r->res;
    size_t i, k = 0;
    enum mt_status st = MT_OK;

    for (i = 0; i < n; i++)
        k += s[i].nrefs > 0;
    res->claims = mtx_arena_alloc(r->mem, (k + 1) * sizeof *res->claims);
    if (!res->claims)
        return MT_ENOMEM;
    for (i = 0; st == MT_OK && i < n; i++)
        if (s[i].nrefs)
            st = make_claim(r, s, n, owner, i, &res->claims[res->nclaims++]);
    return st;
}

/* Every sentence of the answer, in order, with the claim it belongs to
 * or -1 (unreferenced: an introduction, a conclusion). VerifAI keeps
 * these and shows them unreferenced; nothing of the answer is dropped. */
static enum mt_status build_sentences(struct qa_run *r,
                                      const struct mt_qa_sent *s, size_t n,
                                      const long *owner)
{
    struct mt_qa_result *res = r->res;
    long *claim_of = mt_calloc(n + 1, sizeof *claim_of);
    size_t i;
    long k = -1;

    res->sentences = mtx_arena_alloc(r->mem, (n + 1) * sizeof *res->sentences);
    if (!res->sentences || !claim_of) {
        mt_free(claim_of);
        return MT_ENOMEM;
    }
    for (i = 0; i < n; i++)
        claim_of[i] = s[i].nrefs ? ++k : -1;
    for (i = 0; i < n; i++) {
        res->sentences[i].text = s[i].text;
        res->sentences[i].claim = owner[i] < 0 ? -1 : claim_of[owner[i]];
    }
    res->nsentences = n;
    mt_free(claim_of);
    return MT_OK;
}

enum mt_status mtx_qa_claims(struct qa_run *r, struct mt_error *err)
{
    struct mt_qa_result *res = r->res;
    const char **known =
        mtx_arena_alloc(r->mem, (res->ndocs + 1) * sizeof *known);
    struct mt_qa_sent *s = NULL;
    long *owner = NULL;
    size_t *off = NULL;
    float *sv = NULL, *dv = NULL;
    uint32_t dims = 0;
    size_t n = 0, i;
    enum mt_status st = known ? MT_OK : MT_ENOMEM;

    for (i = 0; known && i < res->ndocs; i++)
        known[i] = res->docs[i].doc_id;
    if (st == MT_OK)
        st = mtx_qa_parse_answer(r->mem, res->answer, r->q->label_pre,
                                 r->q->label_suf, known, res->ndocs, &s, &n);
    if (st == MT_OK && !(owner = mt_calloc(n + 1, sizeof *owner)))
        st = MT_ENOMEM;
    if (st == MT_OK && !(off = mt_calloc(res->ndocs + 1, sizeof *off)))
        st = MT_ENOMEM;
    if (st == MT_OK && has_gap(s, n))
        st = vectors(r, s, n, &sv, &dv, off, &dims, err);
    if (st != MT_OK && st != MT_ENOMEM) /* group without similarities */
        st = mtx_qa_note(r,
                         "the embedder failed (%s): uncited sentences "
                         "joined the claim before them",
                         err ? err->msg : "");
    if (st == MT_OK) {
        mtx_qa_group(s, n, sv, dv, off, dims, owner);
        st = build_claims(r, s, n, owner);
    }
    if (st == MT_OK)
        st = build_sentences(r, s, n, owner);
    mt_free(sv); /* dv points into the same block */
    mt_free(owner);
    mt_free(off);
    if (st == MT_ENOMEM)
        return mt_fail(err, st, "ask: out of memory");
    return st;
}
