/* Model replies: JSON extraction from prose and code fences, and lenient
 * typed field getters. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "llmcall/reply.h"

/* Tries to parse p[0..n) as one JSON object. */
static json_t *try_object(const char *p, size_t n, char *why, size_t wn)
{
    json_error_t je;
    json_t *o = json_loadb(p, n, 0, &je);

    if (o && json_is_object(o))
        return o;
    if (o)
        snprintf(why, wn, "the reply's JSON is not an object");
    else
        snprintf(why, wn, "JSON error at column %d: %s", je.column, je.text);
    json_decref(o);
    return NULL;
}

/* Body of the first ``` fence (after an optional language tag). */
static json_t *from_fence(const char *t, char *why, size_t wn)
{
    const char *a = strstr(t, "```");
    const char *b;

    if (!a)
        return NULL;
    a += 3;
    while (isalpha((unsigned char)*a))
        a++;
    b = strstr(a, "```");
    if (!b)
        return NULL;
    return try_object(a, (size_t)(b - a), why, wn);
}

/* End of the balanced {...} starting at p, or NULL. Skips strings. */
static const char *balanced_end(const char *p)
{
    int depth = 0;
    int in_str = 0;

    for (; *p; p++) {
        if (in_str && *p == '\\' && p[1])
            p++;
        else if (*p == '"')
            in_str = !in_str;
        else if (!in_str && *p == '{')
            depth++;
        else if (!in_str && *p == '}' && --depth == 0)
            return p;
    }
    return NULL;
}

json_t *mtx_reply_extract(const char *text, char *why, size_t n)
{
    const char *p;
    json_t *o;
    int tries = 0;

    snprintf(why, n, "no JSON object in the reply");
    if (!text || !*text) {
        snprintf(why, n, "the reply is empty");
        return NULL;
    }
    o = try_object(text, strlen(text), why, n);
    if (!o)
        o = from_fence(text, why, n);
    for (p = strchr(text, '{'); !o && p && tries < 64; tries++) {
        const char *e = balanced_end(p);

        if (!e)
            break;
        o = try_object(p, (size_t)(e - p + 1), why, n);
        p = strchr(p + 1, '{');
    }
    return o;
}

/* ==== Field getters ==== */

static int num_value(const json_t *v, double *out)
{
    const char *s;
    char *end;

    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (!json_is_string(v))
        return -1;
    s = json_string_value(v);
    *out = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (*end == '%')
        end++;
    return end == s || *end ? -1 : 0;
}

int mtx_reply_int(const json_t *o, const char *key, long lo, long hi, long *v)
{
    double d;

    if (num_value(json_object_get(o, key), &d) != 0 || d != floor(d) ||
        d < (double)lo || d > (double)hi)
        return -1;
    *v = (long)d;
    return 0;
}

int mtx_reply_bool(const json_t *o, const char *key, int *v)
{
    const json_t *x = json_object_get(o, key);
    const char *s;

    if (json_is_boolean(x)) {
        *v = json_is_true(x);
        return 0;
    }
    if (json_is_integer(x) && json_integer_value(x) >= 0 &&
        json_integer_value(x) <= 1) {
        *v = (int)json_integer_value(x);
        return 0;
    }
    s = json_is_string(x) ? json_string_value(x) : "";
    if (strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0)
        *v = 1;
    else if (strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0)
        *v = 0;
    else
        return -1;
    return 0;
}

int mtx_reply_conf(const json_t *o, const char *key, double *v)
{
    double d;

    if (num_value(json_object_get(o, key), &d) != 0 || !(d >= 0) || d > 100)
        return -1;
    *v = d > 1 ? d / 100 : d;
    return 0;
}

const char *mtx_reply_str(const json_t *o, const char *key)
{
    const json_t *x = json_object_get(o, key);

    return json_is_string(x) ? json_string_value(x) : NULL;
}
