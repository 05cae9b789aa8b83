/* Unit tests for the llama.cpp token encoder (src/model/token_encoder.c) on
 * tiny random-weight BERT GGUFs made at test time, and an end-to-end check
 * that `medtrust score --bertscore-model gguf:TINY --json` gives the
 * BERTScore that greedy matching worked here, from the same token
 * embeddings, gives. The CSV and runs are written here; no data-set text. */
#include "check.h"
#include "tiny_gguf.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "medtrust/core.h"
#include "medtrust/eval.h"
#include "model/token_encoder.h"

#define BERT_CLS 101 /* [CLS] and [SEP] in the bert-bge vocabulary */
#define BERT_SEP 102

static char dir[256];
static struct mtx_tok_encoder *shared;

static void path_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static int make_models(void **state)
{
    static const char *const kinds[] = {"embed", "rerank"};
    (void)state;
    return tiny_gguf_make(dir, sizeof dir, "/tmp/mt-tokenc-XXXXXX", kinds, 2);
}

static int remove_models(void **state)
{
    static const char *names[] = {"embed.gguf", "rerank.gguf", "bad.gguf",
                                  "ref.csv",    "run.txt",     "same.txt",
                                  "out.json",   "base.tsv"};
    char p[300];
    size_t i;
    (void)state;
    mtx_tok_encoder_close(shared);
    for (i = 0; dir[0] && i < sizeof names / sizeof names[0]; i++) {
        path_of(p, sizeof p, names[i]);
        unlink(p);
    }
    if (dir[0])
        rmdir(dir);
    return 0;
}

static struct mtx_tok_encoder *open_model(const char *file)
{
    struct mtx_tok_encoder_params p;
    struct mtx_tok_encoder *e = NULL;
    struct mt_error err = {MT_OK, ""};
    char spec[300];

    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    mtx_tok_encoder_default_params(&p);
    p.threads = 2;
    snprintf(spec, sizeof spec, "gguf:%s/%s", dir, file);
    if (mtx_tok_encoder_open(spec, &p, &e, &err) != MT_OK)
        fail_msg("%s", err.msg);
    return e;
}

static struct mtx_tok_encoder *embed_model(void)
{
    if (!shared)
        shared = open_model("embed.gguf");
    return shared;
}

/* One encoded text. */
struct toks {
    float *v;
    int32_t *ids;
    size_t n, dim;
};

static struct toks enc(struct mtx_tok_encoder *e, const char *text)
{
    struct toks t = {NULL, NULL, 0, 0};
    struct mt_error err = {MT_OK, ""};

    if (mtx_tok_encoder_encode(e, text, strlen(text), &t.v, &t.ids, &t.n,
                               &t.dim, &err) != MT_OK)
        fail_msg("%s", err.msg);
    return t;
}

static void toks_free(struct toks *t)
{
    mt_free(t->v);
    mt_free(t->ids);
}

/* ==== The encoder ==== */

static void test_tokenc_shapes_and_no_special_tokens(void **state)
{
    struct mtx_tok_encoder *e = embed_model();
    struct toks a = enc(e, "hello world");
    struct toks b = enc(e, "The patient has gout, treated with colchicine.");
    size_t i;
    (void)state;
    CHECK(mtx_tok_encoder_dims(e) == 64 && mtx_tok_encoder_layers(e) == 2);
    CHECK(strcmp(mtx_tok_encoder_model(e), "embed.gguf") == 0);
    /* "hello" and "world" are single word pieces; [CLS]/[SEP] are gone */
    CHECK(a.n == 2 && a.dim == 64);
    CHECK(a.ids[0] == 7592 && a.ids[1] == 2088);
    CHECK(b.n >= 8 && b.dim == 64);
    for (i = 0; i < b.n; i++)
        CHECK(b.ids[i] != BERT_CLS && b.ids[i] != BERT_SEP);
    for (i = 0; i < b.n * b.dim; i++)
        CHECK(isfinite(b.v[i]));
    toks_free(&a);
    toks_free(&b);
}

static void test_tokenc_is_deterministic(void **state)
{
    struct mtx_tok_encoder *e = embed_model();
    struct mtx_tok_encoder *e2 = open_model("embed.gguf");
    const char *t = "Start aspirin 81 mg daily, then review.";
    struct toks a = enc(e, t);
    struct toks b = enc(e, t);
    struct toks c = enc(e2, t);
    (void)state;
    CHECK(a.n == b.n && a.n == c.n && a.n > 0);
    CHECK(memcmp(a.v, b.v, a.n * a.dim * sizeof *a.v) == 0);
    CHECK(memcmp(a.v, c.v, a.n * a.dim * sizeof *a.v) == 0);
    CHECK(memcmp(a.ids, c.ids, a.n * sizeof *a.ids) == 0);
    toks_free(&a);
    toks_free(&b);
    toks_free(&c);
    mtx_tok_encoder_close(e2);
}

/* Per-token states are contextual: "patient" differs with its neighbours. */
static void test_tokenc_states_are_contextual(void **state)
{
    struct mtx_tok_encoder *e = embed_model();
    struct toks a = enc(e, "patient");
    struct toks b = enc(e, "the patient");
    (void)state;
    CHECK(a.n == 1 && b.n == 2 && a.ids[0] == b.ids[1]);
    CHECK(memcmp(a.v, b.v + b.dim, a.dim * sizeof *a.v) != 0);
    toks_free(&a);
    toks_free(&b);
}

static void test_tokenc_long_text_cut_to_context(void **state)
{
    struct mtx_tok_encoder *e = embed_model();
    char *text = mt_malloc(700 * 6 + 1);
    struct toks t;
    size_t i;
    (void)state;
    CHECK(text != NULL);
    for (i = 0; i < 700; i++)
        memcpy(text + i * 6, "word, ", 6);
    text[700 * 6] = '\0';
    t = enc(e, text); /* 1400 pieces; context 512 = [CLS] 510 [SEP] */
    CHECK(t.n == 510);
    toks_free(&t);
    mt_free(text);
}

static void test_tokenc_identical_pair_scores_one(void **state)
{
    struct mtx_tok_encoder *e = embed_model();
    const char *s = "Give intravenous insulin and recheck potassium.";
    struct toks a = enc(e, s);
    struct toks b = enc(e, s);
    struct mt_bertscore bs;
    (void)state;
    CHECK_OK(
        mt_bertscore_greedy(a.v, a.n, b.v, b.n, a.dim, NULL, NULL, NULL, &bs));
    CHECK(fabs(bs.p - 1.0) < 1e-6 && fabs(bs.r - 1.0) < 1e-6);
    CHECK(fabs(bs.f - 1.0) < 1e-6);
    toks_free(&a);
    toks_free(&b);
}

static void test_tokenc_cross_encoder_gguf_accepted(void **state)
{
    struct mtx_tok_encoder *e = open_model("rerank.gguf");
    struct toks a = enc(e, "hello world");
    (void)state;
    CHECK(a.n == 2 && a.dim == 64);
    toks_free(&a);
    mtx_tok_encoder_close(e);
}

static void test_tokenc_bad_specs_say_why(void **state)
{
    struct mtx_tok_encoder *e = NULL;
    struct mt_error err = {MT_OK, ""};
    char spec[300];
    FILE *f;
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    CHECK(mtx_tok_encoder_open("embed.gguf", NULL, &e, &err) == MT_EINVAL);
    CHECK(strstr(err.msg, "gguf:PATH") != NULL && e == NULL);
    snprintf(spec, sizeof spec, "gguf:%s/missing.gguf", dir);
    CHECK(mtx_tok_encoder_open(spec, NULL, &e, &err) == MT_ENOTFOUND);
    CHECK(strstr(err.msg, "--bertscore-model") != NULL);
    path_of(spec, sizeof spec, "bad.gguf");
    f = fopen(spec, "w");
    CHECK(f != NULL);
    fputs("not a model\n", f);
    fclose(f);
    snprintf(spec, sizeof spec, "gguf:%s/bad.gguf", dir);
    CHECK(mtx_tok_encoder_open(spec, NULL, &e, &err) == MT_EPARSE);
    CHECK(e == NULL);
    mtx_tok_encoder_close(NULL);
}

/* ==== End to end: medtrust score against greedy matching done here ==== */

static const char ref_csv[] =
    "Text ID,Text,Error Flag,Error Type,Error Sentence ID,Corrected "
    "Sentence,Important Words\n"
    "t-0,x,1,Diagnosis,2,The patient has gout.,gout\n"
    "t-1,x,0,NA,-1,NA,NA\n"
    "t-2,x,1,Management,1,\"Start aspirin, then review the patient.\","
    "aspirin\n"
    "t-3,x,1,Management,3,Give insulin now.,insulin\n"
    "t-4,x,1,Pharmacotherapy,4,Stop the warfarin today.,warfarin\n";

/* Predictions: identical, NA/NA, a paraphrase, a different text, and one
 * side NA. */
static const char *const preds[5] = {
    "The patient has gout.",     "NA", "Start heparin and review the patient.",
    "Insulin is given at once.", "NA",
};

static const char run_txt[] =
    "t-0 1 2 \"The patient has gout.\"\n"
    "t-1 0 -1 NA\n"
    "t-2 1 1 \"Start heparin and review the patient.\"\n"
    "t-3 1 3 \"Insulin is given at once.\"\n"
    "t-4 0 -1 NA\n";

static const char *const golds[5] = {
    "The patient has gout.",
    "NA",
    "Start aspirin, then review the patient.",
    "Give insulin now.",
    "Stop the warfarin today.",
};

static void write_file(const char *name, const char *text)
{
    char p[300];
    FILE *f;

    path_of(p, sizeof p, name);
    f = fopen(p, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Runs medtrust score with 'extra' flags; returns the parsed JSON. */
static json_t *run_score(const char *run, const char *extra)
{
    const char *bin = getenv("MEDTRUST_BIN");
    char cmd[2048];
    json_error_t je;
    json_t *j;

    if (!bin)
        fail_msg("MEDTRUST_BIN is not set (tests/run.sh sets it)");
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    snprintf(cmd, sizeof cmd,
             "%s score --ref %s/ref.csv --pred %s/%s "
             "--bertscore-model gguf:%s/embed.gguf %s --json >%s/out.json "
             "2>/dev/null",
             bin, dir, dir, run, dir, extra, dir);
    CHECK(system(cmd) == 0);
    path_of(cmd, sizeof cmd, "out.json");
    j = json_load_file(cmd, 0, &je);
    if (!j)
        fail_msg("out.json: %s", je.text);
    return j;
}

/* Mean over the rows of x of each row's best cosine against y, weighted
 * by w (NULL: uniform), worked here independently of src/eval. */
static double side(const struct toks *x, const struct toks *y, const double *w)
{
    double num = 0.0;
    double den = 0.0;
    size_t i, j, k;

    for (i = 0; i < x->n; i++) {
        double best = -2.0;
        const float *a = x->v + i * x->dim;
        for (j = 0; j < y->n; j++) {
            const float *b = y->v + j * y->dim;
            double ab = 0.0, aa = 0.0, bb = 0.0;
            for (k = 0; k < x->dim; k++) {
                ab += (double)a[k] * (double)b[k];
                aa += (double)a[k] * (double)a[k];
                bb += (double)b[k] * (double)b[k];
            }
            if (ab / (sqrt(aa) * sqrt(bb)) > best)
                best = ab / (sqrt(aa) * sqrt(bb));
        }
        num += (w ? w[i] : 1.0) * best;
        den += w ? w[i] : 1.0;
    }
    return num / den;
}

/* idf(t) = ln((M + 1) / (df(t) + 1)) over the M gold corrections. */
static double idf_of(int32_t id, const struct toks *gold, size_t m)
{
    size_t i, j, df = 0;

    for (i = 0; i < m; i++)
        for (j = 0; j < gold[i].n; j++)
            if (gold[i].ids[j] == id) {
                df++;
                break;
            }
    return log(((double)m + 1.0) / ((double)df + 1.0));
}

static double *weights(const struct toks *t, const struct toks *gold, size_t m)
{
    double *w = mt_malloc(t->n * sizeof *w);
    size_t i;

    CHECK(w != NULL);
    for (i = 0; i < t->n; i++)
        w[i] = idf_of(t->ids[i], gold, m);
    return w;
}

static double rescale(double x, double b)
{
    return (x - b) / (1.0 - b);
}

/* Per-note F1 by hand; base NULL: no rescaling; idf: weight by idf. */
static double hand_f(struct mtx_tok_encoder *e, size_t i, const double *base,
                     int idf)
{
    struct toks gold[5];
    struct toks c = enc(e, preds[i]);
    struct toks r = enc(e, golds[i]);
    double *wc = NULL, *wr = NULL;
    double p, rr, f;
    size_t k, m = 0;

    for (k = 0; idf && k < 5; k++)
        if (strcmp(golds[k], "NA") != 0)
            gold[m++] = enc(e, golds[k]);
    if (idf) {
        wc = weights(&c, gold, m);
        wr = weights(&r, gold, m);
    }
    p = side(&c, &r, wc);
    rr = side(&r, &c, wr);
    f = 2.0 * p * rr / (p + rr);
    if (base)
        f = rescale(f, base[2]);
    for (k = 0; k < m; k++)
        toks_free(&gold[k]);
    mt_free(wc);
    mt_free(wr);
    toks_free(&c);
    toks_free(&r);
    return f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f; /* clipped per note */
}

/* Composite over the 5 notes: t-1 NA/NA = 1, t-4 one NA = 0. */
static void expect_scores(const json_t *j, const double *base, int idf)
{
    struct mtx_tok_encoder *e = embed_model();
    double f0 = hand_f(e, 0, base, idf);
    double f2 = hand_f(e, 2, base, idf);
    double f3 = hand_f(e, 3, base, idf);
    double comp = (f0 + 1.0 + f2 + f3 + 0.0) / 5.0;
    double pairs = (f0 + f2 + f3) / 3.0;
    double got = json_real_value(
        json_object_get(json_object_get(j, "composite"), "bertscore"));
    double gotp = json_real_value(
        json_object_get(json_object_get(j, "pairs_mean"), "bertscore"));

    CHECK(fabs(got - comp) < 1e-9);
    CHECK(fabs(gotp - pairs) < 1e-9);
    CHECK(f2 < 1.0 && f3 < 1.0); /* paraphrases are not perfect */
}

static void test_score_cli_matches_hand_greedy(void **state)
{
    json_t *j;
    const json_t *c;
    double agg, r1, bs;
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    write_file("ref.csv", ref_csv);
    write_file("run.txt", run_txt);
    j = run_score("run.txt", "");
    expect_scores(j, NULL, 0);
    CHECK(strcmp(json_string_value(json_object_get(j, "bertscore_model")),
                 "embed.gguf") == 0);
    CHECK(json_is_false(json_object_get(j, "bertscore_idf")));
    CHECK(json_object_get(j, "bertscore_baseline") == NULL);
    /* BERTScore enters the aggregate (mean with ROUGE-1) and KPCS */
    c = json_object_get(j, "composite");
    agg = json_real_value(json_object_get(c, "aggregate"));
    r1 = json_real_value(json_object_get(c, "rouge1"));
    bs = json_real_value(json_object_get(c, "bertscore"));
    CHECK(fabs(agg - (r1 + bs) / 2.0) < 1e-9);
    CHECK(json_object_get(c, "kpcs") != NULL);
    json_decref(j);
}

static void test_score_cli_idf_and_baseline_match_hand(void **state)
{
    static const double base[3] = {0.25, 0.3, 0.35};
    json_t *j;
    const json_t *b;
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    write_file("ref.csv", ref_csv);
    write_file("run.txt", run_txt);
    j = run_score("run.txt",
                  "--bertscore-idf --bertscore-baseline 0.25,0.3,0.35");
    expect_scores(j, base, 1);
    CHECK(json_is_true(json_object_get(j, "bertscore_idf")));
    b = json_object_get(j, "bertscore_baseline");
    CHECK(json_array_size(b) == 3);
    CHECK(json_real_value(json_array_get(b, 2)) == 0.35);
    json_decref(j);
    /* a bert_score baseline table: the row of the model's last layer (2) */
    write_file("base.tsv", "LAYER,P,R,F\n0,0.9,0.9,0.9\n1,0.5,0.5,0.5\n"
                           "2,0.25,0.3,0.35\n");
    {
        char extra[400];
        snprintf(extra, sizeof extra,
                 "--bertscore-idf --bertscore-baseline %s/base.tsv", dir);
        j = run_score("run.txt", extra);
    }
    expect_scores(j, base, 1);
    json_decref(j);
}

static void test_score_cli_identical_pairs_f1_one(void **state)
{
    json_t *j;
    double f;
    (void)state;
    if (!dir[0])
        MISSING(
            "the tiny GGUF models (tests/fixtures/make_tiny_gguf, llama.cpp)");
    write_file("ref.csv", ref_csv);
    write_file("same.txt", "t-0 1 2 \"The patient has gout.\"\n"
                           "t-2 1 1 \"Start aspirin, then review the "
                           "patient.\"\n"
                           "t-3 1 3 \"Give insulin now.\"\n"
                           "t-4 1 4 \"Stop the warfarin today.\"\n");
    j = run_score("same.txt", "");
    f = json_real_value(
        json_object_get(json_object_get(j, "pairs_mean"), "bertscore"));
    CHECK(fabs(f - 1.0) < 1e-6);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokenc_shapes_and_no_special_tokens),
        cmocka_unit_test(test_tokenc_is_deterministic),
        cmocka_unit_test(test_tokenc_states_are_contextual),
        cmocka_unit_test(test_tokenc_long_text_cut_to_context),
        cmocka_unit_test(test_tokenc_identical_pair_scores_one),
        cmocka_unit_test(test_tokenc_cross_encoder_gguf_accepted),
        cmocka_unit_test(test_tokenc_bad_specs_say_why),
        cmocka_unit_test(test_score_cli_matches_hand_greedy),
        cmocka_unit_test(test_score_cli_idf_and_baseline_match_hand),
        cmocka_unit_test(test_score_cli_identical_pairs_f1_one),
    };

    return cmocka_run_group_tests(tests, make_models, remove_models);
}
