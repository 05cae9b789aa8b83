/* One note of a batch (batch layer): the MEDEC-format notes a batch reads,
 * one note checked into its submission line and trace line, and the
 * submission written from the notes. The note runner (run.c), `medtrust
 * worker` and `mediqa --collect` share them. */
#ifndef MTX_BATCH_NOTE_H
#define MTX_BATCH_NOTE_H

#include <stddef.h>

#include "eval/notes.h" /* struct mtx_note */
#include "medtrust/check.h"

/* Reads the first 'limit' notes (0 = all) of the MEDEC-format CSV at
 * 'path': Text ID, Text and, when present, Sentences; errors name the
 * file and line, and the columns missing. */
enum mt_status mtx_batch_notes_load(const char *path, size_t limit,
                                    struct mtx_note **out, size_t *n,
                                    struct mt_error *err);

/* As mtx_batch_notes_load over 'len' bytes of CSV text called 'name'
 * (errors name it), at most 'max' notes: more is MT_ELIMIT, none
 * MT_EPARSE (a batch of nothing is a mistake). */
enum mt_status mtx_batch_notes_load_text(const char *name, const char *text,
                                         size_t len, size_t max,
                                         struct mtx_note **out, size_t *n,
                                         struct mt_error *err);

/* Writes the submission atomically: each note's line in order, a failed
 * note's only when 'with_failed' (its fallback line), a note without a
 * line (never checked) not at all. */
enum mt_status mtx_batch_notes_write(const struct mtx_note *v, size_t n,
                                     const char *path, int with_failed,
                                     struct mt_error *err);

/* One checked note. 'line' is the submission line (the fallback one when
 * the check failed), 'trace' the trace JSON line; either is NULL only
 * when out of memory. */
struct mtx_batch_outcome {
    char *line;
    char *trace; /* NULL unless asked for */
    int failed;  /* the check failed: err says why */
    int fallback;
    struct mt_check_usage usage; /* zero when the check gave no result */
    struct mt_error err;
};

/* Checks one note with 'agent' and the per-call settings 'cp' (NULL: the
 * checker's own); thread-safe, as mt_agent_check_with is. The trace line
 * is {"id":ID,"error"? (when it failed),...the result with its trace}, or
 * {"id","error","rule"} when the check gave no result. MT_EMODEL leaves
 * the fallback verdict: a failed note all the same (issue 16). Free the
 * outcome with mtx_batch_outcome_free. */
void mtx_batch_check_note(struct mt_agent *agent,
                          const struct mt_agent_check_params *cp,
                          const char *id, const char *text, const char *sents,
                          int with_trace, struct mtx_batch_outcome *o);
void mtx_batch_outcome_free(struct mtx_batch_outcome *o);

/* Adds the counts of 'u' to 't'. */
void mtx_batch_usage_add(struct mt_check_usage *t,
                         const struct mt_check_usage *u);

#endif
