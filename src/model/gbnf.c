/* JSON Schema to GBNF. Each schema node becomes a rule "rN"; primitive
 * types map to shared rules. Numbers, integers and whitespace are bounded
 * so that constrained output always terminates. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/gbnf.h"

#define GBNF_MAX_DEPTH 32

struct gb {
    struct mt_buf out;
    unsigned next;
    struct mt_error *err;
};

static const char builtins[] =
    "ws ::= [ ]?\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | "
    "\"u\" [0-9a-fA-F]{4})\n"
    "integer ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15})\n"
    "number ::= integer (\".\" [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?\n"
    "boolean ::= \"true\" | \"false\"\n"
    "null ::= \"null\"\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" ws (string ws \":\" ws value (\",\" ws string ws "
    "\":\" ws value)*)? ws \"}\"\n"
    "array ::= \"[\" ws (value (\",\" ws value)*)? ws \"]\"\n";

static enum mt_status node(struct gb *g, json_t *s, int depth, char *name,
                           size_t n);

/* Appends s to b as a GBNF string literal. */
static enum mt_status lit(struct mt_buf *b, const char *s)
{
    enum mt_status st = mtx_buf_putc(b, '"');

    for (; st == MT_OK && *s; s++) {
        if (*s == '"' || *s == '\\')
            st = mtx_buf_putc(b, '\\');
        if (st == MT_OK && *s == '\n')
            st = mtx_buf_append_str(b, "\\n");
        else if (st == MT_OK)
            st = mtx_buf_putc(b, *s);
    }
    return st == MT_OK ? mtx_buf_putc(b, '"') : st;
}

/* Appends a literal matching exactly the JSON encoding of v. */
static enum mt_status lit_json(struct mt_buf *b, json_t *v)
{
    char *j = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    enum mt_status st = j ? lit(b, j) : MT_ENOMEM;

    mt_free(j);
    return st;
}

/* Names a new rule and appends its finished text "name ::= body". */
static enum mt_status emit(struct gb *g, struct mt_buf *body, char *name,
                           size_t n)
{
    enum mt_status st;

    snprintf(name, n, "r%u", g->next++);
    st = mtx_buf_printf(&g->out, "%s ::= %s\n", name,
                        body->data ? body->data : "\"\"");
    mtx_buf_free(body);
    return st;
}

static enum mt_status enum_rule(struct gb *g, json_t *vals, char *name,
                                size_t n)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    enum mt_status st = MT_OK;
    size_t i;

    if (!json_is_array(vals) || json_array_size(vals) == 0)
        return mt_fail(g->err, MT_EUNSUPPORTED,
                       "schema: 'enum' must be a "
                       "non-empty array");
    for (i = 0; st == MT_OK && i < json_array_size(vals); i++) {
        if (i)
            st = mtx_buf_append_str(&b, " | ");
        if (st == MT_OK)
            st = lit_json(&b, json_array_get(vals, i));
    }
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    return emit(g, &b, name, n);
}

/* One "\"key\"" ws ":" ws VALUE member into b. */
static enum mt_status member(struct gb *g, struct mt_buf *b, const char *key,
                             json_t *s, int depth, int first)
{
    char child[32];
    json_t *js = json_string(key);
    char *k = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
    enum mt_status st = k ? MT_OK : MT_ENOMEM;

    json_decref(js);
    if (st == MT_OK)
        st = node(g, s, depth + 1, child, sizeof child);
    if (st == MT_OK && !first)
        st = mtx_buf_append_str(b, " \",\" ws ");
    if (st == MT_OK)
        st = lit(b, k);
    if (st == MT_OK)
        st = mtx_buf_printf(b, " ws \":\" ws %s", child);
    mt_free(k);
    return st;
}

static enum mt_status object_rule(struct gb *g, json_t *s, int depth,
                                  char *name, size_t n)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    json_t *props = json_object_get(s, "properties");
    const char *key;
    json_t *sub;
    int first = 1;
    enum mt_status st;

    if (!json_is_object(props) || json_object_size(props) == 0) {
        snprintf(name, n, "object");
        return MT_OK;
    }
    st = mtx_buf_append_str(&b, "\"{\" ws ");
    json_object_foreach(props, key, sub)
    {
        if (st != MT_OK)
            break;
        st = member(g, &b, key, sub, depth, first);
        first = 0;
    }
    if (st == MT_OK)
        st = mtx_buf_append_str(&b, " ws \"}\"");
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    return emit(g, &b, name, n);
}

static enum mt_status array_rule(struct gb *g, json_t *s, int depth, char *name,
                                 size_t n)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    json_t *items = json_object_get(s, "items");
    char it[32];
    enum mt_status st;

    if (!json_is_object(items)) {
        snprintf(name, n, "array");
        return MT_OK;
    }
    st = node(g, items, depth + 1, it, sizeof it);
    if (st == MT_OK)
        st = mtx_buf_printf(&b, "\"[\" ws (%s (\",\" ws %s)*)? ws \"]\"", it,
                            it);
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    return emit(g, &b, name, n);
}

static enum mt_status string_rule(struct gb *g, json_t *s, char *name, size_t n)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    json_t *max = json_object_get(s, "maxLength");
    enum mt_status st;

    if (!json_is_integer(max) || json_integer_value(max) < 0) {
        snprintf(name, n, "string");
        return MT_OK;
    }
    st = mtx_buf_printf(&b, "\"\\\"\" char{0,%lld} \"\\\"\"",
                        (long long)json_integer_value(max));
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    return emit(g, &b, name, n);
}

/* A rule for one type name. */
static enum mt_status type_rule(struct gb *g, json_t *s, const char *t,
                                int depth, char *name, size_t n)
{
    if (strcmp(t, "object") == 0)
        return object_rule(g, s, depth, name, n);
    if (strcmp(t, "array") == 0)
        return array_rule(g, s, depth, name, n);
    if (strcmp(t, "string") == 0)
        return string_rule(g, s, name, n);
    if (!strcmp(t, "number") || !strcmp(t, "integer") ||
        !strcmp(t, "boolean") || !strcmp(t, "null")) {
        snprintf(name, n, "%s", t);
        return MT_OK;
    }
    return mt_fail(g->err, MT_EUNSUPPORTED,
                   "schema: type '%s' is not "
                   "supported",
                   t);
}

/* "type": ["string", "null"] becomes an alternation. */
static enum mt_status union_rule(struct gb *g, json_t *s, json_t *types,
                                 int depth, char *name, size_t n)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    enum mt_status st = MT_OK;
    char alt[32];
    size_t i;

    for (i = 0; st == MT_OK && i < json_array_size(types); i++) {
        const char *t = json_string_value(json_array_get(types, i));
        st = t ? type_rule(g, s, t, depth, alt, sizeof alt)
               : mt_fail(g->err, MT_EPARSE, "schema: bad 'type' list");
        if (st == MT_OK)
            st = mtx_buf_printf(&b, "%s%s", i ? " | " : "", alt);
    }
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    return emit(g, &b, name, n);
}

/* "anyOf" / "oneOf": [A, B, ...] becomes the alternation A | B | ...
 * (a grammar cannot tell "exactly one" from "at least one"; the branches
 * the schemas use are disjoint, each pinning its own "name"). */
static enum mt_status alt_rule(struct gb *g, json_t *alts, int depth,
                               char *name, size_t n)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    enum mt_status st =
        json_array_size(alts)
            ? MT_OK
            : mt_fail(g->err, MT_EPARSE, "schema: 'anyOf' needs branches");
    char alt[32];
    size_t i;

    for (i = 0; st == MT_OK && i < json_array_size(alts); i++) {
        st = node(g, json_array_get(alts, i), depth + 1, alt, sizeof alt);
        if (st == MT_OK)
            st = mtx_buf_printf(&b, "%s%s", i ? " | " : "", alt);
    }
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st;
    }
    return emit(g, &b, name, n);
}

static enum mt_status node(struct gb *g, json_t *s, int depth, char *name,
                           size_t n)
{
    json_t *any = json_object_get(s, "anyOf");
    json_t *type = json_object_get(s, "type");
    json_t *c = json_object_get(s, "const");

    if (depth > GBNF_MAX_DEPTH)
        return mt_fail(g->err, MT_ELIMIT, "schema: nested too deeply");
    if (!json_is_object(s))
        return mt_fail(g->err, MT_EPARSE,
                       "schema: a schema must be an "
                       "object");
    if (!any)
        any = json_object_get(s, "oneOf");
    if (json_object_get(s, "enum"))
        return enum_rule(g, json_object_get(s, "enum"), name, n);
    if (json_is_array(any))
        return alt_rule(g, any, depth, name, n);
    if (c) {
        json_t *one = json_pack("[O]", c);
        enum mt_status st = enum_rule(g, one, name, n);
        json_decref(one);
        return st;
    }
    if (json_is_array(type))
        return union_rule(g, s, type, depth, name, n);
    if (!type && json_object_get(s, "properties"))
        return object_rule(g, s, depth, name, n);
    if (!type) {
        snprintf(name, n, "value");
        return MT_OK;
    }
    if (!json_is_string(type))
        return mt_fail(g->err, MT_EPARSE, "schema: bad 'type'");
    return type_rule(g, s, json_string_value(type), depth, name, n);
}

enum mt_status mtx_gbnf_from_schema(const char *schema, char **out,
                                    struct mt_error *err)
{
    struct gb g = {MT_BUF_INIT(MT_BUF_DEFAULT_MAX), 0, err};
    json_error_t je;
    json_t *s;
    char top[32];
    enum mt_status st;

    mtx_jsonl_init_alloc();
    s = json_loads(schema, 0, &je);
    if (!s)
        return mt_fail(err, MT_EPARSE, "schema is not JSON: %s (line %d)",
                       je.text, je.line);
    st = node(&g, s, 0, top, sizeof top);
    if (st == MT_OK)
        st = mtx_buf_printf(&g.out, "root ::= %s\n%s", top, builtins);
    json_decref(s);
    if (st != MT_OK) {
        mtx_buf_free(&g.out);
        return err && err->status == st ? st
                                        : mt_fail(err, st,
                                                  "schema: "
                                                  "out of memory");
    }
    *out = mtx_buf_take(&g.out);
    return MT_OK;
}
