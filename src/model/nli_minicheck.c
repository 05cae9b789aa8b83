/* MiniCheck-style verifier on a chat model (--nli minicheck:SPEC), as the
 * MiniCheck authors run Bespoke-MiniCheck-7B (Liyan06/MiniCheck,
 * minicheck/utils.py for the prompts, minicheck/inference.py's LLMCheck
 * for the rest): their system prompt, the user turn "Document: D\nClaim:
 * C", greedy, one token; "Yes" is supported. The claim is split into
 * sentences and the document into chunks that fit the model's context
 * less 300 tokens; a sentence is supported when some chunk supports it,
 * and the claim when every sentence is (their SentenceFusion: max over
 * chunks, min over sentences). Where they read P(yes) from the top-5
 * logprobs of that token and call > 0.5 supported, this reads the greedy
 * token itself (the OpenAI-compatible API has no logprobs in common): the
 * two differ only when "Yes" and "yes" together outweigh a greedy "No". */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "model/nli.h"
#include "text/sentence.h"

/* minicheck/utils.py SYSTEM_PROMPT and USER_PROMPT, verbatim. */
static const char mc_system[] =
    "Determine whether the provided claim is consistent with the "
    "corresponding document. Consistency in this context implies that all "
    "information presented in the claim is substantiated by the document. If "
    "not, it should be considered inconsistent. Please assess the claim's "
    "consistency with the document by responding with either \"Yes\" or "
    "\"No\".";

/* LLMCheck: default_chunk_size = max_model_len - 300 */
#define MC_CLAIM_RESERVE 300u

/* 1 for a "yes" reply, 0 for "no", -1 for anything else. */
static int yes_no(const char *t)
{
    size_t n;

    while (*t && !isalpha((unsigned char)*t))
        t++;
    n = 0;
    while (isalpha((unsigned char)t[n]))
        n++;
    if (n == 3 && strncasecmp(t, "yes", 3) == 0)
        return 1;
    if (n == 2 && strncasecmp(t, "no", 2) == 0)
        return 0;
    return -1;
}

/* One (document chunk, claim sentence) call: *yes 1 or 0. */
static enum mt_status mc_call(struct mt_llm *l, const char *doc, size_t nd,
                              const char *claim, size_t nc, int *yes,
                              struct mt_error *err)
{
    struct mt_buf user = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct mt_llm_message m[2] = {{"system", mc_system}, {"user", ""}};
    struct mt_chat_params cp;
    struct mt_chat_result r = {0};
    enum mt_status st;

    mt_chat_default_params(&cp);
    cp.temperature = 0;
    cp.max_tokens = 1; /* LLMCheck: max_tokens=1, temperature=0 */
    st = mtx_buf_printf(&user, "Document: %.*s\nClaim: %.*s", (int)nd, doc,
                        (int)nc, claim);
    if (st != MT_OK)
        return mt_fail(err, st, "nli minicheck: out of memory");
    m[1].content = user.data;
    st = mt_llm_chat(l, m, 2, &cp, &r, err);
    if (st == MT_OK && (*yes = yes_no(r.texts[0])) < 0)
        st = mt_fail(err, MT_EPARSE,
                     "nli minicheck: the model answered '%.60s', not Yes or "
                     "No: --nli minicheck: wants a MiniCheck model "
                     "(Bespoke-MiniCheck-7B)",
                     r.texts[0]);
    mt_chat_result_free(&r);
    mtx_buf_free(&user);
    return st;
}

/* The document's chunks: its sentences joined while they fit 'budget'
 * tokens (0: the whole document). A new array of spans (mt_free). */
static enum mt_status doc_chunks(struct mt_llm *l, const char *doc,
                                 uint32_t budget, struct mt_span **out,
                                 size_t *n, struct mt_error *err)
{
    struct mt_span *s = NULL;
    size_t ns = 0, i, k = 0;
    uint32_t used = 0;
    enum mt_status st = MT_OK;

    if (budget)
        st = mtx_sentences_split(doc, strlen(doc), &s, &ns, err);
    if (st != MT_OK)
        return st;
    if (ns == 0) {
        mt_free(s);
        s = mt_malloc(sizeof *s);
        if (!s)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        s[0] = (struct mt_span){0, strlen(doc)};
        ns = 1;
    }
    for (i = 0; i < ns; i++) {
        uint32_t t = mt_llm_count_tokens(l, doc + s[i].start,
                                         s[i].end - s[i].start, NULL);
        if (i > 0 && used + t <= budget) {
            s[k - 1].end = s[i].end; /* joins the chunk before */
            used += t;
            continue;
        }
        s[k++] = s[i];
        used = t;
    }
    *out = s;
    *n = k;
    return MT_OK;
}

/* Sentence [cs, ce) of the claim: 1 when some chunk supports it. */
static enum mt_status sentence_supported(struct mt_llm *l, const char *doc,
                                         const struct mt_span *ch, size_t nch,
                                         const char *c, size_t nc, int *yes,
                                         struct mt_error *err)
{
    enum mt_status st = MT_OK;
    size_t i;

    *yes = 0;
    for (i = 0; st == MT_OK && !*yes && i < nch; i++)
        st = mc_call(l, doc + ch[i].start, ch[i].end - ch[i].start, c, nc, yes,
                     err);
    return st;
}

enum mt_status mtx_minicheck_probs(struct mt_llm *l, const char *claim,
                                   const char *doc, float probs[3],
                                   struct mt_error *err)
{
    uint32_t ctx = mt_llm_n_ctx(l);
    struct mt_span *ch = NULL;
    struct mt_span *cs = NULL;
    size_t nch = 0, ncs = 0, i;
    int yes = 1;
    enum mt_status st = doc_chunks(
        l, doc, ctx > 2 * MC_CLAIM_RESERVE ? ctx - MC_CLAIM_RESERVE : 0, &ch,
        &nch, err);

    if (st == MT_OK)
        st = mtx_sentences_split(claim, strlen(claim), &cs, &ncs, err);
    if (st == MT_OK && ncs == 0)
        st = sentence_supported(l, doc, ch, nch, claim, strlen(claim), &yes,
                                err);
    for (i = 0; st == MT_OK && yes && i < ncs; i++)
        st = sentence_supported(l, doc, ch, nch, claim + cs[i].start,
                                cs[i].end - cs[i].start, &yes, err);
    mt_free(ch);
    mt_free(cs);
    if (st != MT_OK)
        return st;
    /* MiniCheck is binary: unsupported is no evidence, never contradicted */
    probs[0] = yes ? 1.0f : 0.0f;
    probs[1] = 0;
    probs[2] = yes ? 0.0f : 1.0f;
    return MT_OK;
}
