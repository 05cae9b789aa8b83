/* The notes of a MEDEC-format CSV (Text ID, Text and, when present,
 * Sentences), as `mediqa` and the server's batch check read them. */
#ifndef MT_EVAL_NOTES_H
#define MT_EVAL_NOTES_H

#include <stddef.h>

#include "core/csv.h"
#include "medtrust/core.h"

struct mtx_note {
    char *id;
    char *text;
    char *sents; /* NULL without a Sentences column */
    char *line;  /* submission line once finished */
    int resumed;
    int failed;   /* its check failed: 'line' is a fallback */
    int fallback; /* ... for a fallback verdict (batch/run.c) */
    char *error;  /* why it failed (batch/run.c), else NULL */
};

/* Reads the header of 'c': col[0..2] become the columns of Text ID, Text
 * and Sentences (-1 when absent). 1 when Text ID and Text are both there
 * (the caller says what is missing), else 0; *st is the read's status. */
int mtx_notes_columns(struct mt_csv *c, long col[3], enum mt_status *st,
                      struct mt_error *err);

/* Reads the rows after the header, at most 'limit' (0 = all), into a new
 * array (mtx_notes_free). An empty Text ID is MT_EPARSE naming
 * NAME:LINE; out of memory names NAME. */
enum mt_status mtx_notes_read(struct mt_csv *c, const char *name,
                              const long col[3], size_t limit,
                              struct mtx_note **out, size_t *n,
                              struct mt_error *err);

void mtx_notes_free(struct mtx_note *v, size_t n);

#endif
