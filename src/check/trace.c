/* The trace format's one declaration (MT_TRACE_RECORDS in
 * medtrust/trace.h) as a table, and the check of a record against it. */
#include <string.h>

#include <jansson.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "medtrust/trace.h"

static const struct mt_trace_kind_info kinds[MT_TRACE_KIND_COUNT] = {
#define X(name, kind, req, opt) {kind, req, opt},
    MT_TRACE_RECORDS(X)
#undef X
};

const struct mt_trace_kind_info *mt_trace_kind_get(enum mt_trace_kind k)
{
    return (unsigned)k < MT_TRACE_KIND_COUNT ? &kinds[k] : NULL;
}

enum mt_status mt_trace_kind_parse(const char *name, enum mt_trace_kind *out)
{
    size_t i;

    for (i = 0; name && i < MT_TRACE_KIND_COUNT; i++) {
        if (strcmp(kinds[i].name, name) == 0) {
            *out = (enum mt_trace_kind)i;
            return MT_OK;
        }
    }
    return MT_ENOTFOUND;
}

/* 1 when 'key' is one of the space-separated words of 'list'. */
static int listed(const char *list, const char *key)
{
    size_t n = strlen(key);
    const char *p = list;

    while ((p = strstr(p, key)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
        p += n;
    }
    return 0;
}

/* The first required key of 'in' that o lacks, copied into 'key' (n
 * bytes); 0 when it has them all. */
static int missing(const struct mt_trace_kind_info *in, json_t *o, char *key,
                   size_t n)
{
    const char *p = in->required;

    while (*p) {
        size_t len = strcspn(p, " ");

        if (len > 0 && len < n) {
            memcpy(key, p, len);
            key[len] = '\0';
            if (!json_object_get(o, key))
                return 1;
        }
        p += len;
        p += *p == ' ';
    }
    return 0;
}

/* Checks parsed record o; st MT_EPARSE with 'err' when it breaks the
 * declaration. */
static enum mt_status check_obj(json_t *o, unsigned version,
                                struct mt_error *err)
{
    const char *step = json_string_value(json_object_get(o, "step"));
    const struct mt_trace_kind_info *in;
    enum mt_trace_kind k;
    const char *key;
    json_t *v;
    char need[64];

    if (!json_is_object(o) || !step)
        return mt_fail(err, MT_EPARSE,
                       "trace record: not an object with a \"step\"");
    if (mt_trace_kind_parse(step, &k) != MT_OK)
        return mt_fail(err, MT_EPARSE, "trace record: unknown step \"%s\"",
                       step);
    in = &kinds[k];
    json_object_foreach(o, key, v)
    {
        if (strcmp(key, "step") != 0 && !listed(in->required, key) &&
            !listed(in->optional, key) && !listed(in->optional, "*"))
            return mt_fail(err, MT_EPARSE,
                           "trace record \"%s\": key \"%s\" is not declared "
                           "(medtrust/trace.h)",
                           step, key);
    }
    if (version == MT_TRACE_VERSION && missing(in, o, need, sizeof need))
        return mt_fail(err, MT_EPARSE,
                       "trace record \"%s\": required key \"%s\" is missing",
                       step, need);
    return MT_OK;
}

enum mt_status mt_trace_record_check(const char *json, size_t len,
                                     unsigned version, struct mt_error *err)
{
    json_error_t je;
    json_t *o;
    enum mt_status st;

    if (version == 0 || version > MT_TRACE_VERSION)
        return mt_fail(err, MT_EINVAL,
                       "trace version %u: this medtrust reads versions 1 to "
                       "%d",
                       version, MT_TRACE_VERSION);
    mtx_jsonl_init_alloc();
    o = json_loadb(json, len, 0, &je);
    if (!o)
        return mt_fail(err, MT_EPARSE, "trace record: %s (column %d)", je.text,
                       je.column);
    st = check_obj(o, version, err);
    json_decref(o);
    return st;
}
