/* Private interface of the HTML report: a sticky-error output buffer, HTML
 * escaping and the SVG chart writers. */
#ifndef MT_EVAL_REPORT_INT_H
#define MT_EVAL_REPORT_INT_H

#include <stddef.h>

#include "core/buf.h"
#include "eval/eval_int.h"

/* Output buffer whose first failure sticks, so a report is never written
 * with a silently missing piece. */
struct mt_ev_out {
    struct mt_buf b;
    enum mt_status st;
};

void mtx_ev_outf(struct mt_ev_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mtx_ev_outs(struct mt_ev_out *o, const char *s);
/* Appends s HTML-escaped, cut to 'max' characters (0: no limit) with an
 * ellipsis. */
void mtx_ev_html_text(struct mt_ev_out *o, const char *s, size_t max);

const char *mtx_ev_color(size_t i);
void mtx_ev_svg_bars(struct mt_ev_out *b, const char *id,
                     const char *const *labels, size_t ngroup, const double *v,
                     size_t nrun);
void mtx_ev_svg_confusion(struct mt_ev_out *b, const char *id,
                          const size_t counts[2][3]);
void mtx_ev_svg_hist(struct mt_ev_out *b, const char *id, const double *v,
                     size_t n);
void mtx_ev_svg_diffs(struct mt_ev_out *b, const char *id,
                      const char *const *labels, const double *mean,
                      const double *lo, const double *hi, size_t n);

#endif
