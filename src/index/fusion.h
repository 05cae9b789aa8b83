/* Result-list fusion for hybrid search, as VerifAI does it (each list
 * divided by its top score, then a weighted sum), and reciprocal-rank
 * fusion as an option. Pure functions over (key, score) lists. */
#ifndef MT_INDEX_FUSION_H
#define MT_INDEX_FUSION_H

#include <stddef.h>
#include <stdint.h>

struct mt_scored {
    int64_t key;
    double score;
};

/* Sorts by descending score, then ascending key (a total order, so
 * results are deterministic). */
void mtx_scored_sort(struct mt_scored *v, size_t n);

/* Linear fusion over the union of keys: w_lex * lex/max(lex) + w_sem *
 * sem/max(sem), a key missing from a list contributing 0 there. A list
 * whose top score is <= 0 contributes nothing (it cannot be normalised).
 * 'out' must hold nlex + nsem entries; returns how many it wrote, sorted
 * with mtx_scored_sort. The inputs may be in any order. */
size_t mtx_fuse_linear(const struct mt_scored *lex, size_t nlex,
                       const struct mt_scored *sem, size_t nsem, double w_lex,
                       double w_sem, struct mt_scored *out);

/* Reciprocal-rank fusion: sum over lists of w / (k + rank), rank 1-based
 * in each list's own score order. Same contract as mtx_fuse_linear. */
size_t mtx_fuse_rrf(const struct mt_scored *lex, size_t nlex,
                    const struct mt_scored *sem, size_t nsem, double w_lex,
                    double w_sem, uint32_t k, struct mt_scored *out);

#endif
