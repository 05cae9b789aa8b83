/* The sweep's report: one self-contained HTML page (inline CSS and SVG, no
 * network) drawn from summary.json, with a figure for each of the IryoNLP
 * paper's figures that the grid allows and the tables behind them. The
 * summary itself is embedded as JSON, so every number drawn can be read
 * back. Uses the HTML/SVG writers of the score report (src/eval). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "batch/journal.h"
#include "batch/sweep.h"
#include "core/file.h"
#include "eval/report_int.h"
#include "medtrust/core.h"

/* The metrics drawn against a swept value, as score --json names them. */
static const char *const metric_keys[] = {"aggregate", "error_flag_accuracy",
                                          "error_sentence_accuracy", "kpcs"};
#define NMETRIC 4

/* A run's value of metric 'key' (NAN when the run has none). */
static double run_metric(const json_t *run, const char *key)
{
    const json_t *sc = json_object_get(run, "score");
    const json_t *v = json_object_get(sc, key);

    if (!v)
        v = json_object_get(json_object_get(sc, "composite"), key);
    return json_is_number(v) ? json_number_value(v) : (double)NAN;
}

static double run_stat(const json_t *run, const char *key)
{
    const json_t *v = json_object_get(json_object_get(run, "stats"), key);

    return json_is_number(v) ? json_number_value(v) : (double)NAN;
}

typedef double (*run_value_fn)(const json_t *run, const char *key);

/* Mean, min and max of f(run, key) over the runs of every cell whose
 * parameter 'axis' is 'val' (val NULL: every cell). */
struct agg {
    double mean, lo, hi;
    size_t n;
};

static struct agg aggregate_runs(const json_t *cells, const char *axis,
                                 const char *val, run_value_fn f,
                                 const char *key)
{
    struct agg a = {(double)NAN, (double)INFINITY, -(double)INFINITY, 0};
    double sum = 0;
    size_t c, r;

    for (c = 0; c < json_array_size(cells); c++) {
        const json_t *cell = json_array_get(cells, c);
        const char *v = json_string_value(
            json_object_get(json_object_get(cell, "params"), axis ? axis : ""));
        const json_t *runs = json_object_get(cell, "runs");

        if (axis && (!v || strcmp(v, val) != 0))
            continue;
        for (r = 0; r < json_array_size(runs); r++) {
            double x = f(json_array_get(runs, r), key);

            if (isnan(x))
                continue;
            sum += x;
            a.lo = x < a.lo ? x : a.lo;
            a.hi = x > a.hi ? x : a.hi;
            a.n++;
        }
    }
    if (a.n)
        a.mean = sum / (double)a.n;
    return a;
}

/* ==== Charts ==== */

struct series {
    const char *label;
    run_value_fn f;
    const char *key;
};

static void chart_begin(struct mt_ev_out *o, const char *id, double ymax,
                        const char *ylabel)
{
    mtx_ev_outf(o,
                "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 640 300\" "
                "width=\"640\" height=\"300\" role=\"img\" aria-label=\"",
                id);
    mtx_ev_html_text(o, ylabel, 0);
    mtx_ev_outf(o,
                "\"><line x1=\"60\" y1=\"250\" x2=\"630\" y2=\"250\" "
                "stroke=\"#333\"/><line x1=\"60\" y1=\"30\" x2=\"60\" "
                "y2=\"250\" stroke=\"#333\"/><text x=\"55\" y=\"254\" "
                "text-anchor=\"end\">0</text><text x=\"55\" y=\"34\" "
                "text-anchor=\"end\">%.3g</text>",
                ymax);
}

/* One line per series against the axis' values (evenly spaced, labelled),
 * each point the mean over runs with a min-max whisker. */
static void line_chart(struct mt_ev_out *o, const char *id, const json_t *cells,
                       const json_t *axis, const struct series *s, size_t ns,
                       const char *ylabel)
{
    const json_t *vals = json_object_get(axis, "values");
    const char *key = json_string_value(json_object_get(axis, "key"));
    size_t nv = json_array_size(vals), i, k;
    double ymax = 0, dx = 560.0 / (double)(nv > 1 ? nv - 1 : 1);

    for (k = 0; k < ns; k++)
        for (i = 0; i < nv; i++) {
            struct agg a = aggregate_runs(
                cells, key, json_string_value(json_array_get(vals, i)), s[k].f,
                s[k].key);
            ymax = a.n && a.hi > ymax ? a.hi : ymax;
        }
    ymax = ymax > 0 ? ymax * 1.1 : 1;
    chart_begin(o, id, ymax, ylabel);
    for (k = 0; k < ns; k++) {
        mtx_ev_outf(o, "<g class=\"series\" stroke=\"%s\" fill=\"%s\">",
                    mtx_ev_color(k), mtx_ev_color(k));
        for (i = 0; i < nv; i++) {
            struct agg a = aggregate_runs(
                cells, key, json_string_value(json_array_get(vals, i)), s[k].f,
                s[k].key);
            double x = 65.0 + (double)i * dx;

            if (!a.n)
                continue;
            mtx_ev_outf(
                o,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\">"
                "<title>%s: %.4f (%.4f..%.4f, %zu runs)</title>"
                "</circle>",
                x, 250.0 - 220.0 * a.lo / ymax, x, 250.0 - 220.0 * a.hi / ymax,
                x, 250.0 - 220.0 * a.mean / ymax, s[k].label, a.mean, a.lo,
                a.hi, a.n);
        }
        mtx_ev_outs(o, "</g>");
    }
    for (i = 0; i < nv; i++) {
        mtx_ev_outf(o,
                    "<text class=\"lab\" x=\"%.1f\" y=\"268\" "
                    "text-anchor=\"middle\">",
                    65.0 + (double)i * dx);
        mtx_ev_html_text(o, json_string_value(json_array_get(vals, i)), 14);
        mtx_ev_outs(o, "</text>");
    }
    mtx_ev_outs(o, "</svg><p class=\"legend\">");
    for (k = 0; k < ns; k++) {
        mtx_ev_outf(o, "<span style=\"color:%s\">&#9632; ", mtx_ev_color(k));
        mtx_ev_html_text(o, s[k].label, 0);
        mtx_ev_outs(o, "</span> ");
    }
    mtx_ev_outs(o, "</p>\n");
}

/* ==== Figures ==== */

static void fig_metrics(struct mt_ev_out *o, const json_t *sum,
                        const json_t *axis, size_t i)
{
    static const char *const labels[NMETRIC] = {
        "aggregate score", "error flag accuracy", "error sentence accuracy",
        "KPCS"};
    struct series s[NMETRIC];
    size_t k, n = 0;
    char id[48];

    for (k = 0; k < NMETRIC; k++) {
        struct agg a = aggregate_runs(json_object_get(sum, "cells"), NULL, NULL,
                                      run_metric, metric_keys[k]);
        if (a.n)
            s[n++] = (struct series){labels[k], run_metric, metric_keys[k]};
    }
    snprintf(id, sizeof id, "fig-metric-%zu", i);
    mtx_ev_outs(o, "<figure><figcaption>Scores against ");
    mtx_ev_html_text(o, json_string_value(json_object_get(axis, "key")), 0);
    mtx_ev_outs(o, " (IryoNLP Fig. 2, 5 and 6): mean over runs and the other "
                   "grid keys, whiskers min to max</figcaption>");
    line_chart(o, id, json_object_get(sum, "cells"), axis, s, n, "score");
    mtx_ev_outs(o, "</figure>\n");
}

static void fig_latency(struct mt_ev_out *o, const json_t *sum,
                        const json_t *axis, size_t i)
{
    const struct series lat[] = {{"ms per MedReAct step", run_stat, "step_ms"}};
    const struct series turns[] = {
        {"ReAct turns per note", run_stat, "react_turns"},
        {"ReFlex turns per note", run_stat, "reflex_turns"}};
    char id[48];

    snprintf(id, sizeof id, "fig-latency-%zu", i);
    mtx_ev_outs(o, "<figure><figcaption>Latency of a MedReAct step (model "
                   "call and search) against ");
    mtx_ev_html_text(o, json_string_value(json_object_get(axis, "key")), 0);
    mtx_ev_outs(o, " (Fig. 3)</figcaption>");
    line_chart(o, id, json_object_get(sum, "cells"), axis, lat, 1, "ms");
    snprintf(id, sizeof id, "fig-turns-%zu", i);
    mtx_ev_outs(o, "</figure>\n<figure><figcaption>ReAct and ReFlex turns "
                   "against ");
    mtx_ev_html_text(o, json_string_value(json_object_get(axis, "key")), 0);
    mtx_ev_outs(o, " (Fig. 4)</figcaption>");
    line_chart(o, id, json_object_get(sum, "cells"), axis, turns, 2, "turns");
    mtx_ev_outs(o, "</figure>\n");
}

static const json_t *axis_by_option(const json_t *sum, const char *option)
{
    const json_t *axes = json_object_get(sum, "axes");
    size_t i;

    for (i = 0; i < json_array_size(axes); i++) {
        const char *o = json_string_value(
            json_object_get(json_array_get(axes, i), "option"));

        if (o && strcmp(o, option) == 0)
            return json_array_get(axes, i);
    }
    return NULL;
}

/* Mean aggregate over the runs of cells with params a = va and b = vb. */
static double mean2(const json_t *cells, const char *a, const char *va,
                    const char *b, const char *vb)
{
    double sum = 0;
    size_t n = 0, c, r;

    for (c = 0; c < json_array_size(cells); c++) {
        const json_t *cell = json_array_get(cells, c);
        const json_t *p = json_object_get(cell, "params");
        const char *x = json_string_value(json_object_get(p, a));
        const char *y = json_string_value(json_object_get(p, b));
        const json_t *runs = json_object_get(cell, "runs");

        if (!x || !y || strcmp(x, va) != 0 || strcmp(y, vb) != 0)
            continue;
        for (r = 0; r < json_array_size(runs); r++) {
            double v = run_metric(json_array_get(runs, r), "aggregate");

            if (!isnan(v)) {
                sum += v;
                n++;
            }
        }
    }
    return n ? sum / (double)n : (double)NAN;
}

/* Fig. 8: the aggregate over the MedEval average and minimum thresholds. */
static void fig_heat(struct mt_ev_out *o, const json_t *sum)
{
    const json_t *ax = axis_by_option(sum, "accept-mean");
    const json_t *ay = axis_by_option(sum, "accept-min");
    const json_t *vx = json_object_get(ax, "values");
    const json_t *vy = json_object_get(ay, "values");
    size_t nx = json_array_size(vx), ny = json_array_size(vy), i, j;
    double w, h;

    if (!ax || !ay)
        return;
    w = 540.0 / (double)nx;
    h = 220.0 / (double)ny;
    mtx_ev_outs(o, "<figure><figcaption>Aggregate score over the MedEval "
                   "average (x) and minimum (y) thresholds (Fig. 8)"
                   "</figcaption><svg id=\"fig-heat\" class=\"chart\" "
                   "viewBox=\"0 0 640 300\" width=\"640\" height=\"300\" "
                   "role=\"img\" aria-label=\"heat map\">");
    for (i = 0; i < nx; i++)
        for (j = 0; j < ny; j++) {
            const char *a = json_string_value(json_array_get(vx, i));
            const char *b = json_string_value(json_array_get(vy, j));
            double v = mean2(json_object_get(sum, "cells"),
                             json_string_value(json_object_get(ax, "key")), a,
                             json_string_value(json_object_get(ay, "key")), b);
            double t = isnan(v) ? 0 : v;

            mtx_ev_outf(
                o,
                "<rect class=\"heat\" x=\"%.1f\" y=\"%.1f\" "
                "width=\"%.1f\" height=\"%.1f\" fill=\"rgb(%d,%d,255)\">"
                "<title>avg %s, min %s: %.4f</title></rect>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
                "%.3f</text>",
                90.0 + (double)i * w, 30.0 + (double)j * h, w - 2, h - 2,
                (int)(255 * (1 - t)), (int)(255 * (1 - t)), a, b, v,
                90.0 + ((double)i + 0.5) * w, 30.0 + ((double)j + 0.5) * h, v);
        }
    for (i = 0; i < nx; i++) {
        mtx_ev_outf(o, "<text x=\"%.1f\" y=\"268\" text-anchor=\"middle\">",
                    90.0 + ((double)i + 0.5) * w);
        mtx_ev_html_text(o, json_string_value(json_array_get(vx, i)), 8);
        mtx_ev_outs(o, "</text>");
    }
    for (j = 0; j < ny; j++) {
        mtx_ev_outf(o, "<text x=\"80\" y=\"%.1f\" text-anchor=\"end\">",
                    30.0 + ((double)j + 0.5) * h);
        mtx_ev_html_text(o, json_string_value(json_array_get(vy, j)), 8);
        mtx_ev_outs(o, "</text>");
    }
    mtx_ev_outs(o, "</svg></figure>\n");
}

/* Shares of the passages MedReAct was shown per source, over every run. */
static void used_sources(const json_t *cells, json_t *used)
{
    size_t c, r;

    for (c = 0; c < json_array_size(cells); c++) {
        const json_t *runs = json_object_get(json_array_get(cells, c), "runs");

        for (r = 0; r < json_array_size(runs); r++) {
            json_t *src = json_object_get(
                json_object_get(json_array_get(runs, r), "stats"), "sources");
            const char *k;
            json_t *v;

            json_object_foreach(src, k, v)
            {
                json_int_t n = json_integer_value(json_object_get(used, k));

                json_object_set_new(used, k,
                                    json_integer(n + json_integer_value(v)));
            }
        }
    }
}

static double total(json_t *o)
{
    const char *k;
    json_t *v;
    double t = 0;

    json_object_foreach(o, k, v)
    {
        t += (double)json_integer_value(v);
    }
    return t;
}

/* Fig. 7: the corpus' sources against the sources of the chunks used. */
static void fig_sources(struct mt_ev_out *o, const json_t *sum)
{
    json_t *corpus = json_object_get(sum, "corpus");
    json_t *used = json_object(), *names = json_object();
    const char *labels[64], *k;
    double v[128], tc, tu;
    size_t n = 0, i;
    json_t *x;

    used_sources(json_object_get(sum, "cells"), used);
    json_object_update(names, corpus);
    json_object_update(names, used);
    tc = total(corpus);
    tu = total(used);
    json_object_foreach(names, k, x)
    {
        if (n < 64)
            labels[n++] = k;
    }
    for (i = 0; i < n; i++) {
        v[i] = tc > 0 ? (double)json_integer_value(
                            json_object_get(corpus, labels[i])) /
                            tc
                      : (double)NAN;
        v[n + i] =
            tu > 0
                ? (double)json_integer_value(json_object_get(used, labels[i])) /
                      tu
                : (double)NAN;
    }
    if (n) {
        mtx_ev_outs(o, "<figure><figcaption>Share of chunks per source: the "
                       "corpus (first bar) against the passages MedReAct was "
                       "shown (second bar) (Fig. 7)</figcaption>");
        mtx_ev_svg_bars(o, "fig-sources", labels, n, v, 2);
        mtx_ev_outs(o, "</figure>\n");
    }
    json_decref(names);
    json_decref(used);
}

/* ==== Tables ==== */

static void cell_params(struct mt_ev_out *o, const json_t *cell)
{
    const char *k;
    json_t *v;
    int first = 1;

    json_object_foreach(json_object_get(cell, "params"), k, v)
    {
        if (!first)
            mtx_ev_outs(o, ", ");
        first = 0;
        mtx_ev_html_text(o, k, 0);
        mtx_ev_outs(o, "=");
        mtx_ev_html_text(o, json_string_value(v), 40);
    }
}

/* "0.6200 [0.48, 0.76]": the value and its 95% bootstrap interval. */
static void metric_cell(struct mt_ev_out *o, const json_t *run, const char *key)
{
    double v = run_metric(run, key);
    const json_t *ci = json_object_get(
        json_object_get(json_object_get(run, "score"), "ci"), key);

    if (isnan(v)) {
        mtx_ev_outs(o, "<td>-</td>");
        return;
    }
    mtx_ev_outf(o, "<td class=\"num\" data-key=\"%s\">%.4f", key, v);
    if (json_array_size(ci) == 2)
        mtx_ev_outf(o, " <small>[%.3f, %.3f]</small>",
                    json_number_value(json_array_get(ci, 0)),
                    json_number_value(json_array_get(ci, 1)));
    mtx_ev_outs(o, "</td>");
}

static double tokens(const json_t *run, int *estimated)
{
    json_t *by =
        json_object_get(json_object_get(run, "stats"), "tokens_by_role");
    const char *k;
    json_t *v;
    double t = 0;

    json_object_foreach(by, k, v)
    {
        t += (double)(json_integer_value(json_object_get(v, "prompt")) +
                      json_integer_value(json_object_get(v, "completion")));
        *estimated |= json_is_true(json_object_get(v, "estimated"));
    }
    return t;
}

static void run_row(struct mt_ev_out *o, const json_t *cell, const json_t *run)
{
    const json_t *rp = json_object_get(run, "replay");
    int est = 0;
    size_t k;
    double t;

    mtx_ev_outf(o, "<tr><td>%lld</td><td>",
                json_integer_value(json_object_get(cell, "cell")));
    cell_params(o, cell);
    mtx_ev_outf(o, "</td><td>%lld</td><td>",
                json_integer_value(json_object_get(run, "seed")));
    mtx_ev_html_text(o, json_string_value(json_object_get(run, "status")), 0);
    if (json_is_object(rp))
        mtx_ev_outf(o, "<br><small>%lld replayed, %lld rerun</small>",
                    json_integer_value(json_object_get(rp, "replayed")),
                    json_integer_value(json_object_get(rp, "rerun")));
    mtx_ev_outs(o, "</td>");
    for (k = 0; k < NMETRIC; k++)
        metric_cell(o, run, metric_keys[k]);
    metric_cell(o, run, "rouge1");
    t = tokens(run, &est);
    mtx_ev_outf(o,
                "<td class=\"num\">%.2f</td><td class=\"num\">%.2f</td>"
                "<td class=\"num\">%.0f</td><td class=\"num\">%.0f</td>"
                "<td class=\"num\">%.0f%s</td></tr>\n",
                run_stat(run, "react_turns"), run_stat(run, "reflex_turns"),
                run_stat(run, "step_ms"), run_stat(run, "calls"), t,
                est ? " (estimated)" : "");
}

static void table_runs(struct mt_ev_out *o, const json_t *cells)
{
    size_t c, r;

    mtx_ev_outs(o, "<h2>Every run</h2><div class=\"scroll\"><table "
                   "id=\"runs\"><thead><tr><th>cell</th><th>settings</th>"
                   "<th>seed</th><th>status</th><th>aggregate</th>"
                   "<th>flag acc.</th><th>sentence acc.</th><th>KPCS</th>"
                   "<th>ROUGE-1</th><th>ReAct turns</th><th>ReFlex turns</th>"
                   "<th>ms/step</th><th>model calls</th><th>tokens</th></tr>"
                   "</thead><tbody>\n");
    for (c = 0; c < json_array_size(cells); c++) {
        const json_t *cell = json_array_get(cells, c);
        const json_t *runs = json_object_get(cell, "runs");

        for (r = 0; r < json_array_size(runs); r++)
            run_row(o, cell, json_array_get(runs, r));
    }
    mtx_ev_outs(o, "</tbody></table></div>\n");
}

/* Mean over a cell's runs of a breakdown group's value. */
static double group_mean(const json_t *cell, const char *field,
                         const char *label, const char *key)
{
    const json_t *runs = json_object_get(cell, "runs");
    double s = 0;
    size_t n = 0, r;

    for (r = 0; r < json_array_size(runs); r++) {
        const json_t *g = json_object_get(
            json_object_get(
                json_object_get(
                    json_object_get(json_array_get(runs, r), "score"),
                    "breakdown"),
                field),
            label);
        const json_t *v = json_object_get(g, key);

        if (!v)
            v = json_object_get(json_object_get(g, "composite"), key);
        if (json_is_number(v)) {
            s += json_number_value(v);
            n++;
        }
    }
    return n ? s / (double)n : (double)NAN;
}

/* One table per breakdown of score --json (error type, language,
 * difficulty, ...): rows its groups, columns the cells. */
static void table_breakdowns(struct mt_ev_out *o, const json_t *cells)
{
    json_t *bd = json_object_get(
        json_object_get(
            json_array_get(json_object_get(json_array_get(cells, 0), "runs"),
                           0),
            "score"),
        "breakdown");
    const char *field, *label;
    json_t *groups, *g;
    size_t c;

    json_object_foreach(bd, field, groups)
    {
        mtx_ev_outs(o, "<h2>By ");
        mtx_ev_html_text(o, field, 0);
        mtx_ev_outs(o, ": aggregate (error flag accuracy), mean over runs</h2>"
                       "<div class=\"scroll\"><table class=\"breakdown\">"
                       "<thead><tr><th>group</th>");
        for (c = 0; c < json_array_size(cells); c++)
            mtx_ev_outf(o, "<th>cell %zu</th>", c + 1);
        mtx_ev_outs(o, "</tr></thead><tbody>");
        json_object_foreach(groups, label, g)
        {
            mtx_ev_outs(o, "<tr><td>");
            mtx_ev_html_text(o, label, 40);
            mtx_ev_outs(o, "</td>");
            for (c = 0; c < json_array_size(cells); c++)
                mtx_ev_outf(o, "<td class=\"num\">%.4f (%.4f)</td>",
                            group_mean(json_array_get(cells, c), field, label,
                                       "aggregate"),
                            group_mean(json_array_get(cells, c), field, label,
                                       "error_flag_accuracy"));
            mtx_ev_outs(o, "</tr>");
        }
        mtx_ev_outs(o, "</tbody></table></div>\n");
    }
}

/* ==== The page ==== */

static const char css[] =
    "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;"
    "padding:1rem;color:#111}h1{font-size:1.5rem}h2{font-size:1.15rem}"
    "figure{margin:1rem 0}svg.chart{max-width:100%;height:auto;background:"
    "#fafafa}.series line{stroke-width:2}.lab{font-size:12px}"
    ".scroll{overflow-x:auto}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}"
    ".num{text-align:right;font-variant-numeric:tabular-nums}"
    "small{color:#555}";

static void page(struct mt_ev_out *o, const json_t *sum)
{
    const json_t *axes = json_object_get(sum, "axes");
    char *data = json_dumps(sum, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t i;

    mtx_ev_outf(o,
                "<!doctype html><html lang=\"en\"><head><meta "
                "charset=\"utf-8\"><meta name=\"viewport\" "
                "content=\"width=device-width,initial-scale=1\"><title>"
                "medtrust sweep</title><style>%s</style></head><body><main>"
                "<h1>medtrust sweep: %zu cells x %lld runs</h1>\n",
                css, json_array_size(json_object_get(sum, "cells")),
                json_integer_value(json_object_get(sum, "runs")));
    for (i = 0; i < json_array_size(axes); i++) {
        const json_t *ax = json_array_get(axes, i);

        if (json_array_size(json_object_get(ax, "values")) < 2)
            continue;
        fig_metrics(o, sum, ax, i);
        fig_latency(o, sum, ax, i);
    }
    fig_heat(o, sum);
    fig_sources(o, sum);
    table_runs(o, json_object_get(sum, "cells"));
    table_breakdowns(o, json_object_get(sum, "cells"));
    /* The data drawn above, for scripts (and the tests) to read back;
     * "</" cannot occur in it unescaped: jansson writes "/" as is, so it
     * is escaped here. */
    mtx_ev_outs(o, "<script type=\"application/json\" id=\"sweep-data\">");
    for (i = 0; data && data[i]; i++)
        if (data[i] == '<')
            mtx_ev_outs(o, "\\u003c");
        else
            mtx_ev_outf(o, "%c", data[i]);
    mtx_ev_outs(o, "</script></main></body></html>\n");
    free(data);
    if (!data && o->st == MT_OK)
        o->st = MT_ENOMEM;
}

enum mt_status mtx_sweep_report_write(const char *path, const json_t *summary,
                                      struct mt_error *err)
{
    struct mt_ev_out o = {MT_BUF_INIT(MT_BUF_DEFAULT_MAX), MT_OK};
    enum mt_status st;

    page(&o, summary);
    st = o.st == MT_OK ? mtx_file_write_atomic(path, o.b.data, o.b.len, err)
                       : o.st;
    mtx_buf_free(&o.b);
    return st;
}
