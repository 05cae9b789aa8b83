/* A batch folder: the upload, the settings, the journal, the traces and
 * the submission of one resumable batch of notes (folder.h). The server's
 * POST /v1/batch (src/server/batch.c) keeps its HTTP side: the request's
 * fields, the run's row, the job and its events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch/folder.h"
#include "core/buf.h"
#include "core/csv.h"
#include "core/file.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "medtrust/params.h"

const char *const mtx_bfolder_settings[MTX_BFOLDER_NSET] = {
    "max_steps", "max_rounds", "accept_mean", "accept_min"};

/* ==== Files ==== */

void mtx_bfolder_dir(const char *root, int64_t run, char *buf, size_t n)
{
    snprintf(buf, n, "%s/batches/run-%lld", root, (long long)run);
}

/* Makes DIR's parent (ROOT/batches) and DIR. */
static enum mt_status make_dir(const struct mtx_bfolder *f,
                               struct mt_error *err)
{
    char up[4096];

    snprintf(up, sizeof up, "%s", f->dir);
    if (strrchr(up, '/'))
        *strrchr(up, '/') = '\0';
    if ((mkdir(up, 0750) == 0 || errno == EEXIST) &&
        (mkdir(f->dir, 0750) == 0 || errno == EEXIST))
        return MT_OK;
    return mt_fail(err, MT_EIO, "%s: %s", f->dir, strerror(errno));
}

char *mtx_bfolder_path(const struct mtx_bfolder *f, const char *name)
{
    struct mt_buf b = MT_BUF_INIT(8192);

    if (mtx_buf_printf(&b, "%s/%s", f->dir, name) != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* Writes 'n' bytes to DIR/NAME atomically (a temporary file, fsync,
 * rename). */
static enum mt_status write_file(const struct mtx_bfolder *f, const char *name,
                                 const char *data, size_t n,
                                 struct mt_error *err)
{
    char *path = mtx_bfolder_path(f, name);
    enum mt_status st;

    if (!path)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = mtx_file_write_atomic(path, data, n, err);
    mt_free(path);
    return st;
}

enum mt_status mtx_bfolder_read(const struct mtx_bfolder *f, const char *name,
                                char **out, size_t *n, struct mt_error *err)
{
    char *path = mtx_bfolder_path(f, name);
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 30);
    enum mt_status st = path ? mtx_file_read_all(path, &b, err)
                             : mt_fail(err, MT_ENOMEM, "out of memory");

    mt_free(path);
    if (st == MT_OK)
        st = mtx_buf_reserve(&b, 1); /* an empty file reads "" */
    *n = b.len;
    *out = st == MT_OK ? mtx_buf_take(&b) : NULL;
    mtx_buf_free(&b);
    if (st == MT_ENOTFOUND && err)
        err->status = MT_EIO;
    return st == MT_ENOTFOUND ? MT_EIO : st;
}

/* ==== The upload ==== */

int mtx_bfolder_labeled(const char *csv, size_t len)
{
    static const char *const gold[] = {"Error Flag", "Error Sentence ID",
                                       "Corrected Sentence"};
    struct mt_csv *c = NULL;
    int got = 0, any = 0;
    size_t i;

    if (mtx_csv_open_mem("data", csv, len, NULL, &c, NULL) == MT_OK &&
        mtx_csv_next(c, &got, NULL) == MT_OK && got)
        for (i = 0; i < sizeof gold / sizeof gold[0]; i++)
            any |= mtx_csv_find(c, gold[i]) >= 0;
    mtx_csv_close(c);
    return any;
}

enum mt_status mtx_bfolder_check_csv(const char *csv, size_t max_notes,
                                     struct mt_error *err)
{
    struct mt_eval_ref *ref = NULL;
    struct mt_batch *b = NULL;
    enum mt_status st =
        mt_batch_open_csv_text("data", csv, strlen(csv), max_notes, &b, err);

    if (st == MT_OK && mtx_bfolder_labeled(csv, strlen(csv)))
        st = mt_eval_ref_load_mem("data", csv, strlen(csv), &ref, err);
    mt_eval_ref_free(ref);
    mt_batch_free(b);
    return st;
}

/* The value of the batch's setting i (mtx_bfolder_settings). */
static double setting(const struct mtx_bfolder *f, size_t i)
{
    return mt_param_get(
        mt_param_find(&mt_agent_param_table, mtx_bfolder_settings[i], 1),
        &f->set);
}

/* params.json's text: the settings a resume needs; the model by its
 * caller's name (null: none named). */
static char *params_text(const struct mtx_bfolder *f)
{
    json_t *o = json_pack(
        "{s:s,s:s,s:b,s:b,s:[ffff],s:s?}", "strategy",
        mt_strategy_str(f->strat), "name", f->name, "bleurt", f->has_bleurt,
        "bertscore", f->has_bertscore, "settings", setting(f, 0), setting(f, 1),
        setting(f, 2), setting(f, 3), "model", f->has_model ? f->model : NULL);
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    char *out = t ? mt_strdup(t) : NULL;

    free(t);
    json_decref(o);
    return out;
}

/* Saves a per-pair scores file as NAME and reads it back, so one that
 * does not parse fails here ("NAME: line N: ..."). */
static enum mt_status save_scores(const struct mtx_bfolder *f, const char *name,
                                  const char *text, struct mt_error *err)
{
    struct mt_eval_scores *sc = NULL;
    char *p = NULL;
    enum mt_status st = write_file(f, name, text, strlen(text), err);

    p = st == MT_OK ? mtx_bfolder_path(f, name) : NULL;
    if (st == MT_OK)
        st = p ? mt_eval_scores_load(p, &sc, err)
               : mt_fail(err, MT_ENOMEM, "out of memory");
    mt_eval_scores_free(sc);
    mt_free(p);
    return st;
}

enum mt_status mtx_bfolder_save(const struct mtx_bfolder *f, const char *csv,
                                const char *bleurt, const char *bertscore,
                                struct mt_error *err)
{
    char *pt = params_text(f);
    enum mt_status st = make_dir(f, err);

    if (st == MT_OK)
        st = write_file(f, "data.csv", csv, strlen(csv), err);
    if (st == MT_OK && bleurt)
        st = save_scores(f, "bleurt.txt", bleurt, err);
    if (st == MT_OK && bertscore)
        st = save_scores(f, "bertscore.txt", bertscore, err);
    if (st == MT_OK)
        st = pt ? write_file(f, "params.json", pt, strlen(pt), err)
                : mt_fail(err, MT_ENOMEM, "out of memory");
    mt_free(pt);
    return st;
}

/* The settings and the rest of params.json's members into f. */
static enum mt_status params_parse(struct mtx_bfolder *f, json_t *o,
                                   struct mt_error *err)
{
    const char *strat = json_string_value(json_object_get(o, "strategy"));
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *model = json_string_value(json_object_get(o, "model"));
    json_t *set = json_object_get(o, "settings");
    size_t i;

    if (!strat || !name || json_array_size(set) != MTX_BFOLDER_NSET ||
        mt_strategy_parse(strat, &f->strat) != MT_OK)
        return mt_fail(err, MT_EPARSE, "%s/params.json: not a batch's settings",
                       f->dir);
    mt_agent_default_params(&f->set);
    for (i = 0; i < MTX_BFOLDER_NSET; i++)
        mt_param_set(
            mt_param_find(&mt_agent_param_table, mtx_bfolder_settings[i], 1),
            &f->set, json_number_value(json_array_get(set, i)));
    f->has_model = model != NULL;
    snprintf(f->model, sizeof f->model, "%s", model ? model : "");
    snprintf(f->name, sizeof f->name, "%s", name);
    f->has_bleurt = json_is_true(json_object_get(o, "bleurt"));
    f->has_bertscore = json_is_true(json_object_get(o, "bertscore"));
    return MT_OK;
}

enum mt_status mtx_bfolder_load(struct mtx_bfolder *f, struct mt_error *err)
{
    char *txt = NULL;
    size_t n = 0;
    json_t *o;
    enum mt_status st = mtx_bfolder_read(f, "params.json", &txt, &n, err);

    if (st != MT_OK)
        return st;
    o = json_loads(txt, 0, NULL);
    mt_free(txt);
    st = params_parse(f, o, err);
    json_decref(o);
    return st;
}

char *mtx_bfolder_upload(const struct mtx_bfolder *f, struct mt_error *err)
{
    static const char *const files[] = {"data.csv", "bleurt.txt",
                                        "bertscore.txt"};
    static const char *const keys[] = {"data", "bleurt", "bertscore"};
    const int has[] = {1, f->has_bleurt, f->has_bertscore};
    json_t *o = json_pack("{s:s,s:s}", "strategy", mt_strategy_str(f->strat),
                          "name", f->name);
    char *txt = NULL, *out = NULL;
    size_t i, n;

    for (i = 0; o && i < MTX_BFOLDER_NSET; i++)
        json_object_set_new(o, mtx_bfolder_settings[i],
                            json_real(setting(f, i)));
    for (i = 0; o && i < 3; i++) {
        if (!has[i])
            continue;
        if (mtx_bfolder_read(f, files[i], &txt, &n, err) != MT_OK)
            break;
        json_object_set_new(o, keys[i], json_stringn(txt, n));
        mt_free(txt);
    }
    if (o && i == 3 && (txt = json_dumps(o, JSON_COMPACT)) != NULL) {
        out = mt_strdup(txt);
        mtx_json_text_free(txt);
    }
    json_decref(o);
    if (!out && err && err->status == MT_OK)
        mt_fail(err, MT_ENOMEM, "out of memory");
    return out;
}

/* ==== Scoring ==== */

/* Writes the run's HTML report; a failure is logged and leaves the run
 * without a report. */
static void save_report(const char *path, const struct mt_eval_ref *ref,
                        const struct mt_eval_sub *sub,
                        const struct mt_eval_result *res, const char *name)
{
    struct mt_eval_run run = {name, res, sub};
    struct mt_error err = {MT_OK, ""};
    char dir[4096];

    snprintf(dir, sizeof dir, "%s", path);
    if (strrchr(dir, '/'))
        *strrchr(dir, '/') = '\0';
    if ((mkdir(dir, 0750) != 0 && errno != EEXIST) ||
        mt_eval_report_write(path, ref, &run, 1, &err) != MT_OK)
        mt_log(MT_LOG_WARN, "server: no report at %s: %s", path,
               err.msg[0] ? err.msg : strerror(errno));
}

enum mt_status mtx_batch_score_text(const char *rtext, const char *stext,
                                    const char *name,
                                    const struct mt_eval_params *p, char **json,
                                    size_t *notes, const char *report,
                                    struct mt_error *err)
{
    struct mt_eval_ref *ref = NULL;
    struct mt_eval_sub *sub = NULL;
    struct mt_eval_result *res = NULL;
    enum mt_status st =
        mt_eval_ref_load_mem("reference", rtext, strlen(rtext), &ref, err);

    if (st == MT_OK)
        st = mt_eval_sub_parse(name, stext, strlen(stext), &sub, err);
    if (st == MT_OK)
        st = mt_eval_score(ref, sub, p, &res, err);
    if (st == MT_OK)
        st = mt_eval_result_json(res, ref, name, json, err);
    if (st == MT_OK)
        save_report(report, ref, sub, res, name);
    *notes = ref ? mt_eval_ref_count(ref) : 0;
    mt_eval_result_free(res);
    mt_eval_sub_free(sub);
    mt_eval_ref_free(ref);
    return st;
}

/* Scores the submission against the CSV (with the folder's per-pair
 * files) and writes the report. */
static enum mt_status score(const struct mtx_bfolder *f,
                            struct mtx_bfolder_run *r, const char *csv,
                            const char *sub, json_t **result,
                            struct mt_error *err)
{
    struct mt_eval_params p;
    struct mt_eval_scores *bleurt = NULL, *bert = NULL;
    char *bpath = f->has_bleurt ? mtx_bfolder_path(f, "bleurt.txt") : NULL;
    char *fpath =
        f->has_bertscore ? mtx_bfolder_path(f, "bertscore.txt") : NULL;
    char *json = NULL;
    size_t notes = 0;
    enum mt_status st = MT_OK;

    mt_eval_default_params(&p);
    if (bpath)
        st = mt_eval_scores_load(bpath, &bleurt, err);
    if (st == MT_OK && fpath)
        st = mt_eval_scores_load(fpath, &bert, err);
    p.bleurt = bleurt;
    p.bertscore = bert;
    if (st == MT_OK)
        st = mtx_batch_score_text(csv, sub, f->name, &p, &json, &notes,
                                  r->report, err);
    r->scored = st == MT_OK;
    if (st == MT_OK)
        *result = json_loads(json, 0, NULL);
    if (st == MT_OK && !*result)
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    mt_free(json);
    mt_free(bpath);
    mt_free(fpath);
    mt_eval_scores_free(bleurt);
    mt_eval_scores_free(bert);
    return st;
}

/* ==== The run ==== */

/* The note runner's progress (medtrust/batch.h): "done" counts the notes
 * finished (resumed or checked), "failed" those whose check failed. */
static void on_progress(void *user, const struct mt_batch_progress *bp,
                        const struct mt_batch_note *note)
{
    struct mtx_bfolder_run *r = user;

    r->progress.resumed = bp->resumed;
    r->progress.failed = bp->failed;
    r->progress.done = bp->resumed + bp->checked - bp->failed;
    if (r->on_progress)
        r->on_progress(r->user, &r->progress, note);
}

static int cancelled(void *user)
{
    const struct mtx_bfolder_run *r = user;

    return r->cancelled && r->cancelled(r->user);
}

/* Checks every note the journal does not hold on the library's note
 * runner, one at a time, each note's trace line in DIR/traces.jsonl. */
static enum mt_status check_all(const struct mtx_bfolder *f,
                                struct mtx_bfolder_run *r, struct mt_batch *b,
                                struct mt_error *err)
{
    struct mt_agent *agent = NULL;
    struct mt_agent_check_params cp;
    struct mt_batch_params bp;
    char *jp = mtx_bfolder_path(f, "journal.jsonl");
    char *tp = mtx_bfolder_path(f, "traces.jsonl");
    enum mt_status st =
        jp && tp ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");

    if (st == MT_OK)
        st = r->checker(r->user, &agent, &cp, err);
    if (st == MT_OK) {
        mt_batch_default_params(&bp);
        bp.jobs = 1;
        bp.resume = 1;
        bp.journal_failed = 0;
        bp.journal_path = jp;
        bp.trace_path = tp;
        bp.check = &cp;
        bp.on_progress = on_progress;
        bp.cancelled = cancelled;
        bp.user = r;
        st = mt_batch_run(b, agent, &bp, err);
    }
    r->checker_put(r->user, agent);
    mt_free(jp);
    mt_free(tp);
    return st;
}

/* As mediqa: a note whose model calls failed is not an answer, and a run
 * with such notes is failed, not done. The journal keeps the finished
 * notes (and the report of those is on disk when any was scored); a
 * resume checks only the failed ones again. */
static enum mt_status fail_notes(const struct mtx_bfolder_progress *p,
                                 const struct mt_batch *b, json_t **result,
                                 struct mt_error *err)
{
    struct mt_batch_note x;
    char ids[320] = "";
    size_t i, k = 0, at = 0;

    for (i = 0; i < p->total && at + 1 < sizeof ids; i++)
        if (mt_batch_note_get(b, i, &x) == MT_OK && (x.failed || !x.line) &&
            k++ < 8)
            at += (size_t)snprintf(ids + at, sizeof ids - at, "%s%.60s",
                                   k > 1 ? ", " : "", x.id);
    json_decref(*result);
    *result = NULL;
    return mt_fail(err, MT_EMODEL,
                   "%zu of %zu notes failed (%s%s: their model calls failed "
                   "or the model's replies were unusable, so no verdict): "
                   "resume the run to check them again",
                   p->failed, p->total, ids, k > 8 ? ", ..." : "");
}

/* The batch's result: the score when the CSV is labeled, and "batch". */
static enum mt_status batch_result(const struct mtx_bfolder *f,
                                   struct mtx_bfolder_run *r, const char *csv,
                                   size_t len, const char *sub, json_t **result,
                                   struct mt_error *err)
{
    const struct mtx_bfolder_progress *p = &r->progress;
    int labeled = mtx_bfolder_labeled(csv, len);
    enum mt_status st = MT_OK;

    if (labeled)
        st = score(f, r, csv, sub, result, err);
    else if (!(*result = json_pack("{s:s,s:b}", "run", f->name, "labeled", 0)))
        st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK)
        json_object_set_new(
            *result, "batch",
            json_pack("{s:s,s:I,s:I,s:I,s:b}", "strategy",
                      mt_strategy_str(f->strat), "notes", (json_int_t)p->total,
                      "failed", (json_int_t)p->failed, "resumed",
                      (json_int_t)p->resumed, "labeled", labeled));
    return st;
}

enum mt_status mtx_bfolder_run(const struct mtx_bfolder *f,
                               struct mtx_bfolder_run *r, json_t **result,
                               struct mt_error *err)
{
    struct mtx_bfolder_progress *p = &r->progress;
    struct mt_batch *b = NULL;
    char *csv = NULL, *sub = NULL;
    size_t len = 0;
    enum mt_status st = mtx_bfolder_read(f, "data.csv", &csv, &len, err);

    memset(p, 0, sizeof *p);
    r->scored = 0;
    if (st == MT_OK)
        st = mt_batch_open_csv_text("data", csv, len, r->max_notes, &b, err);
    p->total = b ? mt_batch_count(b) : 0;
    if (st == MT_OK)
        st = check_all(f, r, b, err);
    /* Scored when any note has an answer (failed notes are left out). */
    if (st == MT_OK && p->failed == p->total && p->total)
        st = fail_notes(p, b, result, err);
    if (st == MT_OK)
        st = mt_batch_submission(b, 0, &sub, err);
    if (st == MT_OK)
        st = write_file(f, "submission.txt", sub, strlen(sub), err);
    if (st == MT_OK)
        st = batch_result(f, r, csv, len, sub, result, err);
    if (st == MT_OK && p->failed)
        st = fail_notes(p, b, result, err);
    mt_batch_free(b);
    mt_free(csv);
    mt_free(sub);
    return st;
}
