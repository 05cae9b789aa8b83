/* Inline SVG charts for the HTML report: grouped bars, a confusion matrix,
 * a histogram and intervals of paired differences. Plain SVG 1.1, no
 * script, sized by viewBox so they scale with the page. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval/report_int.h"

static const char *const palette[] = {"#3b6fb6", "#e07b39", "#4a9d5b",
                                      "#b04a8f", "#7a6a3a", "#2aa0a8"};

const char *mtx_ev_color(size_t i)
{
    return palette[i % (sizeof palette / sizeof palette[0])];
}

/* Vertical bars: ngroup groups of nrun bars, v[run * ngroup + group] in
 * [0,1]; NAN bars are skipped. */
void mtx_ev_svg_bars(struct mt_ev_out *b, const char *id,
                     const char *const *labels, size_t ngroup, const double *v,
                     size_t nrun)
{
    double gw = 560.0 / (double)(ngroup ? ngroup : 1);
    double bw = (gw - 10.0) / (double)(nrun ? nrun : 1);
    size_t g, r;

    mtx_ev_outf(b,
                "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 640 300\" "
                "width=\"640\" height=\"300\" role=\"img\">",
                id);
    mtx_ev_outf(b, "<line x1=\"60\" y1=\"250\" x2=\"630\" y2=\"250\" "
                   "stroke=\"#333\"/><text x=\"55\" y=\"254\" "
                   "text-anchor=\"end\">0</text><text x=\"55\" y=\"34\" "
                   "text-anchor=\"end\">1</text>");
    for (g = 0; g < ngroup; g++) {
        double x0 = 65.0 + (double)g * gw;
        for (r = 0; r < nrun; r++) {
            double val = v[r * ngroup + g];
            if (isnan(val))
                continue;
            mtx_ev_outf(b,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                        "height=\"%.1f\" fill=\"%s\"><title>%.3f</title>"
                        "</rect>",
                        x0 + (double)r * bw, 250.0 - 220.0 * val, bw - 1.0,
                        220.0 * val + 0.5, mtx_ev_color(r), val);
        }
        mtx_ev_outs(b, "<text class=\"lab\" x=\"");
        mtx_ev_outf(b, "%.1f\" y=\"268\" text-anchor=\"middle\">",
                    x0 + gw / 2.0 - 5.0);
        mtx_ev_html_text(b, labels[g], 18);
        mtx_ev_outs(b, "</text>");
    }
    mtx_ev_outs(b, "</svg>\n");
}

/* 2 x 3 matrix: rows gold flag 0/1, columns predicted 0/1/missing. */
void mtx_ev_svg_confusion(struct mt_ev_out *b, const char *id,
                          const size_t counts[2][3])
{
    static const char *const cols[] = {"pred 0", "pred 1", "missing"};
    size_t max = 1, i, j;

    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            max = counts[i][j] > max ? counts[i][j] : max;
    mtx_ev_outf(b,
                "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 340 200\" "
                "width=\"340\" height=\"200\" role=\"img\">",
                id);
    for (j = 0; j < 3; j++)
        mtx_ev_outf(b,
                    "<text x=\"%zu\" y=\"20\" text-anchor=\"middle\">"
                    "%s</text>",
                    120 + j * 80, cols[j]);
    for (i = 0; i < 2; i++) {
        mtx_ev_outf(b,
                    "<text x=\"70\" y=\"%zu\" text-anchor=\"end\">gold "
                    "%zu</text>",
                    75 + i * 80, i);
        for (j = 0; j < 3; j++) {
            double a = 0.1 + 0.9 * (double)counts[i][j] / (double)max;
            mtx_ev_outf(b,
                        "<rect x=\"%zu\" y=\"%zu\" width=\"78\" "
                        "height=\"78\" fill=\"%s\" fill-opacity=\"%.2f\"/>"
                        "<text x=\"%zu\" y=\"%zu\" text-anchor=\"middle\">"
                        "%zu</text>",
                        81 + j * 80, 30 + i * 80,
                        i == j ? "#4a9d5b" : "#c0392b", a, 120 + j * 80,
                        75 + i * 80, counts[i][j]);
        }
    }
    mtx_ev_outs(b, "</svg>\n");
}

/* Histogram of v[0..n) in [0,1] with 10 bins. */
void mtx_ev_svg_hist(struct mt_ev_out *b, const char *id, const double *v,
                     size_t n)
{
    size_t bins[10] = {0};
    size_t max = 1, i;

    for (i = 0; i < n; i++) {
        size_t k = (size_t)(mtx_ev_clip01(v[i]) * 10.0);
        bins[k > 9 ? 9 : k]++;
    }
    for (i = 0; i < 10; i++)
        max = bins[i] > max ? bins[i] : max;
    mtx_ev_outf(b,
                "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 460 260\" "
                "width=\"460\" height=\"260\" role=\"img\"><line x1=\"30\" "
                "y1=\"220\" x2=\"440\" y2=\"220\" stroke=\"#333\"/>",
                id);
    for (i = 0; i < 10; i++) {
        double h = 190.0 * (double)bins[i] / (double)max;
        mtx_ev_outf(b,
                    "<rect x=\"%zu\" y=\"%.1f\" width=\"38\" "
                    "height=\"%.1f\" fill=\"#3b6fb6\"><title>%.1f-%.1f: "
                    "%zu</title></rect><text x=\"%zu\" y=\"238\" "
                    "text-anchor=\"middle\">%.1f</text>",
                    32 + i * 40, 220.0 - h, h + 0.5, (double)i / 10.0,
                    (double)(i + 1) / 10.0, bins[i], 32 + i * 40,
                    (double)i / 10.0);
    }
    mtx_ev_outs(b, "</svg>\n");
}

/* Horizontal intervals of paired differences around a zero line, scaled
 * to [-1, 1]. */
void mtx_ev_svg_diffs(struct mt_ev_out *b, const char *id,
                      const char *const *labels, const double *mean,
                      const double *lo, const double *hi, size_t n)
{
    size_t i;

    mtx_ev_outf(b,
                "<svg id=\"%s\" class=\"chart\" viewBox=\"0 0 640 %zu\" "
                "width=\"640\" height=\"%zu\" role=\"img\"><line x1=\"430\" "
                "y1=\"10\" x2=\"430\" y2=\"%zu\" stroke=\"#999\"/>",
                id, 30 + n * 28, 30 + n * 28, 20 + n * 28);
    for (i = 0; i < n; i++) {
        double y = 30.0 + 28.0 * (double)i;
        mtx_ev_outs(b, "<text x=\"5\" y=\"");
        mtx_ev_outf(b, "%.0f\">", y + 4.0);
        mtx_ev_html_text(b, labels[i], 40);
        mtx_ev_outs(b, "</text>");
        if (isnan(mean[i]))
            continue;
        mtx_ev_outf(b,
                    "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
                    "y2=\"%.0f\" stroke=\"#333\" stroke-width=\"2\"/>"
                    "<circle cx=\"%.1f\" cy=\"%.0f\" r=\"5\" fill=\"%s\">"
                    "<title>%+.4f [%+.4f, %+.4f]</title></circle>",
                    430.0 + 200.0 * lo[i], y, 430.0 + 200.0 * hi[i], y,
                    430.0 + 200.0 * mean[i], y,
                    mean[i] >= 0 ? "#4a9d5b" : "#c0392b", mean[i], lo[i],
                    hi[i]);
    }
    mtx_ev_outs(b, "</svg>\n");
}
