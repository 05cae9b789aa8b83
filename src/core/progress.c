/* Progress reporter. This module prints to its stream on purpose: it is the
 * CLI-facing exception to "the library never prints". Output is throttled
 * so that reporting costs nothing next to the work it reports. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/progress.h"
#include "medtrust/core.h"

#define BAR_WIDTH 30
#define LINE_MAX_LEN 256

struct mt_progress {
    struct mt_progress_params params;
    char *label;
    int tty;
    pthread_mutex_t mu;
    uint64_t done;
    double t0;
    double last_draw;
    int drawn;          /* printed at least once */
    uint64_t last_step; /* plain mode: last 10 % step printed */
    int finished;
};

struct mt_progress_params mtx_progress_default_params(void)
{
    struct mt_progress_params p;

    memset(&p, 0, sizeof p);
    p.force_tty = -1;
    p.min_interval_s = 0.1;
    p.plain_interval_s = 5.0;
    return p;
}

enum mt_status mtx_progress_new(const struct mt_progress_params *params,
                                struct mt_progress **out)
{
    struct mt_progress *p = mt_calloc(1, sizeof *p);

    if (!p)
        return MT_ENOMEM;
    p->params = params ? *params : mtx_progress_default_params();
    if (!p->params.stream)
        p->params.stream = stderr;
    p->label = mt_strdup(p->params.label ? p->params.label : "progress");
    if (!p->label) {
        mt_free(p);
        return MT_ENOMEM;
    }
    p->params.label = p->label;
    if (p->params.force_tty < 0)
        p->tty = isatty(fileno(p->params.stream));
    else
        p->tty = p->params.force_tty != 0;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        mt_free(p->label);
        mt_free(p);
        return MT_ENOMEM;
    }
    p->t0 = mtx_clock_now();
    p->last_draw = p->t0; /* plain lines: first after an interval */
    *out = p;
    return MT_OK;
}

/* ==== Formatting ==== */

/* Writes seconds as "M:SS" or "H:MM:SS". */
static void format_duration(char *buf, size_t n, double secs)
{
    uint64_t s = secs > 0 ? (uint64_t)(secs + 0.5) : 0;

    if (s >= 3600)
        snprintf(buf, n, "%" PRIu64 ":%02u:%02u", s / 3600,
                 (unsigned)(s / 60 % 60), (unsigned)(s % 60));
    else
        snprintf(buf, n, "%u:%02u", (unsigned)(s / 60), (unsigned)(s % 60));
}

static size_t append(char *buf, size_t n, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* snprintf at buf+len, saturating: returns the new length (< n). */
static size_t append(char *buf, size_t n, size_t len, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (len + 1 >= n)
        return len;
    va_start(ap, fmt);
    w = vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
    if (w < 0)
        return len;
    return (size_t)w >= n - len ? n - 1 : len + (size_t)w;
}

static size_t format_bar(char *buf, size_t n, size_t len, double frac)
{
    char bar[BAR_WIDTH + 1];
    size_t fill = (size_t)(frac * BAR_WIDTH);

    memset(bar, '#', fill);
    memset(bar + fill, '-', BAR_WIDTH - fill);
    bar[BAR_WIDTH] = '\0';
    return append(buf, n, len, " [%s]", bar);
}

/* Formats label, bar (terminal only), count/total, percent, rate and ETA. */
static void format_status(const struct mt_progress *p, double t, char *buf,
                          size_t n)
{
    uint64_t total = p->params.total;
    double el = t - p->t0;
    double rate = el > 0 ? (double)p->done / el : 0.0;
    double frac = total ? (double)p->done / (double)total : 0.0;
    char eta[32];
    size_t len = append(buf, n, 0, "%s%s", p->label, p->tty ? "" : ":");

    if (frac > 1.0)
        frac = 1.0;
    if (total && p->tty)
        len = format_bar(buf, n, len, frac);
    if (!total) {
        append(buf, n, len, " %" PRIu64 " %.1f/s", p->done, rate);
        return;
    }
    len = append(buf, n, len, " %" PRIu64 "/%" PRIu64 " %5.1f%% %.1f/s",
                 p->done, total, frac * 100.0, rate);
    if (rate > 0 && p->done < total) {
        format_duration(eta, sizeof eta, (double)(total - p->done) / rate);
        append(buf, n, len, " ETA %s", eta);
    }
}

/* ==== Drawing ==== */

static void draw(struct mt_progress *p, double t)
{
    char line[LINE_MAX_LEN];

    format_status(p, t, line, sizeof line);
    if (p->tty)
        fprintf(p->params.stream, "\r%s\033[K", line);
    else
        fprintf(p->params.stream, "%s\n", line);
    fflush(p->params.stream);
    p->last_draw = t;
    p->drawn = 1;
}

/* Decides whether the state is worth printing now; called with mu held. */
static int due(struct mt_progress *p, double t)
{
    uint64_t total = p->params.total;
    double since = t - p->last_draw;

    if (p->tty)
        return !p->drawn || since >= p->params.min_interval_s;
    if (total) {
        uint64_t step = p->done >= total ? 10 : p->done * 10 / total;
        /* The 100 % line is left to mtx_progress_finish, so it is not
         * printed twice. */
        if (step > p->last_step && step < 10) {
            p->last_step = step;
            return 1;
        }
    }
    return since >= p->params.plain_interval_s;
}

static void maybe_draw(struct mt_progress *p)
{
    double t;

    if (p->finished || p->params.quiet)
        return;
    t = mtx_clock_now();
    if (due(p, t))
        draw(p, t);
}

void mtx_progress_update(struct mt_progress *p, uint64_t done)
{
    pthread_mutex_lock(&p->mu);
    p->done = done;
    maybe_draw(p);
    pthread_mutex_unlock(&p->mu);
}

void mtx_progress_set_total(struct mt_progress *p, uint64_t total)
{
    pthread_mutex_lock(&p->mu);
    p->params.total = total;
    pthread_mutex_unlock(&p->mu);
}

void mtx_progress_add(struct mt_progress *p, uint64_t n)
{
    pthread_mutex_lock(&p->mu);
    p->done += n;
    maybe_draw(p);
    pthread_mutex_unlock(&p->mu);
}

uint64_t mtx_progress_done(struct mt_progress *p)
{
    uint64_t d;

    pthread_mutex_lock(&p->mu);
    d = p->done;
    pthread_mutex_unlock(&p->mu);
    return d;
}

void mtx_progress_finish(struct mt_progress *p)
{
    char line[LINE_MAX_LEN];
    char el[32];
    double t;

    pthread_mutex_lock(&p->mu);
    if (p->finished || p->params.quiet) {
        p->finished = 1;
        pthread_mutex_unlock(&p->mu);
        return;
    }
    p->finished = 1;
    t = mtx_clock_now();
    format_status(p, t, line, sizeof line);
    format_duration(el, sizeof el, t - p->t0);
    if (p->tty)
        fprintf(p->params.stream, "\r%s done in %s\033[K\n", line, el);
    else
        fprintf(p->params.stream, "%s done in %s\n", line, el);
    fflush(p->params.stream);
    pthread_mutex_unlock(&p->mu);
}

void mtx_progress_free(struct mt_progress *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->mu);
    mt_free(p->label);
    mt_free(p);
}
