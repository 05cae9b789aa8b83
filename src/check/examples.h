/* Few-shot example rows of a MEDEC-format training CSV, shared by the
 * fixed examples (examples.c) and MedPrompt's kNN selection (knn.c). */
#ifndef MT_CHECK_EXAMPLES_H
#define MT_CHECK_EXAMPLES_H

#include "check/agent_int.h"
#include "core/buf.h"
#include "core/csv.h"

enum {
    C_TEXT,
    C_SENTS,
    C_FLAG,
    C_SID,
    C_CORR,
    C_REASON,
    C_ID,
    C_CTEXT, /* Corrected Text: the note an error row was made from */
    EX_NCOLS
};

/* 1 when the file name looks like an evaluation split (validation or
 * test), which few-shot examples must never come from. */
int mtx_examples_looks_like_eval(const char *path);

/* Reads the header row and finds the columns (without regard to case) into
 * col[EX_NCOLS] (-1 = absent); MT_EPARSE naming 'opt' and 'path' when a
 * required one is missing. */
enum mt_status mtx_examples_cols(struct mt_csv *c, const char *opt,
                                 const char *path, long *col,
                                 struct mt_error *err);

/* Appends the current row's numbered sentences and its answer (with the
 * row's reasoning first when the file has a Reasoning column); MT_EPARSE
 * for a bad Sentences field. */
enum mt_status mtx_example_body(struct mt_buf *b, struct mt_csv *c,
                                const long *col);

/* Loads examples_path into a->knn: each row's example text and the
 * embedding of its note. */
enum mt_status mtx_knn_load(struct mt_agent *a, struct mt_error *err);

#endif
