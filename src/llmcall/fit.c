/* Fitting prompts to the model's context: budget arithmetic, and cutting
 * a text at a sentence boundary by binary search over its sentence ends
 * (the token count of a prefix grows with its length). */
#include <string.h>

#include "llmcall/fit.h"
#include "medtrust/core.h"
#include "text/sentence.h"

uint32_t mtx_fit_count_llm(void *user, const char *s, size_t n)
{
    return mt_llm_count_tokens(user, s, n, NULL);
}

uint32_t mtx_fit_answer(uint32_t n_ctx, uint32_t max_tokens)
{
    return max_tokens <= n_ctx / 2 ? max_tokens : n_ctx / 2;
}

uint32_t mtx_fit_budget(uint32_t n_ctx, uint32_t max_tokens, uint32_t fixed,
                        size_t nmsgs)
{
    uint64_t used = (uint64_t)mtx_fit_answer(n_ctx, max_tokens) + fixed +
                    MTX_FIT_BASE_TOKENS + (uint64_t)MTX_FIT_MSG_TOKENS * nmsgs;

    if (n_ctx == 0)
        return UINT32_MAX;
    return used >= n_ctx ? 0 : (uint32_t)(n_ctx - used);
}

uint32_t mtx_fit_count_msgs(const struct mt_llm_message *m, size_t n,
                            mtx_count_fn count, void *user)
{
    uint64_t t = MTX_FIT_BASE_TOKENS + (uint64_t)MTX_FIT_MSG_TOKENS * n;
    size_t i;

    for (i = 0; i < n; i++)
        t += count(user, m[i].content, strlen(m[i].content));
    return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

size_t mtx_fit_cut(const char *text, size_t n, uint32_t budget,
                   mtx_count_fn count, void *user)
{
    struct mt_span *s = NULL;
    size_t ns = 0;
    size_t lo = 0; /* sentences known to fit */
    size_t hi;
    size_t keep;

    if (count(user, text, n) <= budget)
        return n;
    if (mtx_sentences_split(text, n, &s, &ns, NULL) != MT_OK || ns == 0) {
        mt_free(s);
        return 0;
    }
    hi = ns + 1; /* the largest k with the first k fitting is < hi */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;

        if (count(user, text, s[mid - 1].end) <= budget)
            lo = mid;
        else
            hi = mid;
    }
    keep = lo ? s[lo - 1].end : 0;
    mt_free(s);
    return keep;
}
