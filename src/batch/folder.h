/* A batch folder (batch layer): one batch of notes checked from files on
 * disk, resumable, as the server's POST /v1/batch keeps it in
 * DB/batches/run-ID. It holds the upload (data.csv, a MEDEC-format CSV;
 * optional per-pair score files bleurt.txt and bertscore.txt), the
 * settings a resume reads (params.json), the note runner's journal.jsonl
 * and traces.jsonl (medtrust/batch.h), and the run's submission.txt.
 * Every file is written atomically (core/file.h). A run checks the notes
 * the journal does not hold, writes the submission and, when the CSV has
 * MEDEC's gold columns, scores it as `score --report` does. */
#ifndef MTX_BATCH_FOLDER_H
#define MTX_BATCH_FOLDER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "medtrust/batch.h"
#include "medtrust/check.h"
#include "medtrust/eval.h"

/* The members of mt_agent_param_table a batch takes (the paper's
 * settings: Algorithm 1's N and M, MedEval's thresholds), in
 * params.json's "settings" order. */
#define MTX_BFOLDER_NSET 4
extern const char *const mtx_bfolder_settings[MTX_BFOLDER_NSET];

struct mtx_bfolder {
    char dir[4096];             /* the folder */
    enum mt_strategy strat;     /* the strategy its notes are checked with */
    struct mt_agent_params set; /* mtx_bfolder_settings (the rest are the
                                   defaults) */
    char name[128];             /* the run's name in the score */
    int has_model;              /* params.json names a model: */
    char model[256];            /* the caller's name of it */
    int has_bleurt;             /* DIR/bleurt.txt: per-pair BLEURT scores */
    int has_bertscore;          /* DIR/bertscore.txt: per-pair BERTScore F1 */
};

/* The folder of run 'run' under 'root': ROOT/batches/run-ID. */
void mtx_bfolder_dir(const char *root, int64_t run, char *buf, size_t n);

/* DIR/NAME (caller frees), or NULL without memory. */
char *mtx_bfolder_path(const struct mtx_bfolder *f, const char *name);

/* Reads DIR/NAME whole into *out (NUL-terminated, caller frees); a
 * missing file is MT_EIO, as any file a batch's folder must hold. */
enum mt_status mtx_bfolder_read(const struct mtx_bfolder *f, const char *name,
                                char **out, size_t *n, struct mt_error *err);

/* Whether the CSV has any of MEDEC's gold columns: then it is scored
 * (and must have them all), else it is an unlabeled set of notes. */
int mtx_bfolder_labeled(const char *csv, size_t len);

/* Checks CSV text before a run is made: its notes (at most max_notes)
 * and, when it has gold columns, the labels the score needs (an error
 * names the line and field). */
enum mt_status mtx_bfolder_check_csv(const char *csv, size_t max_notes,
                                     struct mt_error *err);

/* Makes ROOT/batches and DIR and saves the upload: the CSV, the optional
 * BLEURT and BERTScore files (NULL: none; each read back, so one that does
 * not parse fails here naming it), and params.json from f. */
enum mt_status mtx_bfolder_save(const struct mtx_bfolder *f, const char *csv,
                                const char *bleurt, const char *bertscore,
                                struct mt_error *err);

/* Reads DIR/params.json into f (f->dir set): MT_EPARSE when it is not a
 * batch's settings, MT_EIO when it is missing. */
enum mt_status mtx_bfolder_load(struct mtx_bfolder *f, struct mt_error *err);

/* The folder's upload as one JSON object's text (caller frees):
 * "strategy", "name", the settings by name, then "data", "bleurt" and
 * "bertscore" (those it has) with their files' text; NULL with err set. */
char *mtx_bfolder_upload(const struct mtx_bfolder *f, struct mt_error *err);

/* Where a run stands: notes in the batch, finished (resumed or checked),
 * of them kept from the journal, and checked but failed. */
struct mtx_bfolder_progress {
    size_t total, done, resumed, failed;
};

struct mtx_bfolder_run {
    size_t max_notes;   /* notes a batch may have */
    const char *report; /* where the HTML report of a labeled batch goes */
    /* The checker to check the notes with and each note's settings (the
     * caller's cancelled callback in them), held until checker_put. */
    enum mt_status (*checker)(void *user, struct mt_agent **out,
                              struct mt_agent_check_params *cp,
                              struct mt_error *err);
    void (*checker_put)(void *user, struct mt_agent *a);
    /* After each note (note NULL: at the start); a failed note's error is
     * in note->error. */
    void (*on_progress)(void *user, const struct mtx_bfolder_progress *p,
                        const struct mt_batch_note *note);
    int (*cancelled)(void *user); /* polled between notes */
    void *user;
    /* out: */
    struct mtx_bfolder_progress progress;
    int scored; /* the report was written (a labeled batch scored) */
};

/* Runs the batch of folder f: checks every note DIR/journal.jsonl does
 * not hold, one at a time (each finished note fdatasync'd, failed ones
 * left out, so a resume checks them again), its trace line in
 * DIR/traces.jsonl; writes DIR/submission.txt; scores a labeled CSV
 * against the submission (per-pair files included) into *result, with a
 * "batch" member (strategy, notes, failed, resumed, labeled). MT_ECANCELED
 * when asked to stop (the journal keeps what is done); MT_EMODEL when a
 * note failed (as mediqa: such a run is failed, not done; its ids in the
 * error). */
enum mt_status mtx_bfolder_run(const struct mtx_bfolder *f,
                               struct mtx_bfolder_run *r, json_t **result,
                               struct mt_error *err);

/* Scores submission text 'sub' against MEDEC CSV text 'ref' as `score
 * --json` does into *json (caller frees) and writes the HTML report to
 * 'report' (a failure there is logged); *notes gets the reference's
 * count. */
enum mt_status mtx_batch_score_text(const char *ref, const char *sub,
                                    const char *name,
                                    const struct mt_eval_params *p, char **json,
                                    size_t *notes, const char *report,
                                    struct mt_error *err);

#endif
