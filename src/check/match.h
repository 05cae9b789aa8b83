/* Fuzzy mapping of a quoted sentence to a note's sentence id: token-set
 * overlap for alphabetic scripts (Latin, Arabic), character bigrams for
 * Chinese and Japanese, after case folding and dropping punctuation and
 * Arabic diacritics. */
#ifndef MT_CHECK_MATCH_H
#define MT_CHECK_MATCH_H

#include <stddef.h>

#include "core/buf.h"

/* Least similarity at which a quote names a sentence. */
#define MT_MATCH_MIN 0.5

/* Id of the sentence most similar to q (the first on ties), or -1 when
 * none reaches min_score. *score (may be NULL) gets the best score. The
 * similarity of q to a sentence s, in [0, 1], is
 *   0.75 * |Q & S| / |Q| + 0.25 * |Q & S| / |S|
 * over the sets of units (tokens, or bigrams when q is mostly CJK), so a
 * verbatim quote scores 1 and a partial one stays high. Thread-safe. */
int mtx_match_sentence(struct mt_str q, const struct mt_str *sents, size_t n,
                       double min_score, double *score);

#endif
