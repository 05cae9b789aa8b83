/* Fitting prompts to the model's context: budget arithmetic, and cutting
 * a text to a budget at a sentence or a character boundary. */
#include <string.h>

#include "llmcall/fit.h"
#include "medtrust/core.h"
#include "text/sentence.h"
#include "text/utf8.h"

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

/* The longest sentence-ending prefix that fits, by binary search over the
 * sentence ends (the token count of a prefix grows with its length). */
static size_t cut_sentences(const char *text, size_t n, uint32_t budget,
                            mtx_count_fn count, void *user)
{
    struct mt_span *s = NULL;
    size_t ns = 0;
    size_t lo = 0; /* sentences known to fit */
    size_t hi;
    size_t keep;

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

/* A character-boundary prefix that fits: the length scaled by
 * budget / tokens (less a tenth), at most MTX_FIT_CHAR_TRIES times. */
static size_t cut_chars(const char *text, size_t n, uint32_t budget,
                        mtx_count_fn count, void *user)
{
    int i;

    for (i = 0; i < MTX_FIT_CHAR_TRIES && n > 0; i++) {
        uint32_t k = count(user, text, n);
        size_t want;

        if (k <= budget)
            return n;
        want = (size_t)((double)n * budget / k * 0.9);
        n = mtx_utf8_cut(text, n, want < n ? want : n - 1);
    }
    return i < MTX_FIT_CHAR_TRIES ? n : 0;
}

size_t mtx_fit_cut(const char *text, size_t n, uint32_t budget,
                   enum mtx_fit_unit unit, mtx_count_fn count, void *user)
{
    if (count(user, text, n) <= budget)
        return n;
    if (unit == MTX_FIT_CHARS)
        return cut_chars(text, n, budget, count, user);
    return cut_sentences(text, n, budget, count, user);
}
