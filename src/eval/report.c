/* The HTML score report: one self-contained file (inline CSS, SVG, a few
 * lines of JS), headline table with intervals, charts, and a sortable,
 * filterable table of every note with a word diff. Written atomically. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "eval/report_int.h"
#include "core/redact.h"
#include "medtrust/core.h"

/* ==== Output helpers ==== */

void mtx_ev_outf(struct mt_ev_out *o, const char *fmt, ...)
{
    va_list ap;

    if (o->st != MT_OK)
        return;
    va_start(ap, fmt);
    o->st = mtx_buf_vprintf(&o->b, fmt, ap);
    va_end(ap);
}

void mtx_ev_outs(struct mt_ev_out *o, const char *s)
{
    if (o->st == MT_OK)
        o->st = mtx_buf_append_str(&o->b, s);
}

static void out_n(struct mt_ev_out *o, const char *s, size_t n)
{
    if (o->st == MT_OK)
        o->st = mtx_buf_append(&o->b, s, n);
}

static const char *html_escape(char c)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    default:
        return NULL;
    }
}

void mtx_ev_html_text(struct mt_ev_out *o, const char *text, size_t max)
{
    /* a report shows no secret of a spec or URL (a swept --llm, say) */
    char *red = text && strstr(text, "://") ? mtx_redact_dup(text) : NULL;
    const char *s = red ? red : text ? text : "";
    size_t chars = 0;
    size_t i;

    if (text && strstr(text, "://") && !red)
        s = "";
    for (i = 0; s[i]; i++) {
        const char *e = html_escape(s[i]);
        if (((unsigned char)s[i] & 0xc0) != 0x80 && max && chars++ >= max) {
            mtx_ev_outs(o, "&#8230;");
            break;
        }
        if (e)
            mtx_ev_outs(o, e);
        else
            out_n(o, s + i, 1);
    }
    mt_free(red);
}

/* ==== Word diff ==== */

struct wlist {
    struct mt_str w[256];
    size_t n;
};

static void split_words(const char *s, struct wlist *l)
{
    size_t pos = 0;
    size_t n = strlen(s);

    l->n = 0;
    while (l->n < 256 && mtx_ev_next_token(s, n, &pos, &l->w[l->n]))
        l->n++;
}

static void diff_word(struct mt_ev_out *o, struct mt_str w, const char *tag)
{
    char tmp[512];
    size_t n = w.n < sizeof tmp - 1 ? w.n : sizeof tmp - 1;

    memcpy(tmp, w.p, n);
    tmp[n] = '\0';
    if (tag)
        mtx_ev_outf(o, "<%s>", tag);
    mtx_ev_html_text(o, tmp, 0);
    if (tag)
        mtx_ev_outf(o, "</%s>", tag);
    mtx_ev_outs(o, " ");
}

/* Suffix-LCS lengths: t[i][j] = LCS of a[i..] and b[j..]. */
static void lcs_table(const struct wlist *a, const struct wlist *b, uint16_t *t)
{
    size_t w = b->n + 1;
    size_t i, j;

    for (i = a->n + 1; i-- > 0;) {
        for (j = b->n + 1; j-- > 0;) {
            uint16_t down, right;
            if (i == a->n || j == b->n) {
                t[i * w + j] = 0;
                continue;
            }
            if (mtx_str_eq(a->w[i], b->w[j])) {
                t[i * w + j] = (uint16_t)(t[(i + 1) * w + j + 1] + 1);
                continue;
            }
            down = t[(i + 1) * w + j];
            right = t[i * w + j + 1];
            t[i * w + j] = down > right ? down : right;
        }
    }
}

/* Walks the table for gold a and predicted b: shared words plain, gold
 * only in <del>, predicted only in <ins>. */
static void word_diff(struct mt_ev_out *o, const char *gold, const char *pred,
                      uint16_t *t)
{
    struct wlist a, b;
    size_t w, i = 0, j = 0;

    split_words(gold, &a);
    split_words(pred, &b);
    lcs_table(&a, &b, t);
    w = b.n + 1;
    while (i < a.n || j < b.n) {
        if (i < a.n && j < b.n && mtx_str_eq(a.w[i], b.w[j])) {
            diff_word(o, a.w[i++], NULL);
            j++;
        } else if (j < b.n &&
                   (i == a.n || t[i * w + j + 1] >= t[(i + 1) * w + j])) {
            diff_word(o, b.w[j++], "ins");
        } else {
            diff_word(o, a.w[i++], "del");
        }
    }
}

/* ==== Sections ==== */

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
    "padding:3px 6px;vertical-align:top}th{background:#f3f3f3}"
    "th.sortable{cursor:pointer}td.num{text-align:right;font-variant-numeric:"
    "tabular-nums}del{background:#fdd;text-decoration:line-through}"
    "ins{background:#dfd;text-decoration:none}figure{display:inline-block;"
    "margin:1em;vertical-align:top}svg.chart{font-size:11px}"
    ".note{color:#555;max-width:60em}";

/* Sorting by clicking a header (numbers numerically) and filtering rows by
 * the text of an input; no external script. */
static const char js[] =
    "document.querySelectorAll('table.notes').forEach(function(t){"
    "var hs=t.tHead.rows[0].cells;"
    "Array.prototype.forEach.call(hs,function(h,c){h.classList.add("
    "'sortable');h.addEventListener('click',function(){"
    "var asc=h.dataset.dir!=='asc';h.dataset.dir=asc?'asc':'desc';"
    "var rs=Array.prototype.slice.call(t.tBodies[0].rows);"
    "rs.sort(function(a,b){var x=a.cells[c].dataset.v||a.cells[c]."
    "textContent,y=b.cells[c].dataset.v||b.cells[c].textContent;"
    "var p=parseFloat(x),q=parseFloat(y);var r=(!isNaN(p)&&!isNaN(q))?"
    "p-q:x.localeCompare(y);return asc?r:-r;});"
    "rs.forEach(function(r){t.tBodies[0].appendChild(r);});});});});"
    "document.querySelectorAll('input.filter').forEach(function(i){"
    "i.addEventListener('input',function(){var q=i.value.toLowerCase();"
    "var t=document.getElementById(i.dataset.table);"
    "Array.prototype.forEach.call(t.tBodies[0].rows,function(r){"
    "r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';"
    "});});});";

static const char *label_of(int which)
{
    static const char *const l[MT_EVAL_METRIC_COUNT] = {
        "ROUGE-1", "ROUGE-2",   "ROUGE-L", "BERTScore",
        "BLEURT",  "Aggregate", "KPCS",
    };

    if (which == MT_EV_FLAG)
        return "Error flag accuracy";
    if (which == MT_EV_SENT)
        return "Error sentence accuracy";
    return l[which];
}

static void headline_row(struct mt_ev_out *o, const struct mt_eval_run *rn,
                         size_t nrun, int which)
{
    double lo, hi;
    size_t i;

    if (which == MT_EVAL_BERTSCORE) { /* "BERTScore (model X)" */
        mtx_ev_outs(o, "<tr><th>BERTScore (model ");
        mtx_ev_html_text(o, rn[0].result->bert_model, 0);
        mtx_ev_outs(o, ")</th>");
    } else {
        mtx_ev_outf(o, "<tr><th>%s</th>", label_of(which));
    }
    for (i = 0; i < nrun; i++) {
        double v = mtx_ev_headline(rn[i].result, which);
        if (isnan(v)) {
            mtx_ev_outs(o, "<td class=\"num\">absent</td>");
            continue;
        }
        if (mtx_ev_headline_ci(rn[i].result, which, &lo, &hi) != MT_OK)
            o->st = MT_ENOMEM;
        mtx_ev_outf(o,
                    "<td class=\"num\">%.4f <small>[%.4f, %.4f]</small>"
                    "</td>",
                    v, lo, hi);
    }
    mtx_ev_outs(o, "</tr>\n");
}

static void headline_table(struct mt_ev_out *o, const struct mt_eval_run *rn,
                           size_t nrun)
{
    size_t i;
    int k;

    mtx_ev_outs(o, "<h2>Headline</h2><table id=\"headline\"><thead><tr>"
                   "<th>metric (composite over notes) [95% CI]</th>");
    for (i = 0; i < nrun; i++) {
        mtx_ev_outf(o, "<th style=\"color:%s\">", mtx_ev_color(i));
        mtx_ev_html_text(o, rn[i].name, 60);
        mtx_ev_outs(o, "</th>");
    }
    mtx_ev_outs(o, "</tr></thead><tbody>\n");
    headline_row(o, rn, nrun, MT_EV_FLAG);
    headline_row(o, rn, nrun, MT_EV_SENT);
    for (k = 0; k < MT_EVAL_METRIC_COUNT; k++)
        if (rn[0].result->metrics & (1u << k))
            headline_row(o, rn, nrun, k);
    mtx_ev_outs(o, "</tbody></table>\n");
}

/* How BERTScore was computed, and whether it compares with the official
 * run. */
static void bert_note(struct mt_ev_out *o, const struct mt_eval_result *r)
{
    mtx_ev_outs(o, "<p class=\"note\" id=\"bertscore-note\">BERTScore (model ");
    mtx_ev_html_text(o, r->bert_model, 0);
    mtx_ev_outs(o, "): greedy cosine matching of the model's per-token "
                   "embeddings (special tokens left out), ");
    mtx_ev_outs(o, r->bert_idf ? "idf-weighted over the reference corrections"
                               : "uniform token weights");
    if (r->bert_rescaled)
        mtx_ev_outf(o, ", rescaled with baselines P %.6g, R %.6g, F %.6g",
                    r->bert_base[0], r->bert_base[1], r->bert_base[2]);
    else
        mtx_ev_outs(o, ", not rescaled");
    mtx_ev_outs(o, "; ");
    mtx_ev_html_text(o, mtx_ev_bert_note(r), 0);
    mtx_ev_outs(o, ".</p>\n");
}

/* Which ROUGE-1 KPCS took (enum mt_eval_kpcs_rouge). */
static void kpcs_rouge_note(struct mt_ev_out *o, const struct mt_eval_result *r)
{
    if (r->kpcs_rouge == MT_EVAL_KPCS_ROUGE_PUBLISHED) {
        mtx_ev_outs(o, "; KPCS's ROUGE-1 is Google's <code>rouge_score"
                       "</code> for every language, as the published "
                       "KPCS code computes it");
        return;
    }
    mtx_ev_outf(o,
                "; KPCS's ROUGE-1 is MedGuards' own per language: "
                "<code>rouge_score</code> (English), jieba's words scored "
                "by <code>rouge-chinese</code> (Chinese, %zu pairs), the "
                "<code>rouge</code> package (Arabic, %zu pairs)",
                r->kpcs_pairs_zh, r->kpcs_pairs_ar);
}

static void metric_note(struct mt_ev_out *o, const struct mt_eval_result *r)
{
    mtx_ev_outs(o, "<p class=\"note\">Aggregate = mean of ROUGE-1");
    if (r->metrics & (1u << MT_EVAL_BERTSCORE)) {
        mtx_ev_outs(o, ", BERTScore (model ");
        mtx_ev_html_text(o, r->bert_model, 0);
        mtx_ev_outs(o, ")");
    }
    if (r->metrics & (1u << MT_EVAL_BLEURT))
        mtx_ev_outs(o, ", BLEURT (per-pair scores from a file)");
    if ((r->metrics & 0x18u) != 0x18u)
        mtx_ev_outs(o,
                    ". BERTScore and/or BLEURT were not given, so this is "
                    "not the official three-metric aggregate; absent metrics "
                    "are left out, not counted as 0");
    mtx_ev_outf(o,
                ". ROUGE is that of the Python <code>rouge</code> package. "
                "Intervals: percentile bootstrap over notes, %d resamples, "
                "seed %u. KPCS counts a correct NA once (the published "
                "MedGuards code counted it twice)",
                MT_EVAL_BOOT_RESAMPLES, MT_EVAL_BOOT_SEED);
    if (r->metrics & (1u << MT_EVAL_KPCS))
        kpcs_rouge_note(o, r);
    mtx_ev_outs(o, ".</p>\n");
    if (r->metrics & (1u << MT_EVAL_BERTSCORE))
        bert_note(o, r);
}

/* ==== Charts ==== */

static enum mt_status chart_types(struct mt_ev_out *o,
                                  const struct mt_eval_ref *ref,
                                  const struct mt_eval_run *rn, size_t nrun)
{
    struct mt_ev_group *g = NULL;
    const char **labels = NULL;
    double *v = NULL;
    size_t ng = 0, i, r;
    enum mt_status st =
        mtx_ev_groups(rn[0].result, ref, MT_EV_ERROR_TYPE, &g, &ng);

    if (st != MT_OK || ng == 0)
        return st;
    labels = mt_calloc(ng, sizeof *labels);
    v = mt_calloc(ng * nrun, sizeof *v);
    for (i = 0; labels && v && i < ng; i++)
        labels[i] = g[i].label;
    for (r = 0; labels && v && st == MT_OK && r < nrun; r++) {
        struct mt_ev_group *gr = NULL;
        size_t n = 0;
        st = mtx_ev_groups(rn[r].result, ref, MT_EV_ERROR_TYPE, &gr, &n);
        for (i = 0; st == MT_OK && i < n && i < ng; i++)
            v[r * ng + i] = gr[i].sent_acc;
        mt_free(gr);
    }
    if (!labels || !v)
        st = MT_ENOMEM;
    mtx_ev_outs(o, "<figure><figcaption>Error sentence accuracy by error "
                   "type (gold), one bar per run</figcaption>");
    if (st == MT_OK)
        mtx_ev_svg_bars(o, "chart-types", labels, ng, v, nrun);
    mtx_ev_outs(o, "</figure>\n");
    mt_free(labels);
    mt_free(v);
    mt_free(g);
    return st;
}

static void chart_confusion(struct mt_ev_out *o, const struct mt_eval_ref *ref,
                            const struct mt_eval_run *rn, size_t k)
{
    size_t c[2][3] = {{0, 0, 0}, {0, 0, 0}};
    const struct mt_eval_result *r = rn[k].result;
    size_t i;
    char id[32];

    for (i = 0; i < r->notes; i++) {
        const struct mt_eval_note *n = mt_eval_ref_note(ref, i);
        const struct mt_eval_pred *p =
            r->per_note[i].pred < 0
                ? NULL
                : mt_eval_sub_pred(rn[k].sub, (size_t)r->per_note[i].pred);
        size_t g = strcmp(n->flag, "1") == 0;
        size_t col = !p ? 2 : strcmp(p->flag, "1") == 0 ? 1 : 0;
        c[g][col]++;
    }
    snprintf(id, sizeof id, "chart-confusion-%zu", k + 1);
    mtx_ev_outs(o, "<figure><figcaption>Error flags: ");
    mtx_ev_html_text(o, rn[k].name, 40);
    mtx_ev_outs(o, "</figcaption>");
    mtx_ev_svg_confusion(o, id, (const size_t(*)[3])c);
    mtx_ev_outs(o, "</figure>\n");
}

static enum mt_status chart_hist(struct mt_ev_out *o,
                                 const struct mt_eval_run *rn, size_t k)
{
    const struct mt_eval_result *r = rn[k].result;
    double *v = mt_malloc((r->notes + 1) * sizeof *v);
    size_t n = 0, i;
    char id[32];

    if (!v)
        return MT_ENOMEM;
    for (i = 0; i < r->notes; i++)
        if (r->per_note[i].kind == MT_EVAL_PAIR_SCORED)
            v[n++] = r->per_note[i].m[MT_EVAL_AGGREGATE];
    snprintf(id, sizeof id, "chart-hist-%zu", k + 1);
    mtx_ev_outf(o,
                "<figure><figcaption>Aggregate correction score of the "
                "%zu scored pairs: ",
                n);
    mtx_ev_html_text(o, rn[k].name, 40);
    mtx_ev_outs(o, "</figcaption>");
    mtx_ev_svg_hist(o, id, v, n);
    mtx_ev_outs(o, "</figure>\n");
    mt_free(v);
    return MT_OK;
}

static enum mt_status chart_diffs(struct mt_ev_out *o,
                                  const struct mt_eval_run *rn, size_t nrun)
{
    char lab[16][160];
    const char *labels[16];
    double mean[16], lo[16], hi[16];
    size_t n = 0, r;
    int which;
    enum mt_status st = MT_OK;

    for (r = 1; r < nrun; r++) {
        for (which = MT_EV_SENT; which <= MT_EVAL_AGGREGATE && n < 16;
             which++) {
            if (which == MT_EVAL_ROUGE2 || which == MT_EVAL_ROUGEL ||
                (which >= 0 && !(rn[0].result->metrics & (1u << which))))
                continue;
            st = mtx_ev_diff_ci(rn[r].result, rn[0].result, which, &mean[n],
                                &lo[n], &hi[n]);
            if (st != MT_OK)
                return st;
            snprintf(lab[n], sizeof lab[n], "%.40s - %.40s: %s", rn[r].name,
                     rn[0].name, label_of(which));
            labels[n] = lab[n];
            n++;
        }
    }
    mtx_ev_outs(o, "<figure><figcaption>Paired differences against the "
                   "first run, 95% bootstrap intervals (axis -1..1)"
                   "</figcaption>");
    mtx_ev_svg_diffs(o, "chart-diffs", labels, mean, lo, hi, n);
    mtx_ev_outs(o, "</figure>\n");
    return st;
}

static enum mt_status charts(struct mt_ev_out *o, const struct mt_eval_ref *ref,
                             const struct mt_eval_run *rn, size_t nrun)
{
    enum mt_status st;
    size_t k;

    mtx_ev_outs(o, "<h2>Charts</h2>\n");
    st = chart_types(o, ref, rn, nrun);
    for (k = 0; st == MT_OK && k < nrun; k++) {
        chart_confusion(o, ref, rn, k);
        st = chart_hist(o, rn, k);
    }
    if (st == MT_OK && nrun > 1)
        st = chart_diffs(o, rn, nrun);
    return st;
}

/* ==== Notes table ==== */

static void cell_text(struct mt_ev_out *o, const char *s)
{
    mtx_ev_outs(o, "<td>");
    mtx_ev_html_text(o, s, 0);
    mtx_ev_outs(o, "</td>");
}

static void note_row(struct mt_ev_out *o, const struct mt_eval_note *n,
                     const struct mt_eval_pred *p,
                     const struct mt_eval_note_score *ns, unsigned metrics,
                     uint16_t *t)
{
    int k;

    mtx_ev_outs(o, "<tr>");
    cell_text(o, n->id);
    cell_text(o, n->error_type);
    mtx_ev_outf(o, "<td>%s / %s</td><td>%s / %s</td>", n->flag,
                p ? p->flag : "-", n->sentence_id, p ? p->sentence_id : "-");
    cell_text(o, n->correction);
    cell_text(o, p ? p->correction : "(missing)");
    mtx_ev_outs(o, "<td>");
    if (p)
        word_diff(o, n->correction, p->correction, t);
    mtx_ev_outs(o, "</td>");
    for (k = 0; k < MT_EVAL_METRIC_COUNT; k++)
        if (metrics & (1u << k))
            mtx_ev_outf(o, "<td class=\"num\">%.4f</td>", ns->m[k]);
    mtx_ev_outs(o, "</tr>\n");
}

static enum mt_status notes_table(struct mt_ev_out *o,
                                  const struct mt_eval_ref *ref,
                                  const struct mt_eval_run *rn, size_t k)
{
    const struct mt_eval_result *r = rn[k].result;
    uint16_t *t = mt_malloc(257 * 257 * sizeof *t);
    size_t i;
    int m;

    if (!t)
        return MT_ENOMEM;
    mtx_ev_outf(o, "<h3>Notes: ");
    mtx_ev_html_text(o, rn[k].name, 80);
    mtx_ev_outf(o,
                "</h3><input class=\"filter\" data-table=\"notes-%zu\" "
                "placeholder=\"filter rows\"><table class=\"notes\" "
                "id=\"notes-%zu\"><thead><tr><th>id</th><th>error type</th>"
                "<th>flag gold / pred</th><th>sentence gold / pred</th>"
                "<th>gold correction</th><th>predicted correction</th>"
                "<th>word diff</th>",
                k + 1, k + 1);
    for (m = 0; m < MT_EVAL_METRIC_COUNT; m++)
        if (r->metrics & (1u << m))
            mtx_ev_outf(o, "<th>%s</th>", label_of(m));
    mtx_ev_outs(o, "</tr></thead><tbody>\n");
    for (i = 0; i < r->notes; i++) {
        long pi = r->per_note[i].pred;
        note_row(o, mt_eval_ref_note(ref, i),
                 pi < 0 ? NULL : mt_eval_sub_pred(rn[k].sub, (size_t)pi),
                 &r->per_note[i], r->metrics, t);
    }
    mtx_ev_outs(o, "</tbody></table>\n");
    mt_free(t);
    return MT_OK;
}

/* ==== Document and atomic write ==== */

static enum mt_status build(struct mt_ev_out *o, const struct mt_eval_ref *ref,
                            const struct mt_eval_run *rn, size_t nrun)
{
    enum mt_status st;
    size_t k;

    mtx_ev_outf(o,
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
                "charset=\"utf-8\"><title>medtrust score report</title>"
                "<style>%s</style></head><body>\n<h1>MEDIQA-CORR score "
                "report</h1><p>%zu reference notes, %zu run(s).</p>\n",
                css, mt_eval_ref_count(ref), nrun);
    headline_table(o, rn, nrun);
    metric_note(o, rn[0].result);
    st = charts(o, ref, rn, nrun);
    mtx_ev_outs(o, "<h2>Every note</h2><p class=\"note\">Click a header to "
                   "sort; type to filter. Word diff: <del>gold only</del> "
                   "<ins>predicted only</ins>.</p>\n");
    for (k = 0; st == MT_OK && k < nrun; k++)
        st = notes_table(o, ref, rn, k);
    mtx_ev_outf(o, "<script>%s</script>\n</body></html>\n", js);
    return st != MT_OK ? st : o->st;
}

enum mt_status mt_eval_report_write(const char *path,
                                    const struct mt_eval_ref *ref,
                                    const struct mt_eval_run *runs, size_t nrun,
                                    struct mt_error *err)
{
    struct mt_ev_out o = {MT_BUF_INIT(MT_BUF_DEFAULT_MAX), MT_OK};
    enum mt_status st;

    if (nrun == 0 || nrun > 16)
        return mt_fail(err, MT_EINVAL, "report: 1 to 16 runs, not %zu", nrun);
    st = build(&o, ref, runs, nrun);
    if (st == MT_OK)
        st = mtx_file_write_atomic(path, o.b.data, o.b.len, err);
    else
        mt_fail(err, st, "report: %s", mt_status_str(st));
    mtx_buf_free(&o.b);
    return st;
}
