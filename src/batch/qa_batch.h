/* The batches of the qa layer (batch layer), on the resumable item batch
 * (batch/items.h): questions answered by one answerer (`ask --batch`,
 * `qa-eval --queries`) and texts verified by it (`verify --batch`), each
 * result one JSONL line. Moved here from src/cli/qa_opts.c and
 * src/cli/cmd_verify.c (issue 33). Names: mtx_ (internal). */
#ifndef MTX_BATCH_QA_BATCH_H
#define MTX_BATCH_QA_BATCH_H

#include "batch/items.h"
#include "medtrust/qa.h"
#include "medtrust/verify.h"

/* One question: {"id","query","relevant"?,"answer"?}. */
struct mtx_qa_item {
    struct mtx_item it; /* id, and the result line once done */
    char *query;
    char **relevant; /* gold document ids (qa-eval) */
    size_t nrel;
    char *gold; /* gold yes/no/maybe, or NULL */
};

/* One text to verify: {"id","text"}. */
struct mtx_verify_item {
    struct mtx_item it;
    char *text;
};

/* How a batch runs: the output file (NULL: none, and no journal), else
 * OUT.journal journals each result; the rest as mtx_items_params. */
struct mtx_qa_batch_params {
    const char *out;
    int resume;
    unsigned jobs;
    int quiet;
    const char *label;
};

/* Reads up to 'limit' (0 = all) questions; *v and *n are the caller's
 * (mtx_qa_items_free) whatever the result. */
enum mt_status mtx_qa_items_load(const char *path, size_t limit,
                                 struct mtx_qa_item **v, size_t *n,
                                 struct mt_error *err);
void mtx_qa_items_free(struct mtx_qa_item *v, size_t n);

/* Answers every question not resumed with 'q' ({"id",...the result}, or
 * {"id","question","error"} when the ask failed: journaled as failed, so
 * a resume asks it again) and writes p->out when given. */
enum mt_status mtx_qa_batch_run(struct mt_qa *q, struct mtx_qa_item *v,
                                size_t n, const struct mtx_qa_batch_params *p,
                                struct mtx_items_stats *stats,
                                struct mt_error *err);

/* As mtx_qa_items_load for texts. */
enum mt_status mtx_verify_items_load(const char *path, size_t limit,
                                     struct mtx_verify_item **v, size_t *n,
                                     struct mt_error *err);
void mtx_verify_items_free(struct mtx_verify_item *v, size_t n);

/* Verifies every text not resumed with 'q' and 'vp' ({"id",...the
 * result}, with "error" too when a claim FAILED: the result is kept, the
 * text journaled as failed; {"id","error"} when there is no result) and
 * writes p->out when given. */
enum mt_status mtx_verify_batch_run(struct mt_qa *q,
                                    const struct mt_verify_params *vp,
                                    struct mtx_verify_item *v, size_t n,
                                    const struct mtx_qa_batch_params *p,
                                    struct mtx_items_stats *stats,
                                    struct mt_error *err);

#endif
