/* medtrust settings tables: one descriptor per numeric member of a params
 * struct (its CLI option, its HTTP request member, type, bounds and what
 * it sets), as Redis's config table does. The defaults are never copied
 * into a table: they are read from the struct that the struct's
 * *_default_params() fills. The CLI's options and --help, the server's
 * request fields and GET /v1/limits are generated from these tables. */
#ifndef MEDTRUST_PARAMS_H
#define MEDTRUST_PARAMS_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The C type of the member a descriptor names. */
enum mt_param_type {
    MT_PARAM_U32,  /* uint32_t */
    MT_PARAM_U64,  /* uint64_t */
    MT_PARAM_F32,  /* float */
    MT_PARAM_F64,  /* double */
    MT_PARAM_I32,  /* int32_t */
    MT_PARAM_SIZE, /* size_t */
};

/* One setting of a params struct. */
struct mt_param {
    const char *option; /* CLI long option without "--"; NULL = none */
    const char *field;  /* HTTP request member; NULL = not offered */
    size_t offset;      /* offsetof() the member in the params struct */
    enum mt_param_type type;
    double lo, hi;        /* accepted values, inclusive */
    double server_hi;     /* the server deliberately caps lower (a model's
                             time per request, a prompt's size): its
                             highest value; 0 = hi */
    const char *arg;      /* CLI metavariable ("N", "X"); NULL: a flag
                             (a 0..1 integer; given: 1) */
    const char *help;     /* what it sets, for people (no bounds) */
    const char *def_text; /* the default in words when it is no value in
                             lo..hi ("the index's"); NULL = the value */
};

/* A params struct's table: n descriptors and the function that fills a
 * struct with the defaults (its *_default_params). */
struct mt_param_table {
    const char *name; /* the struct's name, "mt_agent_params" */
    const struct mt_param *params;
    size_t n;
    size_t size; /* sizeof the params struct */
    void (*defaults)(void *params);
};

/* The member d names in 'params', as a double (a float is rounded to its
 * 6 significant digits, so 0.7f reads 0.7). */
double mt_param_get(const struct mt_param *d, const void *params);
/* Stores v, which the caller checked with mt_param_valid, in 'params'. */
void mt_param_set(const struct mt_param *d, void *params, double v);
/* 1 when the type is an integer type. */
int mt_param_is_integer(const struct mt_param *d);
/* The highest value accepted: hi, or server_hi for a server (server != 0)
 * when the table caps it lower. */
double mt_param_max(const struct mt_param *d, int server);
/* 1 when v is within lo..mt_param_max(d, server) and, for an integer
 * type, whole. */
int mt_param_valid(const struct mt_param *d, double v, int server);
/* The default of d: the value t->defaults() writes. */
double mt_param_default(const struct mt_param_table *t,
                        const struct mt_param *d);
/* The descriptor whose option (by_field == 0) or field (by_field != 0) is
 * 'name', or NULL. */
const struct mt_param *mt_param_find(const struct mt_param_table *t,
                                     const char *name, int by_field);
/* Copies every member the table names that has a request field from src
 * to dst (both t's struct). */
void mt_param_copy_fields(const struct mt_param_table *t, void *dst,
                          const void *src);
/* 1 when a and b (both t's struct) differ in a member that has a request
 * field. */
int mt_param_fields_differ(const struct mt_param_table *t, const void *a,
                           const void *b);
/* Checks every member t names in 'params' (t's struct) with
 * mt_param_valid(d, value, server); a member whose default (the value
 * t->defaults writes) is no value in its bounds, said in def_text ("the
 * index's", "any"), also takes that default, which the CLI gives by
 * leaving its option out. MT_OK, or MT_EINVAL
 * naming the first member out of its bounds (its option, else its
 * request field), its value and the bounds ("mt_agent_params: steps is
 * 33, not in 1..32"; with a def_text, "... (or 0: the index's)"). What a
 * library entry point that takes a params struct calls, so every caller
 * gets the bounds the CLI and the server take: mt_server_start,
 * mt_agent_open, mt_qa_open, mt_index_run, mt_index_run_store,
 * mt_import, mt_llm_open, mt_embedder_open, mt_store_open and, per call,
 * mt_verify_text and mt_verify_one_claim check their tables
 * (mt_index_search checks k and the depths itself, not yet
 * mt_search_param_table's k1, b and weights). */
enum mt_status mt_param_check(const struct mt_param_table *t,
                              const void *params, int server,
                              struct mt_error *err);

#ifdef __cplusplus
}
#endif

#endif
