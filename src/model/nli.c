/* NLI front end: the gguf classifier, or a prompted judge on a chat model
 * (as VerifAI compared with GPT-4) constrained to a JSON label. */
#include <string.h>

#include <jansson.h>

#include "core/buf.h"

#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/nli.h"
#include "model/spec.h"

struct mt_nli {
    struct mtx_llama_cls *cls;
    struct mt_llm *llm;
};

static const char *const label_names[3] = {"SUPPORT", "CONTRADICT",
                                           "NO_EVIDENCE"};

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
    static const char *const kinds[] = {"gguf", "llm"};
    struct mtx_spec ms;
    struct mt_nli *n;
    enum mt_status st = mtx_spec_parse(spec, kinds, 2, "--nli", &ms, err);

    if (st != MT_OK)
        return mt_fail(err, MT_EINVAL,
                       "unknown NLI spec '%s': use gguf:PATH, llm or "
                       "llm:SPEC in --nli",
                       spec ? spec : "");
    n = mt_calloc(1, sizeof *n);
    if (!n)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (ms.kind == 0)
        st = mtx_llama_cls_open(ms.arg, p ? p->threads : 0, &n->cls, err);
    else
        st = open_judge(ms.arg, p, n, err);
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

    if (n->cls)
        st = mtx_llama_cls_probs(n->cls, claim, evidence, pr, err);
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

void mt_nli_close(struct mt_nli *n)
{
    if (!n)
        return;
    mtx_llama_cls_free(n->cls);
    mt_llm_close(n->llm);
    mt_free(n);
}
