/* BERTScore baselines for rescaling, (x - b) / (1 - b) as bert_score's
 * rescale_with_baseline: from a flag value or a file, including bert_score's
 * own rescale_baseline tables (one "LAYER,P,R,F" row a layer). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"

#define OFFICIAL_MODEL "deberta-xlarge-mnli"

int mt_bertscore_official_model(const char *model)
{
    return model && strstr(model, OFFICIAL_MODEL) != NULL;
}

const char *mtx_ev_bert_note(const struct mt_eval_result *r)
{
    if (r->bert_file)
        return "read from a per-pair scores file: as comparable with "
               "published MEDIQA-CORR BERTScore as the run that wrote it";
    if (mt_bertscore_official_model(r->bert_model) && r->bert_exact &&
        r->bert_layer == 40 && r->bert_rescaled && !r->bert_idf)
        return "the official run's model, layer 40, rescaled with its "
               "baseline, idf off, computed as bert_score computes it: "
               "comparable with published MEDIQA-CORR BERTScore";
    if (mt_bertscore_official_model(r->bert_model) && r->bert_exact)
        return "the official run's model, computed as bert_score computes "
               "it, but not with the official settings (layer 40, its "
               "baseline, idf off): not comparable with published numbers";
    if (mt_bertscore_official_model(r->bert_model))
        return "the official run's model, but llama.cpp gives the last "
               "layer's token states where the official bert_score run reads "
               "layer 40 with baseline rescaling, so equivalence with "
               "published MEDIQA-CORR BERTScore is not established";
    return "not the official MEDIQA-CORR BERTScore (microsoft/"
           "deberta-xlarge-mnli, rescaled with its baseline): not comparable "
           "with published numbers";
}

static int is_sep(char ch)
{
    return ch == ',' || ch == ' ' || ch == '\t' || ch == '\r';
}

/* Parses the numbers of one NUL-ended line, separated by commas or blanks,
 * into v[0..max); returns the count, or -1 when anything else stands there
 * or there are more than max. */
static int parse_nums(const char *s, double *v, int max)
{
    int k = 0;
    char *end;

    for (;;) {
        while (is_sep(*s))
            s++;
        if (!*s)
            return k;
        if (k == max)
            return -1;
        v[k] = strtod(s, &end);
        if (end == s)
            return -1;
        k++;
        s = end;
    }
}

/* Splits 'text' (modified) into lines; returns the count (at most max). */
static size_t split_lines(char *text, char **line, size_t max)
{
    size_t n = 0;
    char *p = text;

    while (p && *p && n < max) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        line[n++] = p;
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static enum mt_status check_values(const char *what, const double *b,
                                   double *out, struct mt_error *err)
{
    int i;

    for (i = 0; i < 3; i++)
        if (!isfinite(b[i]) || !(b[i] < 1.0))
            return mt_fail(err, MT_EPARSE,
                           "%s: a BERTScore baseline must be a number below "
                           "1 (rescaling divides by 1 - b), not %g",
                           what, b[i]);
    memcpy(out, b, 3 * sizeof *out);
    return MT_OK;
}

/* Values of a line holding one number (P = R = F) or three; -1 if not. */
static int line_values(const char *s, double *b)
{
    double v[3];
    int k = parse_nums(s, v, 3);

    if (k == 1)
        v[1] = v[2] = v[0];
    if (k != 1 && k != 3)
        return -1;
    memcpy(b, v, sizeof v);
    return 0;
}

/* A bert_score table: rows "LAYER,P,R,F"; picks 'layer' (-1: last). */
static enum mt_status table_row(const char *path, char **line, size_t n,
                                long layer, double *b, struct mt_error *err)
{
    double v[4];
    int found = 0;
    size_t i;

    for (i = 1; i < n; i++) {
        int k = parse_nums(line[i], v, 4);
        if (k == 0)
            continue;
        if (k != 4)
            return mt_fail(err, MT_EPARSE, "%s:%zu: expected LAYER,P,R,F", path,
                           i + 1);
        if (layer >= 0 && v[0] != (double)layer)
            continue;
        memcpy(b, v + 1, 3 * sizeof *b);
        found = 1;
    }
    if (!found)
        return mt_fail(err, MT_EPARSE,
                       "%s: no baseline row for layer %ld (the layer the "
                       "token embeddings come from)",
                       path, layer);
    return MT_OK;
}

static enum mt_status from_file(const char *path, long layer, double *b,
                                struct mt_error *err)
{
    char *data = NULL;
    char *line[4096];
    size_t n = 0;
    size_t len = 0;
    enum mt_status st = mtx_ev_read_file(path, &data, &len, err);

    if (st != MT_OK)
        return st;
    n = split_lines(data, line, sizeof line / sizeof line[0]);
    if (n == sizeof line / sizeof line[0]) {
        mt_free(data);
        return mt_fail(err, MT_ELIMIT, "%s: over %zu lines", path, n - 1);
    }
    while (n > 0 && parse_nums(line[n - 1], b, 0) == 0)
        n--; /* trailing blank lines */
    if (n > 0 && strncasecmp(line[0] + strspn(line[0], " \t"), "LAYER", 5) == 0)
        st = table_row(path, line, n, layer, b, err);
    else if (n != 1 || line_values(line[0], b) != 0)
        st = mt_fail(err, MT_EPARSE,
                     "%s: expected one line 'F' or 'P,R,F', or a "
                     "bert_score baseline table (LAYER,P,R,F)",
                     path);
    mt_free(data);
    return st;
}

enum mt_status mt_bertscore_baseline_load(const char *spec, long layer,
                                          double out[3], struct mt_error *err)
{
    double b[3];
    enum mt_status st = MT_OK;

    if (!spec || !*spec)
        return mt_fail(err, MT_EPARSE, "empty BERTScore baseline");
    if (line_values(spec, b) != 0)
        st = from_file(spec, layer, b, err);
    if (st != MT_OK)
        return st;
    return check_values(spec, b, out, err);
}
