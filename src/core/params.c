/* Settings tables (include/medtrust/params.h): reading, writing and
 * checking a params struct's members through their descriptors. */
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "medtrust/params.h"

/* A params struct's defaults are filled here: larger structs are a
 * programming error (assert), as no params struct comes near it. */
#define DEFAULTS_MAX 4096

double mt_param_get(const struct mt_param *d, const void *params)
{
    const char *p = (const char *)params + d->offset;
    char txt[32];
    uint32_t u;
    uint64_t w;
    int32_t i;
    size_t z;
    float f;
    double x;

    switch (d->type) {
    case MT_PARAM_I32:
        memcpy(&i, p, sizeof i);
        return i;
    case MT_PARAM_SIZE:
        memcpy(&z, p, sizeof z);
        return (double)z;
    case MT_PARAM_U32:
        memcpy(&u, p, sizeof u);
        return u;
    case MT_PARAM_U64:
        memcpy(&w, p, sizeof w);
        return (double)w;
    case MT_PARAM_F32:
        /* 0.7f is 0.699999988...; its shortest decimal is what was set */
        memcpy(&f, p, sizeof f);
        snprintf(txt, sizeof txt, "%.*g", FLT_DIG, (double)f);
        return strtod(txt, NULL);
    case MT_PARAM_F64:
        break;
    }
    memcpy(&x, p, sizeof x);
    return x;
}

void mt_param_set(const struct mt_param *d, void *params, double v)
{
    char *p = (char *)params + d->offset;
    uint32_t u = (uint32_t)v;
    uint64_t w = (uint64_t)v;
    float f = (float)v;
    int32_t i = (int32_t)v;
    size_t z = (size_t)v;

    switch (d->type) {
    case MT_PARAM_I32:
        memcpy(p, &i, sizeof i);
        return;
    case MT_PARAM_SIZE:
        memcpy(p, &z, sizeof z);
        return;
    case MT_PARAM_U32:
        memcpy(p, &u, sizeof u);
        return;
    case MT_PARAM_U64:
        memcpy(p, &w, sizeof w);
        return;
    case MT_PARAM_F32:
        memcpy(p, &f, sizeof f);
        return;
    case MT_PARAM_F64:
        break;
    }
    memcpy(p, &v, sizeof v);
}

int mt_param_is_integer(const struct mt_param *d)
{
    return d->type != MT_PARAM_F32 && d->type != MT_PARAM_F64;
}

double mt_param_max(const struct mt_param *d, int server)
{
    return server && d->server_hi > 0 ? d->server_hi : d->hi;
}

int mt_param_valid(const struct mt_param *d, double v, int server)
{
    if (!(v >= d->lo && v <= mt_param_max(d, server)))
        return 0; /* NaN too */
    return !mt_param_is_integer(d) || v == (double)(int64_t)v;
}

double mt_param_default(const struct mt_param_table *t,
                        const struct mt_param *d)
{
    union {
        long double align;
        unsigned char b[DEFAULTS_MAX];
    } buf;

    assert(t->size <= sizeof buf.b);
    t->defaults(buf.b);
    return mt_param_get(d, buf.b);
}

const struct mt_param *mt_param_find(const struct mt_param_table *t,
                                     const char *name, int by_field)
{
    size_t i;

    for (i = 0; name && i < t->n; i++) {
        const char *k = by_field ? t->params[i].field : t->params[i].option;

        if (k && strcmp(k, name) == 0)
            return &t->params[i];
    }
    return NULL;
}

static size_t type_size(enum mt_param_type type)
{
    if (type == MT_PARAM_SIZE)
        return sizeof(size_t);
    return type == MT_PARAM_U32 || type == MT_PARAM_F32 || type == MT_PARAM_I32
               ? 4
               : 8;
}

void mt_param_copy_fields(const struct mt_param_table *t, void *dst,
                          const void *src)
{
    size_t i;

    for (i = 0; i < t->n; i++) {
        const struct mt_param *d = &t->params[i];

        if (d->field)
            memcpy((char *)dst + d->offset, (const char *)src + d->offset,
                   type_size(d->type));
    }
}

int mt_param_fields_differ(const struct mt_param_table *t, const void *a,
                           const void *b)
{
    size_t i;

    for (i = 0; i < t->n; i++) {
        const struct mt_param *d = &t->params[i];

        if (d->field &&
            memcmp((const char *)a + d->offset, (const char *)b + d->offset,
                   type_size(d->type)) != 0)
            return 1;
    }
    return 0;
}

/* v as the CLI takes it: a whole number in full, else %g. */
static const char *num(const struct mt_param *d, double v, char *buf, size_t n)
{
    snprintf(buf, n,
             mt_param_is_integer(d) && v == (double)(int64_t)v ? "%.0f" : "%g",
             v);
    return buf;
}

/* The default a def_text describes when it is no value in the bounds (a
 * dims of 0 is "the index's", a year of 0 "any": the CLI gives it by
 * leaving the option out), read from 'defs' (t's defaults); else NAN. */
static double outside_default(const struct mt_param *d, int server,
                              const void *defs)
{
    double v = mt_param_get(d, defs);

    return d->def_text && !mt_param_valid(d, v, server) ? v : (double)NAN;
}

/* The error for d's value v, out of its bounds and not its outside
 * default 'def' (NAN when it has none). */
static enum mt_status refuse(const struct mt_param_table *t,
                             const struct mt_param *d, double v, double def,
                             int server, struct mt_error *err)
{
    char a[40], b[40], c[40], z[40];
    const char *name = d->option ? d->option : d->field;

    num(d, v, a, sizeof a);
    num(d, d->lo, b, sizeof b);
    num(d, mt_param_max(d, server), c, sizeof c);
    if (isnan(def))
        return mt_fail(err, MT_EINVAL, "%s: %s is %s, not in %s..%s", t->name,
                       name, a, b, c);
    /* say what else it takes */
    return mt_fail(err, MT_EINVAL, "%s: %s is %s, not in %s..%s (or %s: %s)",
                   t->name, name, a, b, c, num(d, def, z, sizeof z),
                   d->def_text);
}

/* The table's defaults are filled only once a value is out of bounds:
 * a check that passes (every per-call check of a valid request) reads
 * nothing but the params. */
enum mt_status mt_param_check(const struct mt_param_table *t,
                              const void *params, int server,
                              struct mt_error *err)
{
    union {
        long double align;
        unsigned char b[DEFAULTS_MAX];
    } defs;
    int have_defs = 0;
    size_t i;

    assert(t->size <= sizeof defs.b);
    for (i = 0; i < t->n; i++) {
        const struct mt_param *d = &t->params[i];
        double v = mt_param_get(d, params), def;

        if (mt_param_valid(d, v, server))
            continue;
        if (!have_defs) {
            t->defaults(defs.b);
            have_defs = 1;
        }
        def = outside_default(d, server, defs.b);
        if (v != def)
            return refuse(t, d, v, def, server, err);
    }
    return MT_OK;
}
