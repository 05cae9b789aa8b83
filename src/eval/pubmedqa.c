/* qa-eval on PubMedQA scored (pubmedqa.h). */
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "eval/pubmedqa.h"
#include "medtrust/core.h"
#include "medtrust/eval.h"

enum mt_status mtx_pubmedqa_init(struct mtx_pubmedqa_score *t, size_t n)
{
    memset(t, 0, sizeof *t);
    t->correct = mt_calloc(n + 1, sizeof *t->correct);
    return t->correct ? MT_OK : MT_ENOMEM;
}

static int is_relevant(char *const *relevant, size_t nrel, const char *id)
{
    size_t i;

    for (i = 0; i < nrel; i++)
        if (strcmp(relevant[i], id) == 0)
            return 1;
    return 0;
}

/* Counts the answer's distinct cited ids and its verdicts. */
static void tally_claims(struct mtx_pubmedqa_score *t, char *const *relevant,
                         size_t nrel, json_t *claims)
{
    json_t *seen = json_object();
    json_t *c, *v, *ref;
    void *it;
    size_t i, k;
    enum mt_qa_label l;

    json_array_foreach(claims, i, c)
    {
        if (mt_qa_label_parse(json_string_value(json_object_get(c, "label")),
                              &l) == MT_OK)
            t->claim_labels[l]++;
        t->claims++;
        json_array_foreach(json_object_get(c, "refs"), k,
                           ref) if (json_is_string(ref))
            json_object_set(seen, json_string_value(ref), json_true());
        json_array_foreach(json_object_get(c, "verdicts"), k, v)
        {
            const char *s = json_string_value(json_object_get(v, "label"));

            t->pairs++;
            t->no_reference += s && strcmp(s, "NO_REFERENCE") == 0;
        }
    }
    t->cited += json_object_size(seen);
    for (it = json_object_iter(seen); it; it = json_object_iter_next(seen, it))
        t->cited_relevant +=
            (size_t)is_relevant(relevant, nrel, json_object_iter_key(it));
    json_decref(seen);
}

void mtx_pubmedqa_add(struct mtx_pubmedqa_score *t, const char *line,
                      const char *gold, char *const *relevant, size_t nrel)
{
    json_t *o = line ? json_loads(line, 0, NULL) : NULL;
    const char *v = json_string_value(json_object_get(o, "final_verdict"));

    t->correct[t->questions++] = v && gold && strcasecmp(v, gold) == 0;
    if (!o || json_object_get(o, "error")) {
        t->failed++;
        json_decref(o);
        return;
    }
    t->missing += v == NULL;
    tally_claims(t, relevant, nrel, json_object_get(o, "claims"));
    json_decref(o);
}

void mtx_pubmedqa_finish(struct mtx_pubmedqa_score *t)
{
    double acc = 0;
    size_t i, n = t->questions;

    for (i = 0; i < n; i++)
        acc += t->correct[i];
    t->acc = n ? (double)(size_t)acc / (double)n : 0;
    t->acc_lo = t->acc_hi = 0;
    if (n)
        mt_eval_bootstrap_ci(t->correct, n, MT_EVAL_BOOT_RESAMPLES,
                             MT_EVAL_BOOT_SEED, &t->acc_lo, &t->acc_hi);
}

void mtx_pubmedqa_free(struct mtx_pubmedqa_score *t)
{
    mt_free(t->correct);
    t->correct = NULL;
}
