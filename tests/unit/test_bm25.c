/* Unit tests for src/index BM25 and segment files: hand-computed scores,
 * pruned == exhaustive on random queries, damage detection, OOM. */
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "index/bm25.h"
#include "index/bm25_int.h"
#include "index/segment.h"
#include "medtrust/core.h"
#include "tmpdir.h"

/* ==== Helpers ==== */

/* A file in the suite's folder (tmpdir.h). */
static const char *tmp_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmpl, name);
    return buf;
}

/* Splits s at spaces into terms[] (slices into s). */
static size_t split(const char *s, struct mt_str *terms, size_t max)
{
    size_t n = 0;

    while (*s && n < max) {
        const char *e;
        while (*s == ' ')
            s++;
        e = s;
        while (*e && *e != ' ')
            e++;
        if (e > s)
            terms[n++] = (struct mt_str){s, (size_t)(e - s)};
        s = e;
    }
    return n;
}

static void add_text(struct mt_bm25_builder *b, uint32_t doc, uint32_t f,
                     const char *s)
{
    struct mt_str t[64];
    size_t n = split(s, t, 64);

    CHECK_OK(mtx_bm25_builder_add(b, doc, f, t, n, NULL));
}

static uint64_t rng_state = 88172645463325252ull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static double rnd01(void)
{
    return (double)rnd() / 4294967296.0;
}

/* ==== Hand-computed example ==== */

static const char *const hand_docs[][2] = {
    {"heart attack", "heart attack symptoms include chest pain"},
    {"", "chest pain has many causes chest"},
    {"diabetes", "insulin and blood sugar"},
};

/* Textbook BM25F with the documented formula, written independently. */
static double hand_score(const char *const *q, size_t nq, uint32_t doc)
{
    const double k1 = 0.9, b = 0.4, wt = 2.0, wx = 1.0, N = 3.0;
    double len[3], avg = 0.0, score = 0.0;
    struct mt_str t[64];

    for (int d = 0; d < 3; d++) {
        len[d] = wt * (double)split(hand_docs[d][0], t, 64) +
                 wx * (double)split(hand_docs[d][1], t, 64);
        avg += len[d] / N;
    }
    for (size_t i = 0; i < nq; i++) {
        double df = 0.0, tf = 0.0;
        for (int d = 0; d < 3; d++) {
            double f = 0.0;
            for (int fl = 0; fl < 2; fl++) {
                size_t n = split(hand_docs[d][fl], t, 64);
                for (size_t j = 0; j < n; j++)
                    f += mtx_str_eq_c(t[j], q[i]) ? (fl ? wx : wt) : 0.0;
            }
            df += f > 0.0;
            if (d == (int)doc)
                tf = f;
        }
        if (tf > 0.0)
            score += log(1.0 + (N - df + 0.5) / (df + 0.5)) * tf * (k1 + 1.0) /
                     (tf + k1 * (1.0 - b + b * len[doc] / avg));
    }
    return score;
}

static struct mt_bm25 *build_hand(const char *name)
{
    struct mt_bm25_builder *b = NULL;
    struct mt_bm25 *idx = NULL;
    char path[256];

    CHECK_OK(mtx_bm25_builder_new(NULL, &b, NULL));
    for (uint32_t d = 0; d < 3; d++) {
        add_text(b, d, MT_BM25_FIELD_TEXT, hand_docs[d][1]);
        add_text(b, d, MT_BM25_FIELD_TITLE, hand_docs[d][0]);
    }
    CHECK_OK(
        mtx_bm25_builder_write(b, tmp_path(path, sizeof path, name), NULL));
    mtx_bm25_builder_free(b);
    CHECK_OK(mtx_bm25_open(path, &idx, NULL));
    return idx;
}

static void test_bm25_scores_match_hand_formula(void **state)
{
    static const char *const q[] = {"chest", "pain", "heart", "nothing"};
    struct mt_bm25 *idx = build_hand("hand.bm25");
    struct mt_bm25_hit hits[5];
    struct mt_str qs[4];
    size_t n = 0;
    (void)state;
    for (int i = 0; i < 4; i++)
        qs[i] = mtx_str_from(q[i]);
    CHECK_OK(mtx_bm25_search(idx, qs, 4, NULL, hits, 5, &n, NULL));
    CHECK(n == 2);                               /* doc 2 matches nothing */
    CHECK(hits[0].doc == 0 && hits[1].doc == 1); /* title "heart" wins */
    for (size_t i = 0; i < n; i++)
        CHECK(fabs((double)hits[i].score - hand_score(q, 4, hits[i].doc)) <
              1e-5);
    /* a repeated term counts once per occurrence */
    qs[1] = qs[0];
    CHECK_OK(mtx_bm25_search(idx, qs, 2, NULL, hits, 5, &n, NULL));
    CHECK(n == 2 && hits[0].doc == 1);
    {
        const char *const qq[] = {"chest", "chest"};
        CHECK(fabs((double)hits[0].score - hand_score(qq, 2, 1)) < 1e-5);
    }
    mtx_bm25_close(idx);
}

/* s(t,d) with collection statistics N 40 and avgdl 9, by hand. */
static double coll_s(double tf, double len, double df)
{
    return log1p((40.0 - df + 0.5) / (df + 0.5)) * tf * 1.9 /
           (tf + 0.9 * (0.6 + 0.4 * len / 9.0));
}

/* Given collection statistics, a segment scores with them, not its own:
 * "chest pain" over the hand documents (doc 0: length 2 x 2 + 6, one of
 * each; doc 1: length 6, chest twice, pain once). A df below the
 * segment's own (2 for both) is raised to it. */
static void test_bm25_scores_with_collection_stats(void **state)
{
    static const uint64_t df[] = {12, 3};
    static const uint64_t low[] = {1, 0};
    struct mt_bm25 *idx = build_hand("coll.bm25");
    struct mt_bm25_coll coll = {40, 9.0, df};
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_bm25_hit hits[5];
    struct mt_str qs[2] = {mtx_str_from("chest"), mtx_str_from("pain")};
    size_t n = 0;
    (void)state;
    assert_int_equal(mtx_bm25_term_df(idx, qs[0]), 2);
    assert_int_equal(mtx_bm25_term_df(idx, mtx_str_from("nothing")), 0);
    sp.coll = &coll;
    CHECK_OK(mtx_bm25_search(idx, qs, 2, &sp, hits, 5, &n, NULL));
    CHECK(n == 2 && hits[0].doc == 1 && hits[1].doc == 0);
    CHECK(fabs((double)hits[0].score - (coll_s(2, 6, 12) + coll_s(1, 6, 3))) <
          1e-5);
    CHECK(fabs((double)hits[1].score - (coll_s(1, 10, 12) + coll_s(1, 10, 3))) <
          1e-5);
    coll.df = low;
    CHECK_OK(mtx_bm25_search_exhaustive(idx, qs, 2, &sp, hits, 5, &n, NULL));
    CHECK(n == 2 && hits[0].doc == 1);
    CHECK(fabs((double)hits[0].score - (coll_s(2, 6, 2) + coll_s(1, 6, 2))) <
          1e-5);
    mtx_bm25_close(idx);
}

/* ==== Random corpus: pruned search == exhaustive ==== */

#define R_DOCS 5000u
#define R_VOCAB 2000u

static double zipf_cdf[R_VOCAB];
static char vocab[R_VOCAB + 1][8];

static uint32_t zipf(void)
{
    double u = rnd01();
    uint32_t lo = 0, hi = R_VOCAB - 1;

    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (zipf_cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void zipf_init(void)
{
    double sum = 0.0, acc = 0.0;

    for (uint32_t i = 0; i < R_VOCAB; i++)
        sum += 1.0 / pow(i + 1.0, 1.05);
    for (uint32_t i = 0; i < R_VOCAB; i++) {
        acc += 1.0 / pow(i + 1.0, 1.05) / sum;
        zipf_cdf[i] = acc;
        snprintf(vocab[i], sizeof vocab[i], "w%u", i);
    }
    zipf_cdf[R_VOCAB - 1] = 1.0;
    strcpy(vocab[R_VOCAB], "unknown"); /* never indexed */
}

static void add_random_doc(struct mt_bm25_builder *b, uint32_t d)
{
    struct mt_str t[600];
    uint32_t len = rnd() % 8 == 0 ? 1 + rnd() % 600 : 20 + rnd() % 200;
    uint32_t tl = rnd() % 3 == 0 ? 0 : 1 + rnd() % 8;

    if (rnd() % 50 == 0)
        return; /* an empty document */
    for (uint32_t i = 0; i < len; i++)
        t[i] = mtx_str_from(vocab[zipf()]);
    CHECK_OK(mtx_bm25_builder_add(b, d, MT_BM25_FIELD_TEXT, t, len, NULL));
    for (uint32_t i = 0; i < tl; i++)
        t[i] = mtx_str_from(vocab[zipf()]);
    CHECK_OK(mtx_bm25_builder_add(b, d, MT_BM25_FIELD_TITLE, t, tl, NULL));
}

static struct mt_bm25 *build_random_norms(const char *name, int float_norms)
{
    struct mt_bm25_builder *b = NULL;
    struct mt_bm25 *idx = NULL;
    struct mt_bm25_params p = mtx_bm25_default_params();
    char path[256];

    zipf_init();
    p.field_weight[MT_BM25_FIELD_TITLE] = 2.5f;
    p.float_norms = float_norms;
    CHECK_OK(mtx_bm25_builder_new(&p, &b, NULL));
    for (uint32_t d = 0; d < R_DOCS; d++)
        add_random_doc(b, d);
    CHECK_OK(mtx_bm25_builder_set_ndocs(b, R_DOCS, NULL));
    CHECK_OK(
        mtx_bm25_builder_write(b, tmp_path(path, sizeof path, name), NULL));
    mtx_bm25_builder_free(b);
    CHECK_OK(mtx_bm25_open(path, &idx, NULL));
    return idx;
}

static struct mt_bm25 *build_random(const char *name)
{
    return build_random_norms(name, 0);
}

static size_t random_query(struct mt_str *q)
{
    size_t n = 1 + rnd() % 8;

    for (size_t i = 0; i < n; i++) {
        uint32_t r = rnd() % 20;
        if (r == 0)
            q[i] = mtx_str_from(vocab[R_VOCAB]);
        else if (r == 1 && i > 0)
            q[i] = q[rnd() % i]; /* repeated term */
        else if (r < 6)
            q[i] = mtx_str_from(vocab[rnd() % R_VOCAB]); /* rare too */
        else
            q[i] = mtx_str_from(vocab[zipf()]);
    }
    return n;
}

static int accept_mod3(uint32_t doc, void *user)
{
    (void)user;
    return doc % 3 != 0;
}

static void compare_one(const struct mt_bm25 *idx, const struct mt_str *q,
                        size_t nq, struct mt_bm25_search_params *sp, size_t k)
{
    struct mt_bm25_hit a[50], b[50];
    size_t na = 99, nb = 98;

    CHECK_OK(mtx_bm25_search(idx, q, nq, sp, a, k, &na, NULL));
    CHECK_OK(mtx_bm25_search_exhaustive(idx, q, nq, sp, b, k, &nb, NULL));
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(a[i].doc, b[i].doc);
        CHECK(memcmp(&a[i].score, &b[i].score, sizeof(float)) == 0);
        if (i)
            CHECK(a[i - 1].score >= a[i].score);
        if (sp->accept)
            CHECK(sp->accept(a[i].doc, NULL));
    }
}

/* Statistics of a collection this segment is a part of (bounds must hold
 * with any): N up to 8x the segment's, avgdl from a third to 3x its own,
 * each df the segment's plus up to N's rest. */
static const struct mt_bm25_coll *random_coll(const struct mt_bm25 *idx,
                                              const struct mt_str *q, size_t nq,
                                              struct mt_bm25_coll *c,
                                              uint64_t *df)
{
    struct mtx_bm25_stats st;

    mtx_bm25_stats(idx, &st);
    c->ndocs = st.docs + rnd() % (7 * st.docs);
    c->avgdl = st.avgdl * (1.0 / 3.0 + rnd01() * (3.0 - 1.0 / 3.0));
    for (size_t i = 0; i < nq; i++) {
        uint64_t own = mtx_bm25_term_df(idx, q[i]);
        df[i] = own + rnd() % (c->ndocs - st.docs + 1);
    }
    c->df = df;
    return c;
}

static void test_bm25_pruning_equals_exhaustive(void **state)
{
    static const size_t ks[] = {1, 10, 50};
    struct mt_bm25 *idx = build_random("rand.bm25");
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_bm25_coll coll;
    uint64_t df[8];
    struct mt_str q[8];
    (void)state;
    CHECK_OK(mtx_bm25_ctx_new(&sp.ctx));
    for (int it = 0; it < 3000; it++) {
        size_t nq = random_query(q);
        sp.k1 = MT_BM25_DEFAULT_K1;
        sp.b = MT_BM25_DEFAULT_B;
        sp.accept = NULL;
        if (it % 5 == 4) { /* bounds must hold for any k1, b */
            sp.k1 = (float)(rnd01() * 2.0);
            sp.b = (float)rnd01();
        }
        if (it % 7 == 6)
            sp.accept = accept_mod3;
        sp.coll = it % 4 == 3 ? random_coll(idx, q, nq, &coll, df) : NULL;
        for (int j = 0; j < 3; j++)
            compare_one(idx, q, nq, &sp, ks[j]);
    }
    mtx_bm25_ctx_free(sp.ctx);
    mtx_bm25_close(idx);
}

/* Queries of 4-8 of the 40 commonest words: every list long, most of
 * them essential, block checks failing often, so lazy cursors skip
 * blocks undecoded and candidates at a skip target turn out to hold no
 * posting (the cheaper path for many common terms). */
static void test_bm25_common_terms_equal_exhaustive(void **state)
{
    struct mt_bm25 *idx = build_random("common.bm25");
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_str q[8];
    (void)state;
    for (int it = 0; it < 400; it++) {
        size_t nq = 4 + rnd() % 5;
        for (size_t i = 0; i < nq; i++)
            q[i] = mtx_str_from(vocab[rnd() % 40]);
        sp.accept = it % 5 == 4 ? accept_mod3 : NULL;
        compare_one(idx, q, nq, &sp,
                    (size_t)(1 + it % 3 * 9)); /* k 1, 10, 19 */
    }
    mtx_bm25_close(idx);
}

/* A floor (the k-th score some other segment reached) never drops a
 * document scoring above it: the exhaustive hits above the floor are the
 * floor search's first hits, in order, with their scores. At the k-th
 * exhaustive score (less a float step) that is the whole exhaustive top
 * k; above every score, nothing; a floor that is not a finite number >= 0
 * is refused. */
static void floor_one(const struct mt_bm25 *idx, const struct mt_str *q,
                      size_t nq, struct mt_bm25_search_params *sp, size_t k,
                      double floor)
{
    struct mt_bm25_hit a[20], b[20];
    size_t na = 99, nb = 98, above = 0;

    sp->floor = 0.0;
    CHECK_OK(mtx_bm25_search_exhaustive(idx, q, nq, sp, b, k, &nb, NULL));
    sp->floor = floor;
    CHECK_OK(mtx_bm25_search(idx, q, nq, sp, a, k, &na, NULL));
    while (above < nb && (double)b[above].score > floor * (1.0 + 1e-6))
        above++;
    CHECK(na >= above && na <= k);
    for (size_t i = 0; i < above; i++) {
        assert_int_equal(a[i].doc, b[i].doc);
        CHECK(memcmp(&a[i].score, &b[i].score, sizeof(float)) == 0);
    }
    for (size_t i = above; i < na; i++) /* below the floor: only real hits */
        CHECK(a[i].score <= b[above ? above - 1 : 0].score);
}

static void test_bm25_floor_keeps_what_is_above_it(void **state)
{
    struct mt_bm25 *idx = build_random("floor.bm25");
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_bm25_hit b[20];
    struct mt_str q[8];
    size_t nb = 0;
    (void)state;
    for (int it = 0; it < 600; it++) {
        size_t nq = it % 2 ? 4 + rnd() % 5 : random_query(q);
        size_t k = (size_t)(1 + it % 3 * 9); /* 1, 10, 19 */
        for (size_t i = 0; it % 2 && i < nq; i++)
            q[i] = mtx_str_from(vocab[rnd() % 40]); /* common terms */
        sp.accept = it % 5 == 4 ? accept_mod3 : NULL;
        sp.floor = 0.0;
        CHECK_OK(mtx_bm25_search_exhaustive(idx, q, nq, &sp, b, k, &nb, NULL));
        if (nb == 0)
            continue;
        if (nb == k) /* the k-th score: the whole top k, nothing else */
            floor_one(idx, q, nq, &sp, k,
                      (double)nextafterf(b[k - 1].score, 0.0f));
        floor_one(idx, q, nq, &sp, k, rnd01() * 1.2 * (double)b[0].score);
        floor_one(idx, q, nq, &sp, k, 2.0 * (double)b[0].score);
    }
    sp.floor = 1e300;
    CHECK_OK(mtx_bm25_search(idx, q, 1, &sp, b, 10, &nb, NULL));
    CHECK(nb == 0);
    sp.floor = -1.0;
    CHECK(mtx_bm25_search(idx, q, 1, &sp, b, 10, &nb, NULL) == MT_EINVAL);
    sp.floor = INFINITY;
    CHECK(mtx_bm25_search(idx, q, 1, &sp, b, 10, &nb, NULL) == MT_EINVAL);
    sp.floor = NAN;
    CHECK(mtx_bm25_search(idx, q, 1, &sp, b, 10, &nb, NULL) == MT_EINVAL);
    mtx_bm25_close(idx);
}

/* The postings decoder on blocks of one-byte varints (its fast path) and
 * of longer ones: every posting back with its weighted tf, and a doc past
 * 'last' or bytes that end inside a posting stop it at the postings
 * before, as the careful path does. */
static void decode_case(uint32_t first_gap, int title_last)
{
    static const float w[2] = {2.0f, 1.0f};
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, len_before_last = 0;
    uint32_t docs[MT_BM25_BLOCK], want[MT_BM25_BLOCK];
    float wtf[MT_BM25_BLOCK];
    const uint8_t *p;
    uint32_t n = 100, doc = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint32_t gap = i ? i % 7 : first_gap;
        uint32_t tt = (i == n - 1 && title_last) || i % 11 == 3 ? 1 + i % 3 : 0;
        doc = i ? doc + gap + 1 : gap;
        want[i] = doc;
        len_before_last = len;
        CHECK_OK(mtx_bm25_put_posting(&buf, &len, &cap, gap, tt, 1 + i % 5));
    }
    p = buf;
    CHECK(mtx_bm25_decode(&p, buf + len, -1, doc, n, w, docs, wtf) == n);
    CHECK(p == buf + len);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t tt = (i == n - 1 && title_last) || i % 11 == 3 ? 1 + i % 3 : 0;
        assert_int_equal(docs[i], want[i]);
        CHECK(wtf[i] == bm25_weigh(w, tt, 1 + i % 5));
    }
    p = buf; /* the 60th doc past last: 59 */
    CHECK(mtx_bm25_decode(&p, buf + len, -1, want[59] - 1, n, w, docs, wtf) ==
          59);
    p = buf; /* the last posting cut short */
    CHECK(mtx_bm25_decode(&p, buf + len - 1, -1, doc, n, w, docs, wtf) ==
          n - 1);
    p = buf;
    CHECK(mtx_bm25_decode(&p, buf + len_before_last, -1, doc, n, w, docs,
                          wtf) == n - 1);
    mt_free(buf);
}

static void test_bm25_decode_stops_at_damage(void **state)
{
    (void)state;
    decode_case(3, 0);   /* all one-byte varints */
    decode_case(3, 1);   /* the last posting has a title tf */
    decode_case(300, 0); /* a two-byte gap: the careful path */
    decode_case(300, 1);
}

/* ==== One-byte norms (format 2) and float lengths (format 1) ==== */

/* The SmallFloat code of Lucene's BM25 norms (intToByte4 / byte4ToInt):
 * every byte decodes to a length that encodes back to it, in increasing
 * order; 0..39 are exact; above, a length loses under 1/8, never gains;
 * and a few values worked by hand from Lucene's algorithm (Lucene itself
 * is not among this project's dependencies, so it is not run here). */
static void test_bm25_norms_are_smallfloat(void **state)
{
    (void)state;
    for (uint32_t b = 0; b < 256; b++) {
        float v = bm25_norm_decode((uint8_t)b);
        if (v < 16777216.0f) /* past 2^24 a float cannot hold it exactly */
            assert_int_equal(bm25_norm_encode(v), b);
        if (b)
            CHECK(v > bm25_norm_decode((uint8_t)(b - 1)));
    }
    for (uint32_t i = 0; i < 200000; i += 1 + i / 64) {
        float v = bm25_norm_decode(bm25_norm_encode((float)i));
        if (i < 40)
            CHECK(v == (float)i);
        CHECK(v <= (float)i && (double)v > (double)i * 7.0 / 8.0 - 1e-9);
    }
    assert_int_equal(bm25_norm_encode(100.0f), 57);
    CHECK(bm25_norm_decode(57) == 96.0f);
    assert_int_equal(bm25_norm_encode(1000.0f), 87);
    CHECK(bm25_norm_decode(87) == 984.0f);
    CHECK(bm25_norm_encode(99.6f) == bm25_norm_encode(100.0f)); /* rounds */
    assert_int_equal(bm25_norm_encode(3e9f), 255);
    CHECK(bm25_norm_decode(255) == 2013265944.0f);
}

/* A format-1 segment (float lengths, as written before byte norms) still
 * opens and searches exactly; the two formats rank alike and their
 * scores differ only through the quantised lengths (a few per cent). */
static void test_bm25_float_norms_still_read(void **state)
{
    uint64_t seed = rng_state;
    struct mt_bm25 *v1 = build_random_norms("v1.bm25", 1);
    struct mt_bm25 *v2;
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_bm25_hit a[10], b[10];
    struct mtx_bm25_stats s1, s2;
    struct mt_str q[8];
    size_t na = 0, nb = 0, same = 0, total = 0;
    (void)state;
    rng_state = seed; /* the same corpus again */
    v2 = build_random_norms("v2.bm25", 0);
    mtx_bm25_stats(v1, &s1);
    mtx_bm25_stats(v2, &s2);
    CHECK(s1.avgdl == s2.avgdl);              /* from the exact lengths */
    CHECK(s2.bytes + 2 * s2.docs < s1.bytes); /* 1 byte a doc, not 4 */
    for (int it = 0; it < 500; it++) {
        size_t nq = random_query(q);
        compare_one(v1, q, nq, &sp, 10);
        CHECK_OK(mtx_bm25_search(v1, q, nq, NULL, a, 10, &na, NULL));
        CHECK_OK(mtx_bm25_search(v2, q, nq, NULL, b, 10, &nb, NULL));
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
            same += a[i].doc == b[i].doc;
            CHECK(fabs((double)(a[i].score - b[i].score)) <=
                  0.1 * (double)a[0].score);
        }
        total += na;
    }
    CHECK(total > 1000 && same * 10 > total * 7);
    mtx_bm25_close(v1);
    mtx_bm25_close(v2);
}

/* ==== Threads share one index ==== */

struct thr {
    const struct mt_bm25 *idx;
    uint64_t seed;
    int ok;
};

static void *thr_main(void *arg)
{
    struct thr *t = arg;
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_bm25_hit a[10], b[10];
    struct mt_str q[2];
    size_t na = 0, nb = 0;

    t->ok = mtx_bm25_ctx_new(&sp.ctx) == MT_OK;
    for (uint32_t i = 0; t->ok && i < 300; i++) {
        q[0] = mtx_str_from(vocab[(t->seed + i * 7) % 200]);
        q[1] = mtx_str_from(vocab[(t->seed * 3 + i) % R_VOCAB]);
        t->ok = mtx_bm25_search(t->idx, q, 2, &sp, a, 10, &na, NULL) == MT_OK &&
                mtx_bm25_search_exhaustive(t->idx, q, 2, NULL, b, 10, &nb,
                                           NULL) == MT_OK &&
                na == nb && memcmp(a, b, na * sizeof a[0]) == 0;
    }
    mtx_bm25_ctx_free(sp.ctx);
    return NULL;
}

static void test_bm25_concurrent_searches_agree(void **state)
{
    struct mt_bm25 *idx = build_random("thr.bm25");
    pthread_t th[4];
    struct thr t[4];
    (void)state;
    for (int i = 0; i < 4; i++) {
        t[i] = (struct thr){idx, (uint64_t)i * 1000 + 1, 0};
        CHECK(pthread_create(&th[i], NULL, thr_main, &t[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(t[i].ok);
    }
    mtx_bm25_close(idx);
}

/* ==== Files: round trip, truncation, damage ==== */

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *p;
    long sz;

    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    p = malloc((size_t)sz);
    CHECK(p && fread(p, 1, (size_t)sz, f) == (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return p;
}

static void write_all(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");

    CHECK(f != NULL);
    CHECK(fwrite(p, 1, n, f) == n);
    fclose(f);
}

static void test_bm25_round_trip_keeps_stats(void **state)
{
    struct mt_bm25 *idx = build_hand("rt.bm25");
    struct mtx_bm25_stats st;
    struct mt_str q = MT_STR_C("insulin");
    struct mt_bm25_hit h[3];
    size_t n = 0;
    (void)state;
    mtx_bm25_stats(idx, &st);
    CHECK(st.docs == 3);
    CHECK(st.terms == 14);
    CHECK(st.postings == 16);
    CHECK(st.bytes > 64);
    CHECK(fabs(st.avgdl - (10.0 + 6.0 + 6.0) / 3.0) < 1e-6);
    CHECK(st.field_weight[0] == 2.0f && st.field_weight[1] == 1.0f);
    CHECK_OK(mtx_bm25_search(idx, &q, 1, NULL, h, 3, &n, NULL));
    CHECK(n == 1 && h[0].doc == 2);
    mtx_bm25_close(idx);
}

static void test_bm25_truncated_file_rejected(void **state)
{
    struct mt_bm25 *idx = build_hand("trunc.bm25");
    struct mt_bm25 *bad = NULL;
    struct mt_error err;
    char path[256];
    unsigned char *p;
    size_t n;
    (void)state;
    mtx_bm25_close(idx);
    p = read_all(tmp_path(path, sizeof path, "trunc.bm25"), &n);
    for (size_t cut = 0; cut < n; cut += 1 + cut / 3) {
        write_all(path, p, cut);
        mt_error_clear(&err);
        assert_int_equal(mtx_bm25_open(path, &bad, &err), MT_EPARSE);
        CHECK(bad == NULL);
        CHECK(strstr(err.msg, path) != NULL);
    }
    free(p);
}

static void test_bm25_flipped_byte_rejected(void **state)
{
    struct mt_bm25 *idx = build_hand("flip.bm25");
    struct mt_bm25 *bad = NULL;
    struct mt_error err;
    char path[256];
    unsigned char *p;
    size_t n, named = 0, lazy = 0;
    enum mt_status st;
    (void)state;
    mtx_bm25_close(idx);
    p = read_all(tmp_path(path, sizeof path, "flip.bm25"), &n);
    for (size_t i = 0; i < n; i++) { /* every byte of the file */
        p[i] ^= 0x20;
        write_all(path, p, n);
        p[i] ^= 0x20;
        mt_error_clear(&err);
        st = mtx_bm25_open(path, &bad, &err);
        if (st == MT_OK) { /* the postings: their CRC is left to the check */
            mt_error_clear(&err);
            assert_int_equal(mtx_bm25_check(bad, NULL, NULL, &err), MT_EPARSE);
            CHECK(strstr(err.msg, "section 'POST' checksum mismatch") != NULL);
            mtx_bm25_close(bad);
            lazy++;
        } else {
            assert_int_equal(st, MT_EPARSE);
        }
        CHECK(strstr(err.msg, path) != NULL);
        named += strstr(err.msg, "section '") != NULL;
    }
    CHECK(named > n / 2); /* section bytes dominate and are named */
    CHECK(lazy > 0 && lazy < n / 2);
    write_all(path, p, n);
    CHECK_OK(mtx_bm25_open(path, &bad, NULL));
    CHECK_OK(mtx_bm25_check(bad, NULL, NULL, NULL));
    CHECK(mtx_bm25_check_bytes(bad) > 0 && mtx_bm25_check_bytes(bad) < n);
    mtx_bm25_close(bad);
    free(p);
}

static void test_bm25_filter_excludes_docs(void **state)
{
    struct mt_bm25 *idx = build_hand("filter.bm25");
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_str q[2] = {MT_STR_C("chest"), MT_STR_C("heart")};
    struct mt_bm25_hit h[3];
    size_t n = 0;
    (void)state;
    sp.accept = accept_mod3; /* drops doc 0 */
    CHECK_OK(mtx_bm25_search(idx, q, 2, &sp, h, 3, &n, NULL));
    CHECK(n == 1 && h[0].doc == 1);
    CHECK_OK(mtx_bm25_search_exhaustive(idx, q, 2, &sp, h, 3, &n, NULL));
    CHECK(n == 1 && h[0].doc == 1);
    mtx_bm25_close(idx);
}

static void test_bm25_query_edge_cases(void **state)
{
    struct mt_bm25 *idx = build_hand("edge.bm25");
    struct mt_bm25_search_params sp = mtx_bm25_default_search_params();
    struct mt_str q[3] = {MT_STR_C("zzz"), MT_STR_C(""), MT_STR_C("pain")};
    struct mt_bm25_hit h[100];
    size_t n = 7;
    (void)state;
    CHECK_OK(mtx_bm25_search(idx, q, 0, NULL, h, 10, &n, NULL));
    CHECK(n == 0);
    CHECK_OK(mtx_bm25_search(idx, q, 2, NULL, h, 10, &n, NULL));
    CHECK(n == 0);
    CHECK_OK(mtx_bm25_search(idx, q, 3, NULL, h, 0, &n, NULL));
    CHECK(n == 0);
    CHECK_OK(mtx_bm25_search(idx, q, 3, NULL, h, 100, &n, NULL));
    CHECK(n == 2);
    sp.b = 1.5f;
    CHECK(mtx_bm25_search(idx, q, 3, &sp, h, 10, &n, NULL) == MT_EINVAL);
    mtx_bm25_close(idx);
}

static void test_bm25_builder_rejects_bad_input(void **state)
{
    struct mt_bm25_builder *b = NULL;
    struct mt_bm25_params p = mtx_bm25_default_params();
    struct mt_str t = MT_STR_C("a");
    struct mt_bm25 *idx = NULL;
    struct mtx_bm25_stats st;
    char path[256];
    (void)state;
    p.field_weight[0] = 0.0f;
    CHECK(mtx_bm25_builder_new(&p, &b, NULL) == MT_EINVAL);
    CHECK_OK(mtx_bm25_builder_new(NULL, &b, NULL));
    CHECK(mtx_bm25_builder_add(b, 0, 2, &t, 1, NULL) == MT_EINVAL);
    CHECK_OK(mtx_bm25_builder_add(b, 5, 1, &t, 1, NULL));
    CHECK(mtx_bm25_builder_add(b, 4, 1, &t, 1, NULL) == MT_EINVAL);
    CHECK_OK(
        mtx_bm25_builder_write(b, tmp_path(path, sizeof path, "e.bm25"), NULL));
    CHECK(mtx_bm25_builder_add(b, 5, 1, &t, 1, NULL) == MT_EINVAL);
    mtx_bm25_builder_free(b);
    CHECK_OK(mtx_bm25_open(path, &idx, NULL));
    mtx_bm25_stats(idx, &st);
    CHECK(st.docs == 6 && st.terms == 1 && st.postings == 1);
    mtx_bm25_close(idx);
}

static void test_bm25_empty_index_searches(void **state)
{
    struct mt_bm25_builder *b = NULL;
    struct mt_bm25 *idx = NULL;
    struct mt_str q = MT_STR_C("a");
    struct mt_bm25_hit h[2];
    size_t n = 5;
    char path[256];
    (void)state;
    CHECK_OK(mtx_bm25_builder_new(NULL, &b, NULL));
    CHECK_OK(mtx_bm25_builder_write(
        b, tmp_path(path, sizeof path, "empty.bm25"), NULL));
    mtx_bm25_builder_free(b);
    CHECK_OK(mtx_bm25_open(path, &idx, NULL));
    CHECK_OK(mtx_bm25_search(idx, &q, 1, NULL, h, 2, &n, NULL));
    CHECK(n == 0);
    CHECK_OK(mtx_bm25_search_exhaustive(idx, &q, 1, NULL, h, 2, &n, NULL));
    CHECK(n == 0);
    mtx_bm25_close(idx);
}

/* ==== Segment container ==== */

static void test_segment_sections_and_crc(void **state)
{
    struct mt_seg_writer *w = NULL;
    struct mt_seg *s = NULL;
    const void *p;
    size_t n;
    char path[256];
    (void)state;
    CHECK(mtx_crc32c(0, "123456789", 9) == 0xE3069283u);
    CHECK(mtx_crc32c(mtx_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);
    tmp_path(path, sizeof path, "seg");
    CHECK_OK(mtx_seg_writer_open(path, "TESTSEG\0", 7, &w, NULL));
    CHECK_OK(mtx_seg_writer_begin(w, MT_SEG_ID('A', 'A', 'A', 'A'), NULL));
    CHECK_OK(mtx_seg_writer_write(w, "hello", 5, NULL));
    CHECK_OK(mtx_seg_writer_begin(w, MT_SEG_ID('B', 'B', 'B', 'B'), NULL));
    CHECK(mtx_seg_writer_begin(w, MT_SEG_ID('A', 'A', 'A', 'A'), NULL) ==
          MT_EINVAL);
    CHECK_OK(mtx_seg_writer_commit(w, NULL));
    CHECK(access(path, F_OK) == 0);
    CHECK(mtx_seg_open(path, "OTHERSEG", 0, &s, NULL) == MT_EPARSE);
    CHECK_OK(mtx_seg_open(path, "TESTSEG\0", 0, &s, NULL));
    CHECK(mtx_seg_version(s) == 7);
    CHECK_OK(mtx_seg_section(s, MT_SEG_ID('A', 'A', 'A', 'A'), &p, &n, NULL));
    CHECK(n == 5 && memcmp(p, "hello", 5) == 0 && (uintptr_t)p % 16 == 0);
    CHECK_OK(mtx_seg_section(s, MT_SEG_ID('B', 'B', 'B', 'B'), &p, &n, NULL));
    CHECK(n == 0);
    CHECK(mtx_seg_section(s, MT_SEG_ID('C', 'C', 'C', 'C'), &p, &n, NULL) ==
          MT_ENOTFOUND);
    CHECK_OK(mtx_seg_verify(s, MT_SEG_ID('A', 'A', 'A', 'A'), NULL));
    mtx_seg_close(s);
}

/* ==== Out of memory ==== */

static enum mt_status oom_once(const char *path)
{
    struct mt_bm25_builder *b = NULL;
    struct mt_bm25 *idx = NULL;
    struct mt_bm25_hit h[4];
    struct mt_str q[2] = {MT_STR_C("chest"), MT_STR_C("pain")};
    size_t n = 0;
    enum mt_status st = mtx_bm25_builder_new(NULL, &b, NULL);

    for (uint32_t d = 0; st == MT_OK && d < 40; d++) {
        struct mt_str t[64];
        size_t nt = split(hand_docs[d % 3][1], t, 64);
        st = mtx_bm25_builder_add(b, d, 1, t, nt, NULL);
    }
    if (st == MT_OK)
        st = mtx_bm25_builder_write(b, path, NULL);
    mtx_bm25_builder_free(b);
    if (st == MT_OK)
        st = mtx_bm25_open(path, &idx, NULL);
    if (st == MT_OK)
        st = mtx_bm25_search(idx, q, 2, NULL, h, 4, &n, NULL);
    CHECK(st != MT_OK || n == 4);
    mtx_bm25_close(idx);
    return st;
}

static void test_bm25_oom_loop(void **state)
{
    char path[256];
    enum mt_status st = MT_ENOMEM;
    long i;
    (void)state;
    tmp_path(path, sizeof path, "oom.bm25");
    for (i = 0; i < 10000 && st != MT_OK; i++) {
        mt_alloc_fail_after(i);
        st = oom_once(path);
        mt_alloc_fail_reset();
        CHECK(st == MT_OK || st == MT_ENOMEM);
    }
    CHECK(st == MT_OK);
    CHECK(i > 10); /* the loop really injected failures */
    CHECK(access(path, F_OK) == 0);
}

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("mt-bm25");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bm25_scores_match_hand_formula),
        cmocka_unit_test(test_bm25_scores_with_collection_stats),
        cmocka_unit_test(test_bm25_pruning_equals_exhaustive),
        cmocka_unit_test(test_bm25_common_terms_equal_exhaustive),
        cmocka_unit_test(test_bm25_floor_keeps_what_is_above_it),
        cmocka_unit_test(test_bm25_decode_stops_at_damage),
        cmocka_unit_test(test_bm25_concurrent_searches_agree),
        cmocka_unit_test(test_bm25_norms_are_smallfloat),
        cmocka_unit_test(test_bm25_float_norms_still_read),
        cmocka_unit_test(test_bm25_round_trip_keeps_stats),
        cmocka_unit_test(test_bm25_truncated_file_rejected),
        cmocka_unit_test(test_bm25_flipped_byte_rejected),
        cmocka_unit_test(test_bm25_filter_excludes_docs),
        cmocka_unit_test(test_bm25_query_edge_cases),
        cmocka_unit_test(test_bm25_builder_rejects_bad_input),
        cmocka_unit_test(test_bm25_empty_index_searches),
        cmocka_unit_test(test_segment_sections_and_crc),
        cmocka_unit_test(test_bm25_oom_loop),
    };
    return cmocka_run_group_tests_name("bm25", tests, setup, teardown);
}
