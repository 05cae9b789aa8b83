/* medtrust score: the MEDIQA-CORR 2024 scorer (plus ROUGE-2/L and KPCS) for
 * one or more submissions, as text, JSON or an HTML report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "eval/bert_encoder.h"
#include "eval/eval_int.h"
#include "eval/score_runs.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"

extern const struct cli_verb cli_verb_score;

#define MAX_RUNS MTX_SCORE_RUNS_MAX

static const struct cli_opt score_opts[] = {
    {"ref", 'r', "FILE.csv", "MEDEC-format reference CSV (required)", 0},
    {"pred", 'p', "RUN.txt",
     "submission: 'ID FLAG SENTENCE_ID CORRECTION' "
     "a line (required; up to 16)",
     1},
    {"json", 'j', NULL, "print one JSON object per run", 0},
    {"report", 0, "OUT.html", "write a self-contained HTML report", 0},
    {"bleurt-scores", 0, "FILE",
     "per-pair BLEURT scores ('ID SCORE' a "
     "line), one per --pred in order",
     1},
    {"kpcs-match", 0, "MODE",
     "KPCS keyword test: exact (default) or "
     "normalized (case- and whitespace-insensitive)",
     0},
    {"kpcs-alpha", 0, "X", "KPCS alpha in [0,1] (default 0.5)", 0},
    {"no-kpcs", 0, NULL, "do not compute KPCS", 0},
    {"kpcs-rouge", 0, "MODE",
     "KPCS's ROUGE-1: language (default: each language's own, as MedGuards' "
     "code scores it: English rouge_score, Chinese jieba words with "
     "rouge-chinese, Arabic the rouge package) or published (rouge_score "
     "for all, as evaluate_correction_keywords: Chinese and Arabic get "
     "about 0)",
     0},
    {"jieba-dict", 0, "DIR",
     "jieba's dict.txt and hmm.txt for Chinese KPCS (default: "
     "$MEDTRUST_JIEBA_DIR, then PREFIX/share/medtrust/jieba, then the "
     "source tree's third_party/jieba from scripts/bootstrap)",
     0},
    {"only-predicted", 0, NULL,
     "score only the reference notes every --pred predicts (by default a "
     "note without a prediction counts as wrong)",
     0},
    {"bertscore-scores", 0, "FILE",
     "per-pair BERTScore F1 ('ID SCORE' a line, e.g. from the official "
     "bert_score run), one per --pred in order; instead of --bertscore-model",
     1},
    {"bertscore-model", 0, "SPEC",
     "compute BERTScore from this encoder's per-token embeddings: "
     "onnx:DIR (an ONNX export, as bert_score runs it) or gguf:PATH (a "
     "llama.cpp encoder)",
     0},
    {"bertscore-layer", 0, "N",
     "the layer bert_score reads (microsoft/deberta-xlarge-mnli: 40); the "
     "model must end there (export it truncated to N layers), 1..1000",
     0},
    {"bertscore-baseline", 0, "B|P,R,F|FILE",
     "rescale BERTScore as (x - b) / (1 - b): one baseline, three, or a "
     "file (bert_score's LAYER,P,R,F tables accepted)",
     0},
    {"bertscore-idf", 0, NULL,
     "weight BERTScore tokens by idf over the reference corrections", 0},
    {NULL, 0, NULL, NULL, 0},
};

struct score_ctx {
    struct mtx_score_runs r; /* the runs, scored (eval/score_runs.h) */
    const char **bfs;        /* --bertscore-scores */
    size_t nbfs;
    const char **preds;
    size_t nrun;
    struct mt_eval_params params;
    struct mtx_bert_encoder *bert; /* --bertscore-model, or NULL */
    int json;
};

/* ==== BERTScore encoder ==== */

/* --bertscore-model and what goes with it: parsed here, the encoder
 * opened by the eval layer. */
static enum mt_status open_bert(struct cli_args *a, struct score_ctx *c,
                                struct mt_error *err)
{
    struct mtx_bert_encoder_params bp = {cli_get(a, "bertscore-model"), 0,
                                         cli_get(a, "bertscore-baseline"),
                                         cli_get(a, "bertscore-idf") != NULL};
    unsigned long n = 0;
    enum mt_status st;

    if (!bp.spec && (bp.baseline || bp.idf || cli_get(a, "bertscore-layer")))
        return mt_fail(err, MT_EINVAL,
                       "--bertscore-baseline, --bertscore-layer and "
                       "--bertscore-idf need --bertscore-model onnx:DIR or "
                       "gguf:PATH");
    if (!bp.spec)
        return MT_OK;
    if (cli_get_uint(a, "bertscore-layer", 1, 1000, &n) < 0)
        return MT_EINVAL;
    bp.layer = (uint32_t)n;
    st = mtx_bert_encoder_open(&bp, &c->bert, err);
    if (st == MT_OK)
        mtx_bert_encoder_use(c->bert, &c->params);
    return st;
}

static int read_kpcs_rouge(const char *v, struct mt_eval_params *p)
{
    if (!v || strcmp(v, "language") == 0)
        return 0;
    if (strcmp(v, "published") == 0) {
        p->kpcs_rouge = MT_EVAL_KPCS_ROUGE_PUBLISHED;
        return 0;
    }
    fprintf(stderr,
            "medtrust score: --kpcs-rouge is language or published, not "
            "'%s'\n",
            v);
    return -1;
}

static int read_params(struct cli_args *a, struct mt_eval_params *p)
{
    const char *m = cli_get(a, "kpcs-match");
    const char *al = cli_get(a, "kpcs-alpha");
    char *end = NULL;

    mt_eval_default_params(p);
    p->kpcs = cli_get(a, "no-kpcs") == NULL;
    p->jieba_dir = cli_get(a, "jieba-dict");
    if (read_kpcs_rouge(cli_get(a, "kpcs-rouge"), p) < 0)
        return -1;
    if (m && strcmp(m, "normalized") == 0)
        p->kpcs_match = MT_EVAL_KW_NORMALIZED;
    else if (m && strcmp(m, "exact") != 0) {
        fprintf(stderr,
                "medtrust score: --kpcs-match is exact or "
                "normalized, not '%s'\n",
                m);
        return -1;
    }
    if (al) {
        p->kpcs_alpha = strtod(al, &end);
        if (*end || end == al || !(p->kpcs_alpha >= 0.0) ||
            p->kpcs_alpha > 1.0) {
            fprintf(stderr,
                    "medtrust score: --kpcs-alpha must be a number "
                    "in [0,1], not '%s'\n",
                    al);
            return -1;
        }
    }
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

/* ==== Text output ==== */

static void print_value(double v, double lo, double hi)
{
    if (isnan(v)) {
        printf(" %22s", "-");
        return;
    }
    if (isnan(lo))
        printf(" %8.4f %13s", v, "");
    else
        printf(" %8.4f [%.3f,%.3f]", v, lo, hi);
}

static const char *headline_label(int which)
{
    static const char *const labels[MT_EVAL_METRIC_COUNT] = {
        "ROUGE-1 F (composite)", "ROUGE-2 F (composite)",
        "ROUGE-L F (composite)", "BERTScore F1 (composite)",
        "BLEURT (composite)",    "aggregate (composite)",
        "KPCS (composite)",
    };

    if (which == MT_EV_FLAG)
        return "error flag accuracy";
    if (which == MT_EV_SENT)
        return "error sentence accuracy";
    return labels[which];
}

/* Width of the label column: BERTScore's row names its model. */
static int label_width(const struct score_ctx *c)
{
    const char *m = c->r.res[0]->bert_model;
    size_t w = m ? strlen("BERTScore (model )") + strlen(m) : 0;

    return w > 26 ? (int)(w < 200 ? w : 200) : 26;
}

static void print_row(const struct score_ctx *c, int which)
{
    size_t i;
    double lo, hi, mean;
    int w = label_width(c);

    if (which == MT_EVAL_BERTSCORE)
        printf("BERTScore (model %s)%*s", c->r.res[0]->bert_model,
               w - (int)strlen("BERTScore (model )") -
                   (int)strlen(c->r.res[0]->bert_model),
               "");
    else
        printf("%-*s", w, headline_label(which));
    for (i = 0; i < c->nrun; i++) {
        if (mtx_ev_headline_ci(c->r.res[i], which, &lo, &hi) != MT_OK)
            lo = hi = MT_EV_NAN;
        print_value(mtx_ev_headline(c->r.res[i], which), lo, hi);
    }
    for (i = 1; i < c->nrun; i++) {
        if (mtx_ev_diff_ci(c->r.res[i], c->r.res[0], which, &mean, &lo, &hi) !=
            MT_OK)
            mean = lo = hi = MT_EV_NAN;
        print_value(mean, lo, hi);
    }
    printf("\n");
}

static void print_metric_list(const struct mt_eval_result *r)
{
    printf("aggregate = mean of: ROUGE-1");
    if (r->metrics & (1u << MT_EVAL_BERTSCORE))
        printf(", BERTScore (model %s)", r->bert_model);
    if (r->metrics & (1u << MT_EVAL_BLEURT))
        printf(", BLEURT (from file)");
    if (!(r->metrics & (1u << MT_EVAL_BERTSCORE)) ||
        !(r->metrics & (1u << MT_EVAL_BLEURT)))
        printf("  [not the official 3-metric aggregate: BERTScore and/or "
               "BLEURT not given]");
    printf("\n");
}

static void print_bert_info(const struct mt_eval_result *r)
{
    if (!r->bert_model)
        return;
    printf("BERTScore (model %s): per-token embeddings, special tokens left "
           "out, %s, ",
           r->bert_model,
           r->bert_idf ? "idf over the reference corrections"
                       : "uniform weights");
    if (r->bert_rescaled)
        printf("rescaled with baselines P %.6g R %.6g F %.6g", r->bert_base[0],
               r->bert_base[1], r->bert_base[2]);
    else
        printf("not rescaled");
    printf(";\n  %s.\n", mtx_ev_bert_note(r));
}

static void print_text(const struct score_ctx *c)
{
    size_t i;
    int k;

    printf("reference: %zu notes\n", c->r.res[0]->notes);
    for (i = 0; i < c->nrun; i++)
        printf("run %zu: %s: %zu predicted, %zu invalid lines, %zu scored "
               "pairs\n",
               i + 1, base_name(c->preds[i]), c->r.res[i]->predicted,
               c->r.res[i]->invalid_lines, c->r.res[i]->pairs);
    printf("\n%-*s", label_width(c), "metric (95% CI)");
    for (i = 0; i < c->nrun; i++)
        printf(" %22.22s", base_name(c->preds[i]));
    for (i = 1; i < c->nrun; i++)
        printf("  run %zu - run 1 (paired)", i + 1);
    printf("\n");
    print_row(c, MT_EV_FLAG);
    print_row(c, MT_EV_SENT);
    for (k = 0; k < MT_EVAL_METRIC_COUNT; k++)
        if (c->r.res[0]->metrics & (1u << k))
            print_row(c, k);
    printf("\n");
    print_metric_list(c->r.res[0]);
    printf("CIs: percentile bootstrap over notes, %d resamples, seed %u.\n",
           MT_EVAL_BOOT_RESAMPLES, MT_EVAL_BOOT_SEED);
    print_bert_info(c->r.res[0]);
}

static enum mt_status print_json(const struct score_ctx *c,
                                 struct mt_error *err)
{
    size_t i;
    char *s = NULL;
    enum mt_status st = MT_OK;

    for (i = 0; st == MT_OK && i < c->nrun; i++) {
        st = mt_eval_result_json(c->r.res[i], c->r.ref, c->preds[i], &s, err);
        if (st == MT_OK)
            printf("%s\n", s);
        mt_free(s);
        s = NULL;
    }
    return st;
}

static enum mt_status write_report(const struct score_ctx *c, const char *path,
                                   struct mt_error *err)
{
    struct mt_eval_run runs[MAX_RUNS];
    size_t i;

    for (i = 0; i < c->nrun; i++) {
        runs[i].name = base_name(c->preds[i]);
        runs[i].result = c->r.res[i];
        runs[i].sub = c->r.sub[i];
    }
    return mt_eval_report_write(path, c->r.ref, runs, c->nrun, err);
}

static void ctx_free(struct score_ctx *c)
{
    mtx_score_runs_free(&c->r);
    mtx_bert_encoder_close(c->bert);
}

/* Each --pred with its --bleurt-scores and --bertscore-scores. */
static enum mt_status score_files(struct score_ctx *c, const char *ref,
                                  const char **bl, size_t nbl, int only,
                                  struct mt_error *err)
{
    struct mtx_score_run_files f[MAX_RUNS];
    size_t i;

    for (i = 0; i < c->nrun; i++) {
        f[i].pred = c->preds[i];
        f[i].bleurt = nbl ? bl[i] : NULL;
        f[i].bertscore = c->nbfs ? c->bfs[i] : NULL;
    }
    return mtx_score_runs(ref, f, c->nrun, only, &c->params, &c->r, err);
}

static int check_args(const struct score_ctx *c, size_t nbl)
{
    if (!c->preds || c->nrun == 0) {
        fprintf(stderr, "medtrust score: --ref and --pred are required\n"
                        "Try 'medtrust score --help'.\n");
        return 1;
    }
    if (c->nrun > MAX_RUNS) {
        fprintf(stderr, "medtrust score: at most %d --pred files\n", MAX_RUNS);
        return 1;
    }
    if (c->nbfs > 0 && c->nbfs != c->nrun) {
        fprintf(stderr,
                "medtrust score: give one --bertscore-scores per --pred "
                "(%zu for %zu)\n",
                c->nbfs, c->nrun);
        return 1;
    }
    if (nbl > 0 && nbl != c->nrun) {
        fprintf(stderr,
                "medtrust score: give one --bleurt-scores per "
                "--pred (%zu for %zu)\n",
                nbl, c->nrun);
        return 1;
    }
    return 0;
}

static int score_run(struct cli_args *a)
{
    struct score_ctx c;
    struct mt_error err = {MT_OK, ""};
    size_t nbl = 0;
    const char **bl = cli_get_all(a, "bleurt-scores", &nbl);
    const char *ref = cli_get(a, "ref");
    const char *report = cli_get(a, "report");
    enum mt_status st;

    memset(&c, 0, sizeof c);
    c.preds = cli_get_all(a, "pred", &c.nrun);
    c.json = cli_get(a, "json") != NULL;
    if (!ref)
        c.nrun = 0; /* check_args then says what is required */
    c.bfs = cli_get_all(a, "bertscore-scores", &c.nbfs);
    if (c.nbfs && cli_get(a, "bertscore-model")) {
        fprintf(stderr, "medtrust score: --bertscore-scores or "
                        "--bertscore-model, not both\n");
        return 1;
    }
    if (check_args(&c, nbl) || read_params(a, &c.params) < 0)
        return 1;
    st = open_bert(a, &c, &err);
    if (st == MT_OK)
        st = score_files(&c, ref, bl, nbl, cli_get(a, "only-predicted") != NULL,
                         &err);
    if (st == MT_OK && report)
        st = write_report(&c, report, &err);
    if (st == MT_OK && c.json)
        st = print_json(&c, &err);
    else if (st == MT_OK)
        print_text(&c);
    ctx_free(&c);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

const struct cli_verb cli_verb_score = {
    "score",
    "score MEDIQA-CORR submissions against a MEDEC-format reference",
    "--ref FILE.csv --pred RUN.txt [--pred ...] [--json] [--report "
    "OUT.html] [--bertscore-model onnx:DIR|gguf:PATH [--bertscore-layer N] "
    "[--bertscore-baseline B] [--bertscore-idf]] [--kpcs-rouge "
    "language|published] [--jieba-dict DIR]",
    "Computes what the official MEDIQA-CORR 2024 script computes: error-flag\n"
    "and error-sentence accuracy over all reference notes (a missing\n"
    "prediction is wrong), and per-note correction scores (both NA: 1; one\n"
    "NA: 0; else each metric clipped to [0,1]) summed over notes and divided\n"
    "by the number of notes (composite), plus their mean over scored pairs.\n"
    "ROUGE is the Python `rouge` package's. BLEURT comes from a file\n"
    "(--bleurt-scores), and so may BERTScore (--bertscore-scores, e.g. the\n"
    "official run's per-pair F1). Else BERTScore needs --bertscore-model:\n"
    "onnx:DIR, an ONNX export run as bert_score runs it (text stripped,\n"
    "special tokens in, their rows weighing 0), or gguf:PATH, any\n"
    "llama.cpp encoder (e.g. a BERT GGUF), read per token with pooling off\n"
    "and special tokens left out; it is labelled 'BERTScore (model X)'.\n"
    "The official score used microsoft/deberta-xlarge-mnli, layer 40\n"
    "(--bertscore-layer 40 with an export cut to 40 layers), rescaled with\n"
    "its baseline. --bertscore-baseline rescales\n"
    "as bert_score does, (x - b) / (1 - b), from one value, P,R,F or a file\n"
    "(in a bert_score LAYER,P,R,F table the row of the model's last layer).\n"
    "--bertscore-idf weights tokens by idf over the reference corrections.\n"
    "Without BERTScore or BLEURT the aggregate is labelled with the metrics\n"
    "it averages. KPCS (MedGuards) needs an 'Important\n"
    "Words' column; the exact-substring keyword test is the default (in\n"
    "MedErrBench EN test only 48 of 104 gold corrections contain their\n"
    "keyword verbatim; 97 with --kpcs-match normalized). A correct NA counts\n"
    "once in KPCS (the published code counted it twice). KPCS's ROUGE-1 is\n"
    "MedGuards' own per language (--kpcs-rouge): English (and unknown)\n"
    "notes Google's rouge_score, stemmed; Chinese jieba's words (C,\n"
    "equal to jieba 0.42.1, from its dictionary: --jieba-dict) scored by\n"
    "rouge-chinese; Arabic the rouge package. A note's language is its\n"
    "id's (en-, cn-, ara-), else its gold correction's script.\n"
    "A reference note without a prediction counts as wrong, and score\n"
    "warns how many there are; --only-predicted scores only the notes the\n"
    "submission predicts (with several --pred, those every one predicts),\n"
    "which is not the official figure.\n"
    "Several --pred files give a side-by-side table with paired bootstrap\n"
    "differences against the first run.",
    score_opts,
    score_run,
};
