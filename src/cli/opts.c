/* Option parsing and --help, driven by each verb's option table. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "batch/rows.h"
#include "medtrust/check.h"
#include "medtrust/core.h"
#include "medtrust/index.h"

static size_t count_opts(const struct cli_opt *o)
{
    size_t n = 0;

    while (o[n].name)
        n++;
    return n;
}

/* The descriptor a CLI_PARAM row names (NULL for a plain row). */
static const struct mt_param *opt_param(const struct cli_opt *o)
{
    return o->table ? mt_param_find(o->table, o->name, 0) : NULL;
}

const char *cli_opt_arg(const struct cli_opt *o)
{
    const struct mt_param *d = opt_param(o);

    return d ? d->arg : o->arg;
}

/* Builds the getopt_long tables; help is index n. */
static void build_tables(const struct cli_opt *o, size_t n, struct option *lo,
                         char *so)
{
    size_t i;
    size_t k = 0;

    so[k++] = ':';
    for (i = 0; i < n; i++) {
        lo[i].name = o[i].name;
        lo[i].has_arg = cli_opt_arg(&o[i]) ? required_argument : no_argument;
        lo[i].flag = NULL;
        lo[i].val = 256 + (int)i;
        if (o[i].key) {
            so[k++] = (char)o[i].key;
            if (cli_opt_arg(&o[i]))
                so[k++] = ':';
        }
    }
    lo[n] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n + 1] = (struct option){NULL, 0, NULL, 0};
    so[k++] = 'h';
    so[k] = '\0';
}

static long opt_index(const struct cli_opt *o, size_t n, int c)
{
    size_t i;

    if (c >= 256)
        return c - 256;
    for (i = 0; i < n; i++)
        if (o[i].key == c)
            return (long)i;
    return -1;
}

static int store_val(struct cli_args *a, size_t i, const char *v)
{
    const char **m;

    a->val[i] = v ? v : "1";
    m = mt_realloc(a->multi[i], (a->nmulti[i] + 1) * sizeof *m);
    if (!m)
        return -1;
    m[a->nmulti[i]++] = a->val[i];
    a->multi[i] = m;
    return 0;
}

static int usage_error(const struct cli_verb *v, const char *what,
                       const char *opt)
{
    fprintf(stderr, "medtrust %s: %s '%s'\n", v->name, what, opt);
    fprintf(stderr, "Try 'medtrust %s --help'.\n", v->name);
    return 1;
}

int cli_parse(const struct cli_verb *v, int argc, char **argv,
              struct cli_args *a)
{
    struct option lo[CLI_MAX_OPTS + 2];
    char so[3 * CLI_MAX_OPTS + 4];
    size_t n = count_opts(v->opts);
    int c;

    memset(a, 0, sizeof *a);
    a->opts = v->opts;
    build_tables(v->opts, n, lo, so);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        long i = opt_index(v->opts, n, c);
        if (c == 'h') {
            cli_print_help(v);
            return -1;
        }
        if (c == '?')
            return usage_error(v, "unknown option", argv[optind - 1]);
        if (c == ':')
            return usage_error(v, "missing value for", argv[optind - 1]);
        if (i < 0 || store_val(a, (size_t)i, optarg) != 0)
            return usage_error(v, "cannot parse", argv[optind - 1]);
    }
    a->pos = argv + optind;
    a->npos = argc - optind;
    return cli_lora_apply(a);
}

void cli_args_free(struct cli_args *a)
{
    size_t i;

    for (i = 0; i < CLI_MAX_OPTS; i++)
        mt_free(a->multi[i]);
    mt_free(a->owned);
    memset(a, 0, sizeof *a);
}

static long find(const struct cli_args *a, const char *name)
{
    size_t i;

    for (i = 0; a->opts && a->opts[i].name; i++)
        if (strcmp(a->opts[i].name, name) == 0)
            return (long)i;
    return -1;
}

int cli_args_put(struct cli_args *a, const char *name, const char *val)
{
    long i = find(a, name);

    return i < 0 ? -1 : store_val(a, (size_t)i, val);
}

const char *cli_get(const struct cli_args *a, const char *name)
{
    long i = find(a, name);

    return i < 0 ? NULL : a->val[i];
}

const char **cli_get_all(const struct cli_args *a, const char *name, size_t *n)
{
    long i = find(a, name);

    *n = i < 0 ? 0 : a->nmulti[i];
    return i < 0 ? NULL : a->multi[i];
}

int cli_get_uint(const struct cli_args *a, const char *name, unsigned long lo,
                 unsigned long hi, unsigned long *out)
{
    const char *s = cli_get(a, name);
    char *end;
    unsigned long v;

    if (!s)
        return 0;
    v = strtoul(s, &end, 10);
    if (*s == '-' || *end || end == s || v < lo || v > hi) {
        fprintf(stderr,
                "medtrust: --%s must be an integer in %lu..%lu, "
                "not '%s'\n",
                name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_get_double(const struct cli_args *a, const char *name, double lo,
                   double hi, double *out)
{
    const char *s = cli_get(a, name);
    char *end;
    double v;

    if (!s)
        return 0;
    v = strtod(s, &end);
    if (*end || end == s || !(v >= lo && v <= hi)) {
        fprintf(stderr,
                "medtrust: --%s must be a number in %.10g..%.10g, not "
                "'%s'\n",
                name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int read_param(const struct cli_args *a, const struct mt_param *d,
                      void *params)
{
    double x = mt_param_get(d, params);
    unsigned long u = (unsigned long)x;

    if (mt_param_is_integer(d)) {
        if (cli_get_uint(a, d->option, (unsigned long)d->lo,
                         (unsigned long)d->hi, &u) < 0)
            return -1;
        x = (double)u;
    } else if (cli_get_double(a, d->option, d->lo, d->hi, &x) < 0) {
        return -1;
    }
    if (cli_get(a, d->option))
        mt_param_set(d, params, x);
    return 0;
}

int cli_params_read(const struct cli_args *a, const struct mt_param_table *t,
                    void *params)
{
    const struct cli_opt *o;

    for (o = a->opts; o && o->name; o++) {
        const struct mt_param *d = o->table == t ? opt_param(o) : NULL;

        if (d && read_param(a, d, params) < 0)
            return -1;
    }
    return 0;
}

int cli_get_search_mode(const struct cli_args *a, const char *name, int *mode)
{
    const char *s = cli_get(a, name);
    enum mt_search_mode m;

    if (!s)
        return 0;
    if (mt_search_mode_parse(s, &m) != MT_OK) {
        fprintf(stderr,
                "medtrust: --%s must be bm25, dense or hybrid, not '%s'\n",
                name, s);
        return -1;
    }
    *mode = (int)m;
    return 0;
}

int cli_get_float(const struct cli_args *a, const char *name, double lo,
                  double hi, float *out)
{
    double v = *out;

    if (cli_get_double(a, name, lo, hi, &v) < 0)
        return -1;
    *out = (float)v;
    return 0;
}

int cli_llm_params_read(const struct cli_args *a, struct mt_llm_params *p)
{
    const char *rf = cli_get(a, "response-format");

    if (cli_params_read(a, &mt_llm_param_table, p) < 0)
        return -1;
    p->cache_path = cli_get(a, "cache");
    if (rf && mt_response_format_parse(rf, &p->response_format) != MT_OK) {
        fprintf(stderr,
                "medtrust: --response-format must be auto, json_schema, "
                "json_object or none, not '%s'\n",
                rf);
        return -1;
    }
    return 0;
}

/* A number as --help shows it: whole numbers without decimals. */
static void num_text(char *buf, size_t n, double x)
{
    snprintf(buf, n, "%.10g", x);
}

/* A CLI_PARAM row's help: what it sets, its bounds and its default, and
 * the server's lower cap where it has one. */
static void param_help(const struct cli_opt *o, char *buf, size_t n)
{
    const struct mt_param *d = opt_param(o);
    char lo[32], hi[32], def[64], cap[64] = "";

    if (!d) {
        snprintf(buf, n, "%s", o->help ? o->help : "");
        return;
    }
    if (!d->arg) { /* a flag: given is 1 */
        snprintf(buf, n, "%s (default %s)", d->help,
                 mt_param_default(o->table, d) ? "on" : "off");
        return;
    }
    num_text(lo, sizeof lo, d->lo);
    num_text(hi, sizeof hi, d->hi);
    if (d->def_text)
        snprintf(def, sizeof def, "%s", d->def_text);
    else
        num_text(def, sizeof def, mt_param_default(o->table, d));
    if (mt_param_max(d, 1) < d->hi) {
        snprintf(cap, sizeof cap, "; serve: at most ");
        num_text(cap + strlen(cap), sizeof cap - strlen(cap),
                 mt_param_max(d, 1));
    }
    snprintf(buf, n, "%s, %s..%s (default %s%s)", d->help, lo, hi, def, cap);
}

/* The strategy table, under the options of a verb that takes
 * --strategy. */
static void print_strategies(const struct cli_verb *v)
{
    const struct cli_opt *o;
    int i;

    for (o = v->opts; o->name && strcmp(o->name, "strategy") != 0; o++)
        ;
    if (!o->name)
        return;
    printf("\nStrategies (--strategy):\n");
    for (i = 0; i < MT_STRATEGY_COUNT; i++) {
        const struct mt_strategy_info *in =
            mt_strategy_get((enum mt_strategy)i);
        const char *const *r;

        printf("  %-28s %s: %s\n  %-28s roles:", in->name, in->title,
               in->summary, "");
        for (r = in->roles; *r; r++)
            printf(" %s", *r);
        printf("%s%s\n", in->needs_retriever ? "; searches --db" : "",
               in->needs_examples ? "; few-shot examples" : "");
    }
}

void cli_print_help(const struct cli_verb *v)
{
    const struct cli_opt *o;
    char left[64], help[512];

    printf("Usage: medtrust %s %s\n\n%s\n\nOptions:\n", v->name, v->usage,
           v->summary);
    for (o = v->opts; o->name; o++) {
        const char *arg = cli_opt_arg(o);

        if (o->key)
            snprintf(left, sizeof left, "-%c, --%s%s%s", o->key, o->name,
                     arg ? " " : "", arg ? arg : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", o->name, arg ? " " : "",
                     arg ? arg : "");
        param_help(o, help, sizeof help);
        printf("  %-28s %s%s\n", left, help, o->repeat ? " (repeatable)" : "");
    }
    printf("  %-28s %s\n", "-h, --help", "show this help and exit");
    print_strategies(v);
    if (v->details)
        printf("\n%s\n", v->details);
}

int cli_fail(const struct mt_error *err, enum mt_status st)
{
    const char *msg = err && err->msg[0] ? err->msg : mt_status_str(st);

    fprintf(stderr, "medtrust: error: %s\n", msg);
    if (st == MT_ENOMEM)
        fprintf(stderr, "medtrust: free some memory or use smaller "
                        "batches (--batch).\n");
    return mt_status_exit_code(st);
}

int cli_store_params_read(const struct cli_args *a, struct mt_store_params *sp)
{
    const char *ov = cli_get(a, "chunk-overlap");

    mt_store_default_params(sp);
    if (cli_get(a, "analyzer"))
        sp->analyzer = cli_get(a, "analyzer");
    if (cli_params_read(a, &mt_store_param_table, sp) < 0)
        return -1;
    if (ov && sp->chunk_overlap >= sp->chunk_size) {
        fprintf(stderr,
                "medtrust: --chunk-overlap must be an integer in 0..%u, "
                "not '%s'\n",
                (unsigned)sp->chunk_size - 1, ov);
        return -1;
    }
    return 0;
}

int cli_rows_params_read(const struct cli_args *a, const char *role,
                         unsigned jobs, struct mtx_rows_params *rp,
                         struct mt_llm_params *lp)
{
    mtx_rows_default_params(rp);
    rp->role = role;
    rp->llm_spec = cli_get(a, "llm");
    rp->llm = lp;
    rp->jobs = jobs;
    rp->quiet = cli_get(a, "no-progress") != NULL;
    mt_llm_default_params(lp);
    return cli_llm_params_read(a, lp);
}
