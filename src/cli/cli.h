/* The medtrust command: verb table, option tables and shared helpers. One
 * option table per verb drives both getopt_long and --help. */
#ifndef MT_CLI_H
#define MT_CLI_H

#include <stddef.h>

#include "medtrust/model.h"
#include "medtrust/params.h"
#include "medtrust/store.h"
#include "medtrust/status.h"

#define CLI_MAX_OPTS 64

/* The option tables list rows positionally and leave 'table' out (C
 * makes it NULL); only CLI_PARAM rows set it. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

struct cli_opt {
    const char *name; /* long name, without "--" */
    int key;          /* short letter, or 0 for long-only */
    const char *arg;  /* metavariable, or NULL for a flag */
    const char *help; /* one line; say the default and bounds */
    int repeat;       /* may be given more than once */
    /* A setting of a params struct: its metavariable, help, bounds and
     * default come from this table's descriptor of option 'name' (arg
     * and help are NULL), and cli_params_read reads it. */
    const struct mt_param_table *table;
};

/* The metavariable of option row o (NULL for a flag), a CLI_PARAM row's
 * from its descriptor. */
const char *cli_opt_arg(const struct cli_opt *o);

/* An option row generated from settings table T's descriptor NAME. */
#define CLI_PARAM(name, t)                                                     \
    {                                                                          \
        name, 0, NULL, NULL, 0, t                                              \
    }
/* The same with a short option letter. */
#define CLI_PARAM_KEY(name, key, t)                                            \
    {                                                                          \
        name, key, NULL, NULL, 0, t                                            \
    }

struct cli_args {
    const struct cli_opt *opts;
    const char *val[CLI_MAX_OPTS]; /* last value; "1" for a given flag */
    const char **multi[CLI_MAX_OPTS];
    size_t nmulti[CLI_MAX_OPTS];
    char **pos; /* positional arguments */
    int npos;
    char *owned; /* a value cli_parse made (--llm with --lora's adapters) */
};

struct cli_verb {
    const char *name;
    const char *summary;
    const char *usage;   /* after "medtrust VERB " */
    const char *details; /* paragraph printed after the options, or NULL */
    const struct cli_opt *opts;
    int (*run)(struct cli_args *a);
};

/* Parses argv (argv[0] is the verb). Returns 0 to run, 1 after printing a
 * usage error, -1 after printing --help. */
int cli_parse(const struct cli_verb *v, int argc, char **argv,
              struct cli_args *a);
void cli_args_free(struct cli_args *a);

/* Sets option 'name' as if given with 'val' (NULL for a flag), which must
 * outlive 'a'; -1 when the table has no such option or out of memory. */
int cli_args_put(struct cli_args *a, const char *name, const char *val);

/* Value of option 'name', or NULL when absent. */
const char *cli_get(const struct cli_args *a, const char *name);
/* Every value of a repeatable option. */
const char **cli_get_all(const struct cli_args *a, const char *name, size_t *n);
/* Parses an unsigned integer option within [lo, hi]; prints an error and
 * returns -1 when invalid; returns 0 and leaves *out when absent. */
int cli_get_uint(const struct cli_args *a, const char *name, unsigned long lo,
                 unsigned long hi, unsigned long *out);

/* Parses a number option within [lo, hi] the same way; NaN is refused. */
int cli_get_double(const struct cli_args *a, const char *name, double lo,
                   double hi, double *out);
int cli_get_float(const struct cli_args *a, const char *name, double lo,
                  double hi, float *out);

/* Reads every option of a->opts generated from table t (CLI_PARAM) into
 * 'params' (t's struct, already holding its defaults) within the
 * descriptor's bounds; prints an error and returns -1 when one is
 * invalid. */
int cli_params_read(const struct cli_args *a, const struct mt_param_table *t,
                    void *params);

/* Parses a search mode option (bm25, dense or hybrid) into *mode (an enum
 * mt_search_mode as int) the same way; leaves *mode when absent. */
int cli_get_search_mode(const struct cli_args *a, const char *name, int *mode);

/* The --lora row of every verb that takes --llm; cli_parse applies it
 * (cli_lora_apply). */
#define CLI_LORA_OPT                                                           \
    {                                                                          \
        "lora", 0, "ADAPTER[:SCALE]",                                          \
            "LoRA adapter GGUF applied to a gguf: LLM at SCALE (default 1): "  \
            "the "                                                             \
            "default LLM (--llm, else MEDTRUST_LLM) becomes "                  \
            "gguf:BASE?lora=ADAPTER[:SCALE]; a per-role spec takes ?lora= "    \
            "itself",                                                          \
            1                                                                  \
    }

/* Adds the --lora values to the default LLM's spec: the --llm value
 * becomes gguf:BASE?lora=A[:S]&lora=B (or MEDTRUST_LLM, when that is the
 * spec the model layer picks). Prints an error and returns 1 when the
 * LLM is not a gguf: model; 0 otherwise (also without --lora). */
int cli_lora_apply(struct cli_args *a);

/* Option rows for how every model call is made (call cache, timeout,
 * retries); spliced into the tables of the verbs that call models and read
 * with cli_llm_params_read. */
#define CLI_MODEL_CALL_OPTS                                                    \
    {"cache", 0, "FILE|URL",                                                   \
     "call cache, an SQLite FILE or a postgresql:// URL that workers share: "  \
     "a rerun with the same inputs costs no model calls (default off)",        \
     0},                                                                       \
        CLI_PARAM("timeout", &mt_llm_param_table),                             \
        CLI_PARAM("retries", &mt_llm_param_table),                             \
        CLI_PARAM("ctx", &mt_llm_param_table),                                 \
    {                                                                          \
        "response-format", 0, "MODE",                                          \
            "how openai: servers are asked for JSON replies: auto (default: "  \
            "json_schema, then json_object, then none, each step taken once "  \
            "after a 400 naming the field), json_schema, json_object or none", \
            0                                                                  \
    }

/* Reads --cache, --timeout, --retries, --ctx and --response-format into p
 * (whose defaults stay when an option is absent); prints an error and returns
 * -1 when one is invalid. */
int cli_llm_params_read(const struct cli_args *a, struct mt_llm_params *p);

struct mtx_rows_params;
/* The settings of an "LLM over rows" run (batch/rows.h) of the model role
 * ROLE on JOBS threads: --llm, --no-progress, then the model-call options
 * read into lp (filled with the defaults first) as cli_llm_params_read;
 * rp->llm points at lp. Prints an error and returns -1 when one is
 * invalid. */
int cli_rows_params_read(const struct cli_args *a, const char *role,
                         unsigned jobs, struct mtx_rows_params *rp,
                         struct mt_llm_params *lp);

/* Reads --analyzer, --chunk-size and --chunk-overlap (the settings of a
 * new store) into sp after filling it with the defaults; prints an error
 * and returns -1 when one is invalid (index and import share them). */
int cli_store_params_read(const struct cli_args *a, struct mt_store_params *sp);

void cli_print_help(const struct cli_verb *v);

/* Prints "medtrust: ERROR: message" and a hint; returns the exit code. */
int cli_fail(const struct mt_error *err, enum mt_status st);

struct mt_index_build_result;

/* Brings the search index of store 's' up to date as 'medtrust index
 * --db DIR' with no other option does (new chunks in a new segment, a
 * rebuild after deletions; the index's own embedder, for a new index
 * $MEDTRUST_EMBEDDER, else use-lite; 'embedder' overrides when not NULL),
 * with a progress bar unless 'quiet' and its summary line on stdout unless
 * 'json'. 'res' (may be NULL) gets the build's counts. */
enum mt_status cli_index_update(struct mt_store *s, const char *embedder,
                                int quiet, int json,
                                struct mt_index_build_result *res,
                                struct mt_error *err);

/* Verbs. */
extern const struct cli_verb cli_verb_index;
extern const struct cli_verb cli_verb_import;
extern const struct cli_verb cli_verb_corpus;
extern const struct cli_verb cli_verb_stats;
extern const struct cli_verb cli_verb_search;
extern const struct cli_verb cli_verb_retrieval_eval;
extern const struct cli_verb cli_verb_score;
extern const struct cli_verb cli_verb_check;
extern const struct cli_verb cli_verb_mediqa;
extern const struct cli_verb cli_verb_sweep;
extern const struct cli_verb cli_verb_ask;
extern const struct cli_verb cli_verb_qa_eval;
extern const struct cli_verb cli_verb_embed;
extern const struct cli_verb cli_verb_models;
extern const struct cli_verb cli_verb_serve;
extern const struct cli_verb cli_verb_user;
extern const struct cli_verb cli_verb_worker;
extern const struct cli_verb cli_verb_publish;
extern const struct cli_verb cli_verb_verify;
extern const struct cli_verb cli_verb_examples;

#endif
