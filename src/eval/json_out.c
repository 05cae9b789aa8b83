/* A scored run as one JSON object (jansson): headline numbers, composites,
 * pair means, the metrics used, bootstrap intervals and breakdowns. Absent
 * metrics are absent keys, never 0. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"

/* Which ROUGE-1 KPCS took, and for how many pairs the Chinese and the
 * Arabic one. */
static json_t *kpcs_rouge_obj(const struct mt_eval_result *r)
{
    json_t *o = json_object();

    json_object_set_new(
        o, "mode",
        json_string(r->kpcs_rouge == MT_EVAL_KPCS_ROUGE_PUBLISHED
                        ? "published"
                        : "language"));
    json_object_set_new(o, "pairs_zh",
                        json_integer((json_int_t)r->kpcs_pairs_zh));
    json_object_set_new(o, "pairs_ar",
                        json_integer((json_int_t)r->kpcs_pairs_ar));
    return o;
}

/* Metrics that make up the composite/pairs_mean objects, in key order. */
static json_t *metric_obj(const struct mt_eval_result *r, const double *v)
{
    json_t *o = json_object();
    int k;

    for (k = 0; o && k < MT_EVAL_METRIC_COUNT; k++)
        if ((r->metrics & (1u << k)) && !isnan(v[k]))
            json_object_set_new(o, mt_eval_metric_key(k), json_real(v[k]));
    return o;
}

static json_t *metrics_used(const struct mt_eval_result *r)
{
    json_t *a = json_array();
    int k;

    for (k = 0; a && k < MT_EVAL_METRIC_COUNT; k++)
        if (r->metrics & (1u << k))
            json_array_append_new(a, json_string(mt_eval_metric_key(k)));
    return a;
}

static json_t *interval(const struct mt_eval_result *r, int which)
{
    double lo, hi;

    if (mtx_ev_headline_ci(r, which, &lo, &hi) != MT_OK || isnan(lo))
        return NULL;
    return json_pack("[f,f]", lo, hi);
}

static json_t *ci_obj(const struct mt_eval_result *r)
{
    json_t *o = json_object();
    int k;

    if (!o)
        return NULL;
    json_object_set_new(o, "error_flag_accuracy", interval(r, MT_EV_FLAG));
    json_object_set_new(o, "error_sentence_accuracy", interval(r, MT_EV_SENT));
    for (k = 0; k < MT_EVAL_METRIC_COUNT; k++)
        if (r->metrics & (1u << k))
            json_object_set_new(o, mt_eval_metric_key(k), interval(r, k));
    json_object_set_new(
        o, "method",
        json_pack("{s:i,s:I,s:f}", "resamples", MT_EVAL_BOOT_RESAMPLES, "seed",
                  (json_int_t)MT_EVAL_BOOT_SEED, "level", 0.95));
    return o;
}

static json_t *group_obj(const struct mt_eval_result *r,
                         const struct mt_ev_group *g)
{
    json_t *o = json_pack("{s:I,s:f,s:f}", "notes", (json_int_t)g->n,
                          "error_flag_accuracy", g->flag_acc,
                          "error_sentence_accuracy", g->sent_acc);

    if (o)
        json_object_set_new(o, "composite", metric_obj(r, g->m));
    return o;
}

static json_t *breakdown(const struct mt_eval_result *r,
                         const struct mt_eval_ref *ref)
{
    json_t *o = json_object();
    int f;

    for (f = 0; o && f < MT_EV_FIELD_COUNT; f++) {
        struct mt_ev_group *g = NULL;
        size_t n = 0, i;
        json_t *fo;
        if (mtx_ev_groups(r, ref, f, &g, &n) != MT_OK) {
            json_decref(o);
            return NULL;
        }
        if (n == 0)
            continue;
        fo = json_object();
        for (i = 0; fo && i < n; i++)
            json_object_set_new(fo, g[i].label, group_obj(r, &g[i]));
        json_object_set_new(o, mtx_ev_field_key(f), fo);
        mt_free(g);
    }
    return o;
}

static json_t *warnings(const struct mt_eval_result *r)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < r->nwarnings; i++)
        json_array_append_new(a, json_string(r->warnings[i]));
    return a;
}

/* How BERTScore was computed: model label, idf, baselines, and whether it
 * may be compared with the official run. */
static void add_bert(json_t *o, const struct mt_eval_result *r)
{
    char label[512];

    if (!r->bert_model)
        return;
    snprintf(label, sizeof label, "BERTScore (model %s)", r->bert_model);
    json_object_set_new(o, "bertscore_model", json_string(r->bert_model));
    json_object_set_new(o, "bertscore_label", json_string(label));
    json_object_set_new(o, "bertscore_idf", json_boolean(r->bert_idf));
    if (r->bert_rescaled)
        json_object_set_new(o, "bertscore_baseline",
                            json_pack("[f,f,f]", r->bert_base[0],
                                      r->bert_base[1], r->bert_base[2]));
    json_object_set_new(o, "bertscore_note", json_string(mtx_ev_bert_note(r)));
}

static json_t *run_obj(const struct mt_eval_result *r,
                       const struct mt_eval_ref *ref, const char *name)
{
    json_t *o = json_pack("{s:s?,s:I,s:I,s:I,s:f,s:f}", "run", name, "notes",
                          (json_int_t)r->notes, "predicted",
                          (json_int_t)r->predicted, "invalid_lines",
                          (json_int_t)r->invalid_lines, "error_flag_accuracy",
                          r->flag_acc, "error_sentence_accuracy", r->sent_acc);

    if (!o)
        return NULL;
    json_object_set_new(o, "composite", metric_obj(r, r->composite));
    json_object_set_new(o, "pairs_mean", metric_obj(r, r->pairs_mean));
    json_object_set_new(o, "pairs", json_integer((json_int_t)r->pairs));
    json_object_set_new(o, "kpcs_no_keywords",
                        json_integer((json_int_t)r->kpcs_no_keywords));
    if (r->metrics & (1u << MT_EVAL_KPCS))
        json_object_set_new(o, "kpcs_rouge", kpcs_rouge_obj(r));
    json_object_set_new(o, "metrics_used", metrics_used(r));
    add_bert(o, r);
    json_object_set_new(o, "ci", ci_obj(r));
    json_object_set_new(o, "breakdown", breakdown(r, ref));
    json_object_set_new(o, "unknown_ids",
                        json_integer((json_int_t)r->unknown_ids));
    json_object_set_new(o, "warnings", warnings(r));
    return o;
}

/* Every key above must be present: a NULL from an allocation failure
 * would silently drop one, so the object is checked as a whole. */
static int complete(const json_t *o)
{
    static const char *const keys[] = {
        "composite", "pairs_mean", "metrics_used",
        "ci",        "breakdown",  "warnings",
    };
    size_t i;

    for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!json_object_get(o, keys[i]))
            return 0;
    return 1;
}

enum mt_status mt_eval_result_json(const struct mt_eval_result *r,
                                   const struct mt_eval_ref *ref,
                                   const char *run_name, char **out,
                                   struct mt_error *err)
{
    json_t *o = run_obj(r, ref, run_name);
    char *s = o && complete(o)
                  ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                      JSON_REAL_PRECISION(17))
                  : NULL;
    char *copy = s ? mt_strdup(s) : NULL;
    json_malloc_t jm;
    json_free_t jf;

    json_get_alloc_funcs(&jm, &jf);
    if (s)
        jf(s); /* json_dumps memory comes from jansson's allocator */
    json_decref(o);
    if (!copy)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    *out = copy;
    return MT_OK;
}
