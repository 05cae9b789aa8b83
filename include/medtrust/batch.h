/* medtrust note batch runner: the notes of a MEDEC-format CSV checked by
 * one checker, in parallel, each finished note journaled (fdatasync) so a
 * resumed run neither redoes nor loses one, an optional trace file with
 * one JSON line per note, and the MEDIQA-CORR submission of the notes.
 * `medtrust mediqa`, the server's POST /v1/batch and the Python package
 * run their batches on it. */
#ifndef MEDTRUST_BATCH_H
#define MEDTRUST_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A batch: its notes, in the CSV's order, and what became of each. */
struct mt_batch;

/* Where a run stands, given to on_progress and by mt_batch_progress. */
struct mt_batch_progress {
    size_t total;    /* notes in the batch */
    size_t resumed;  /* finished notes kept from the journal */
    size_t checked;  /* notes checked by this run, the failed ones too */
    size_t failed;   /* of them, notes whose check failed */
    size_t fallback; /* notes with a fallback verdict (their model calls
                        failed or no reply was usable): failed ones, and
                        ones allow_fallbacks let stand, not failed */
    struct mt_check_usage usage; /* summed over the notes checked */
};

/* One note and what became of it. The strings belong to the batch and
 * stay valid until the next mt_batch_run or mt_batch_free. */
struct mt_batch_note {
    const char *id;
    const char *line;  /* its submission line; NULL when not checked (yet),
                          the fallback line when its check failed */
    const char *error; /* why its check failed, NULL when it did not */
    int failed;
    int fallback;
    int resumed; /* its line came from the journal */
};

/* How a batch runs. Strings are borrowed for the duration of the run. */
struct mt_batch_params {
    uint32_t jobs;            /* notes checked at once, 1..512 (4) */
    int resume;               /* keep the finished notes the journal holds
                                 and check only the rest (0: start the
                                 journal and trace empty) */
    int journal_failed;       /* also journal a failed note, with its
                                 reason (1); a resume checks it again
                                 either way */
    const char *journal_path; /* the journal: an append-only JSONL of
                                 {"id","line"} records, locked while the
                                 run holds it; NULL: none (nothing
                                 resumes) */
    const char *trace_path;   /* one JSON line per note ({"id",...the check
                                 result with its trace}), written and synced
                                 before the note's journal line; a resume
                                 keeps the lines of the notes it keeps and
                                 drops the rest. NULL: no trace */
    const struct mt_agent_check_params *check; /* every note's settings and
                                 callbacks (mt_agent_check_with); NULL: the
                                 checker's own */
    /* Called once when the run starts (note NULL) and after each note is
     * recorded (its journal line written), serialized by the runner, so
     * it may keep state without a lock; keep it short. */
    void (*on_progress)(void *user, const struct mt_batch_progress *p,
                        const struct mt_batch_note *note);
    /* Polled before each note starts: nonzero stops the run (MT_ECANCELED;
     * the notes in progress finish and are journaled). NULL: never. */
    int (*cancelled)(void *user);
    void *user;
};

/* The defaults: 4 jobs, no resume, failed notes journaled, no journal,
 * no trace, the checker's settings, no callbacks. */
void mt_batch_default_params(struct mt_batch_params *p);

/* Reads the first 'limit' notes (0 = all) of the MEDEC-format CSV at
 * 'path': Text ID, Text and, when present, Sentences (so sentence ids are
 * the data set's own). Errors name the file and line or the missing
 * columns. On success *out owns a new batch (mt_batch_free). */
enum mt_status mt_batch_open_csv(const char *path, size_t limit,
                                 struct mt_batch **out, struct mt_error *err);

/* As mt_batch_open_csv over 'len' bytes of CSV text called 'name' in
 * errors, at most 'max' notes (more is MT_ELIMIT; none is MT_EPARSE). */
enum mt_status mt_batch_open_csv_text(const char *name, const char *text,
                                      size_t len, size_t max,
                                      struct mt_batch **out,
                                      struct mt_error *err);

/* Checks every note of 'b' that is not finished with 'agent' (borrowed;
 * its checks are thread-safe) as 'p' says (NULL: the defaults). Returns
 * MT_OK when every note was checked, failed or not (mt_batch_progress
 * says how many failed: a failed note is never a success); MT_ECANCELED
 * when p->cancelled stopped it; MT_EIO and the like, naming the file,
 * when the journal or the trace cannot be opened or written (another run
 * holding the journal's lock is MT_EIO): the notes journaled so far
 * resume. Not thread-safe on one batch. */
enum mt_status mt_batch_run(struct mt_batch *b, struct mt_agent *agent,
                            const struct mt_batch_params *p,
                            struct mt_error *err);

/* The counts of the last run (zero before one). */
void mt_batch_progress_get(const struct mt_batch *b,
                           struct mt_batch_progress *out);

/* The number of notes. */
size_t mt_batch_count(const struct mt_batch *b);

/* Note i (0 <= i < mt_batch_count) into *out; MT_EINVAL past the end. */
enum mt_status mt_batch_note_get(const struct mt_batch *b, size_t i,
                                 struct mt_batch_note *out);

/* The submission: each checked note's line and a newline, in the CSV's
 * order; a failed note's (fallback) line only when 'with_failed'. *out
 * is new (mt_free; "" when no line). */
enum mt_status mt_batch_submission(const struct mt_batch *b, int with_failed,
                                   char **out, struct mt_error *err);

/* Writes mt_batch_submission's text to 'path' atomically: a reader sees
 * the old file or the whole new one. */
enum mt_status mt_batch_write_submission(const struct mt_batch *b,
                                         const char *path, int with_failed,
                                         struct mt_error *err);

/* Frees the batch; NULL is allowed. */
void mt_batch_free(struct mt_batch *b);

#ifdef __cplusplus
}
#endif

#endif
