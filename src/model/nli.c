/* NLI front end: the gguf classifier, a prompted judge on a chat model
 * (as VerifAI compared with GPT-4) constrained to a JSON label, or a
 * MiniCheck model's Yes/No (nli_minicheck.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "core/buf.h"

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/nli.h"
#include "model/onnx_enc.h"
#include "model/spec.h"

struct mt_nli {
    struct mtx_llama_cls *cls;
    struct mt_llm *llm;
    struct mtx_onnx *onnx;
    int at[3]; /* onnx: output index of SUPPORT, CONTRADICT, NO_EVIDENCE */
    int claim_first; /* the pair is [CLS] claim [SEP] evidence [SEP] */
    int minicheck;   /* llm is a MiniCheck model (minicheck:SPEC) */
    char desc[600];  /* the spec's mapping of outputs to labels */
};

/* A gguf verifier's options, after '?' in its spec (&-separated):
 *   preset=mnli     labels by the model's names (entailment,
 *                   contradiction, neutral), evidence first: MNLI models
 *                   are trained premise (evidence), then hypothesis
 *                   (claim). The default.
 *   preset=verifai  VerifAI's DeBERTa: positional labels [NO_EVIDENCE,
 *                   SUPPORT, CONTRADICT] and claim first ("[CLS] claim
 *                   [SEP] title\n\nabstract [SEP]", verification.py).
 *   labels=A,B,C    the meaning of outputs 0, 1, 2 (SUPPORT, CONTRADICT,
 *                   NO_EVIDENCE, or MNLI's names)
 *   pair=claim-first | evidence-first */
struct cls_opts {
    int positional; /* at[] holds the outputs */
    int at[3];      /* output index of SUPPORT, CONTRADICT, NO_EVIDENCE */
    int claim_first;
};

/* The label index (enum mt_nli_label) a labels= word names, or -1. */
static int label_word(const char *w, size_t n)
{
    static const char *const names[][2] = {
        {"SUPPORT", "entailment"},
        {"CONTRADICT", "contradiction"},
        {"NO_EVIDENCE", "neutral"},
    };
    int i, j;

    for (i = 0; i < 3; i++)
        for (j = 0; j < 2; j++)
            if (strlen(names[i][j]) == n && strncasecmp(w, names[i][j], n) == 0)
                return i;
    return -1;
}

static int parse_labels(const char *v, size_t n, struct cls_opts *o)
{
    int seen = 0;
    int k = 0;
    size_t a = 0;

    o->at[0] = o->at[1] = o->at[2] = -1;
    while (a <= n && k < 3) {
        size_t b = a;
        int l;

        while (b < n && v[b] != ',')
            b++;
        l = label_word(v + a, b - a);
        if (l < 0 || (seen & (1 << l)))
            return -1;
        seen |= 1 << l;
        o->at[l] = k++;
        a = b + 1;
    }
    o->positional = 1;
    return k == 3 && a > n ? 0 : -1;
}

static int parse_opt(const char *p, size_t n, struct cls_opts *o)
{
    if (n == 11 && strncmp(p, "preset=mnli", n) == 0) {
        o->positional = o->claim_first = 0;
        return 0;
    }
    if (n == 14 && strncmp(p, "preset=verifai", n) == 0) {
        o->positional = o->claim_first = 1;
        o->at[0] = 1; /* SUPPORT */
        o->at[1] = 2; /* CONTRADICT */
        o->at[2] = 0; /* NO_EVIDENCE */
        return 0;
    }
    if (n == 16 && strncmp(p, "pair=claim-first", n) == 0)
        return o->claim_first = 1, 0;
    if (n == 19 && strncmp(p, "pair=evidence-first", n) == 0)
        return o->claim_first = 0, 0;
    if (n > 7 && strncmp(p, "labels=", 7) == 0)
        return parse_labels(p + 7, n - 7, o);
    return -1;
}

static const char *const label_names[3] = {"SUPPORT", "CONTRADICT",
                                           "NO_EVIDENCE"};

/* Splits "PATH?opts" into a new path string and o. */
static enum mt_status cls_spec(const char *arg, char **path, struct cls_opts *o,
                               struct mt_error *err)
{
    const char *q = strrchr(arg, '?');
    const char *p = q ? q + 1 : NULL;

    memset(o, 0, sizeof *o);
    while (p && *p) {
        size_t n = strcspn(p, "&");

        if (parse_opt(p, n, o) != 0)
            return mt_fail(err, MT_EINVAL,
                           "--nli %s: unknown option '%.*s': use "
                           "preset=mnli|verifai, labels=A,B,C (SUPPORT, "
                           "CONTRADICT, NO_EVIDENCE in output order) or "
                           "pair=claim-first|evidence-first",
                           arg, (int)n, p);
        p += n + (p[n] == '&');
    }
    *path = q ? mt_strndup(arg, (size_t)(q - arg)) : mt_strdup(arg);
    return *path ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

/* ==== onnx: classifiers ==== */

/* The label an id2label name means (SciFact's, MNLI's and FEVER's names,
 * any case, spaces, '_' and '-' ignored), or -1. */
static int label_meaning(const char *name)
{
    static const char *const words[][7] = {
        {"entailment", "entails", "entailed", "support", "supports",
         "supported", NULL},
        {"contradiction", "contradict", "contradicts", "contradicted",
         "refutes", "refute", "refuted"},
        {"neutral", "notenoughinfo", "nei", "noevidence", "noinfo",
         "notenoughevidence", NULL},
    };
    char k[64];
    size_t n = 0;
    int i, j;

    for (; *name && n + 1 < sizeof k; name++)
        if (*name != ' ' && *name != '_' && *name != '-')
            k[n++] = *name;
    k[n] = '\0';
    for (i = 0; i < 3; i++)
        for (j = 0; j < 7 && words[i][j]; j++)
            if (strcasecmp(k, words[i][j]) == 0)
                return i;
    return -1;
}

/* Maps config.json's id2label onto SUPPORT, CONTRADICT, NO_EVIDENCE. */
static enum mt_status map_labels(struct mt_nli *n, const char *dir,
                                 struct mt_error *err)
{
    size_t i, nl = mtx_onnx_nlabels(n->onnx);
    int seen = 0;

    for (i = 0; i < nl && nl == 3; i++) {
        int l = label_meaning(mtx_onnx_label(n->onnx, i));
        if (l < 0 || (seen & (1 << l)))
            break;
        seen |= 1 << l;
        n->at[l] = (int)i;
    }
    if (seen == 7)
        return MT_OK;
    return mt_fail(err, MT_EINVAL,
                   "--nli onnx:%s: config.json's id2label (%zu labels: "
                   "%s, %s, %s) does not name entailment/SUPPORT, "
                   "contradiction/CONTRADICT and neutral/NOT ENOUGH INFO: "
                   "say what outputs 0, 1, 2 mean with ?labels=A,B,C or "
                   "?preset=verifai",
                   dir, nl, nl > 0 ? mtx_onnx_label(n->onnx, 0) : "-",
                   nl > 1 ? mtx_onnx_label(n->onnx, 1) : "-",
                   nl > 2 ? mtx_onnx_label(n->onnx, 2) : "-");
}

static void describe(struct mt_nli *n, const char *spec)
{
    size_t k = (size_t)snprintf(n->desc, sizeof n->desc, "%.200s:", spec);
    int l;

    for (l = 0; l < 3 && k < sizeof n->desc; l++) {
        const char *name = mtx_onnx_label(n->onnx, (size_t)n->at[l]);
        k += (size_t)snprintf(n->desc + k, sizeof n->desc - k,
                              " output %d (%.40s) -> %s;", n->at[l],
                              name ? name : "unnamed", label_names[l]);
    }
    if (k < sizeof n->desc)
        snprintf(n->desc + k, sizeof n->desc - k, " pair %s first",
                 n->claim_first ? "claim" : "evidence");
}

static enum mt_status open_onnx(const char *arg,
                                const struct mt_reranker_params *p,
                                struct mt_nli *n, struct mt_error *err)
{
    struct cls_opts o;
    char *dir = NULL;
    enum mt_status st = cls_spec(arg ? arg : "", &dir, &o, err);

    if (st == MT_OK)
        st = mtx_onnx_open(dir, p ? p->threads : 0, "--nli", &n->onnx, err);
    n->claim_first = o.claim_first;
    if (st == MT_OK && o.positional)
        memcpy(n->at, o.at, sizeof n->at);
    else if (st == MT_OK)
        st = map_labels(n, dir, err);
    mt_free(dir);
    return st;
}

/* Pairs a forward pass of the onnx: classifier takes at once, padded to
 * the longest (as the embedder batches its texts). */
#define NLI_ONNX_BATCH 16

/* Softmax over each pair's logits, read through n->at: m pairs (claim[i],
 * evidence[i]) as one padded batch, probs[i] for pair i. */
static enum mt_status onnx_probs_batch(struct mt_nli *n,
                                       const char *const *claim,
                                       const char *const *evidence, size_t m,
                                       float (*probs)[3], struct mt_error *err)
{
    struct mt_str a[NLI_ONNX_BATCH], b[NLI_ONNX_BATCH];
    int64_t d[4] = {0};
    size_t nd = 0, i, k;
    float *o = NULL;
    enum mt_status st;

    for (i = 0; i < m; i++) {
        a[i] = mtx_str_from(n->claim_first ? claim[i] : evidence[i]);
        b[i] = mtx_str_from(n->claim_first ? evidence[i] : claim[i]);
    }
    st = mtx_onnx_forward(n->onnx, a, b, m,
                          mtx_onnx_has_output(n->onnx, "logits") ? "logits"
                                                                 : NULL,
                          &o, d, &nd, NULL, err);
    if (st == MT_OK && (nd != 2 || d[0] != (int64_t)m || d[1] != 3))
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "--nli onnx:%s: the output is not [batch, 3] logits",
                     mtx_onnx_dir(n->onnx));
    for (i = 0; st == MT_OK && i < m; i++) {
        const float *x = o + 3 * i;
        double mx = (double)x[0], s = 0;

        for (k = 1; k < 3; k++)
            mx = (double)x[k] > mx ? (double)x[k] : mx;
        for (k = 0; k < 3; k++)
            s += exp((double)x[k] - mx);
        for (k = 0; k < 3; k++)
            probs[i][k] = (float)(exp((double)x[n->at[k]] - mx) / s);
    }
    mt_free(o);
    return st;
}

static enum mt_status onnx_probs(struct mt_nli *n, const char *claim,
                                 const char *evidence, float probs[3],
                                 struct mt_error *err)
{
    return onnx_probs_batch(n, &claim, &evidence, 1, (float(*)[3])probs, err);
}

static enum mt_status open_cls(const char *arg,
                               const struct mt_reranker_params *p,
                               struct mt_nli *n, struct mt_error *err)
{
    struct cls_opts o;
    char *path = NULL;
    enum mt_status st = cls_spec(arg, &path, &o, err);

    if (st == MT_OK)
        st = mtx_llama_cls_open(path, p ? p->threads : 0,
                                o.positional ? o.at : NULL, &n->cls, err);
    n->claim_first = o.claim_first;
    mt_free(path);
    return st;
}

static const char judge_system[] =
    "You verify a claim against a reference text. Answer with JSON "
    "{\"label\": L} where L is SUPPORT if the reference supports the "
    "claim, CONTRADICT if the reference contradicts it, and NO_EVIDENCE "
    "if the reference does neither.";

static const char judge_schema[] =
    "{\"type\":\"object\",\"properties\":{\"label\":{\"enum\":"
    "[\"SUPPORT\",\"CONTRADICT\",\"NO_EVIDENCE\"]}},\"required\":"
    "[\"label\"]}";

const char *mt_nli_label_str(enum mt_nli_label l)
{
    return (unsigned)l < 3 ? label_names[l] : "NO_EVIDENCE";
}

/* The prompted judge on chat model spec (after "llm:"), or NULL for the
 * nli role route (MEDTRUST_LLM_NLI, else MEDTRUST_LLM). */
static enum mt_status open_judge(const char *spec,
                                 const struct mt_reranker_params *p,
                                 struct mt_nli *n, struct mt_error *err)
{
    struct mt_llm_params lp;

    mt_llm_default_params(&lp);
    if (p) {
        lp.threads = p->threads;
        lp.timeout_s = p->timeout_s;
        lp.max_retries = p->max_retries;
        lp.cache_path = p->cache_path;
    }
    if (spec)
        return mt_llm_open(spec, &lp, &n->llm, err);
    return mt_llm_open_role("nli", NULL, &lp, &n->llm, err);
}

enum mt_status mt_nli_open(const char *spec, const struct mt_reranker_params *p,
                           struct mt_nli **out, struct mt_error *err)
{
    static const char *const kinds[] = {"gguf", "llm", "onnx", "minicheck"};
    struct mtx_spec ms;
    struct mt_nli *n;
    enum mt_status st = mtx_spec_parse(spec, kinds, 4, "--nli", &ms, err);

    if (st != MT_OK)
        return mt_fail(err, MT_EINVAL,
                       "unknown NLI spec '%s': use gguf:PATH, "
                       "onnx:DIR[?options], llm, llm:SPEC, minicheck or "
                       "minicheck:SPEC in --nli",
                       spec ? spec : "");
    n = mt_calloc(1, sizeof *n);
    if (!n)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (ms.kind == 0)
        st = open_cls(ms.arg, p, n, err);
    else if (ms.kind == 2)
        st = open_onnx(ms.arg, p, n, err);
    else
        st = open_judge(ms.arg, p, n, err);
    n->minicheck = ms.kind == 3;
    if (st == MT_OK && n->onnx) {
        describe(n, spec);
        mt_log(MT_LOG_INFO, "nli %s", n->desc);
    }
    if (st == MT_OK && n->minicheck)
        snprintf(n->desc, sizeof n->desc,
                 "%s: MiniCheck's Yes = SUPPORT, No = NO_EVIDENCE (it never "
                 "says CONTRADICT); the claim's sentences each against the "
                 "document's chunks",
                 spec);
    if (st != MT_OK) {
        mt_nli_close(n);
        return st;
    }
    *out = n;
    return MT_OK;
}

/* The label in the judge's reply: the JSON field, else the first label
 * word in the text (servers that ignore response_format). */
static int reply_label(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    const char *l = json_string_value(json_object_get(j, "label"));
    int i;
    int found = -1;

    for (i = 0; l && i < 3 && found < 0; i++)
        if (strcmp(l, label_names[i]) == 0)
            found = i;
    json_decref(j);
    for (i = 0; found < 0 && i < 3; i++)
        if (strstr(text, label_names[i]))
            found = i;
    return found;
}

static enum mt_status judge(struct mt_nli *n, const char *claim,
                            const char *evidence, float probs[3],
                            struct mt_error *err)
{
    struct mt_buf user = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct mt_llm_message m[2] = {{"system", judge_system}, {"user", ""}};
    struct mt_chat_params cp;
    struct mt_chat_result r = {0};
    enum mt_status st;
    int l = -1;

    mt_chat_default_params(&cp);
    cp.max_tokens = 32;
    cp.json_schema = judge_schema;
    /* The evidence is the reference and the claim is the claim: the
     * judge asks whether the reference supports the claim (VerifAI's
     * verification step; the qa_judge prompt reads the same way). */
    st = mtx_buf_printf(&user, "Reference:\n%s\n\nClaim:\n%s", evidence, claim);
    m[1].content = user.data;
    if (st == MT_OK)
        st = mt_llm_chat(n->llm, m, 2, &cp, &r, err);
    else
        mt_fail(err, st, "nli: out of memory");
    if (st == MT_OK && (l = reply_label(r.texts[0])) < 0)
        st = mt_fail(err, MT_EPARSE,
                     "nli: the judge's reply names no label: %.100s",
                     r.texts[0]);
    if (st == MT_OK) {
        memset(probs, 0, 3 * sizeof *probs);
        probs[l] = 1;
    }
    mt_chat_result_free(&r);
    mtx_buf_free(&user);
    return st;
}

enum mt_status mt_nli_classify(struct mt_nli *n, const char *claim,
                               const char *evidence, float probs[3],
                               enum mt_nli_label *label, struct mt_error *err)
{
    float pr[3];
    enum mt_status st;
    int i;

    if (n->cls && n->claim_first)
        st = mtx_llama_cls_probs(n->cls, claim, evidence, pr, err);
    else if (n->cls) /* MNLI: premise = the evidence, hypothesis = claim */
        st = mtx_llama_cls_probs(n->cls, evidence, claim, pr, err);
    else if (n->onnx)
        st = onnx_probs(n, claim, evidence, pr, err);
    else if (n->minicheck)
        st = mtx_minicheck_probs(n->llm, claim, evidence, pr, err);
    else
        st = judge(n, claim, evidence, pr, err);
    if (st != MT_OK)
        return st;
    *label = MT_NLI_SUPPORT;
    for (i = 1; i < 3; i++)
        if (pr[i] > pr[*label])
            *label = (enum mt_nli_label)i;
    if (probs)
        memcpy(probs, pr, sizeof pr);
    return MT_OK;
}

int mtx_nli_batches(const struct mt_nli *n)
{
    return n && n->onnx;
}

static enum mt_nli_label top_label(const float pr[3])
{
    enum mt_nli_label l = MT_NLI_SUPPORT;
    int i;

    for (i = 1; i < 3; i++)
        if (pr[i] > pr[l])
            l = (enum mt_nli_label)i;
    return l;
}

enum mt_status
mtx_nli_classify_batch(struct mt_nli *n, const char *const *claim,
                       const char *const *evidence, size_t m, float (*probs)[3],
                       enum mt_nli_label *label, struct mt_error *err)
{
    size_t i, k;
    enum mt_status st = MT_OK;

    if (!n->onnx) { /* one pair a call: a chat judge, gguf, MiniCheck */
        for (i = 0; st == MT_OK && i < m; i++)
            st = mt_nli_classify(n, claim[i], evidence[i], probs[i], &label[i],
                                 err);
        return st;
    }
    for (i = 0; st == MT_OK && i < m; i += NLI_ONNX_BATCH) {
        size_t c = m - i < NLI_ONNX_BATCH ? m - i : NLI_ONNX_BATCH;

        st = onnx_probs_batch(n, claim + i, evidence + i, c, probs + i, err);
        for (k = 0; st == MT_OK && k < c; k++)
            label[i + k] = top_label(probs[i + k]);
    }
    return st;
}

void mt_nli_close(struct mt_nli *n)
{
    if (!n)
        return;
    mtx_llama_cls_free(n->cls);
    mtx_onnx_close(n->onnx);
    mt_llm_close(n->llm);
    mt_free(n);
}

const char *mt_nli_describe(const struct mt_nli *n)
{
    return n && n->desc[0] ? n->desc : NULL;
}
