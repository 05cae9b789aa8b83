/* Secrets cut out of text that shows a model spec or URL: the user info
 * of every URL and the values of key-like query parameters. */
#include <ctype.h>
#include <string.h>

#include "core/redact.h"
#include "medtrust/core.h"

/* A bounded writer that counts what it would have written. */
struct out {
    char *p;
    size_t cap, n;
};

static void put(struct out *o, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++, o->n++)
        if (o->cap && o->n < o->cap - 1)
            o->p[o->n] = s[i];
}

/* Where a URL stops in running text (an error message, a log line). */
static int url_end(char c)
{
    return c == '\0' || isspace((unsigned char)c) || c == '"' || c == '\'' ||
           c == '<' || c == '>' || c == '`';
}

/* Whether a ',' at s starts the next URL of a pool ("scheme://"). */
static int next_url(const char *s)
{
    const char *p = s + 1;

    if (*s != ',' || !isalpha((unsigned char)*p))
        return 0;
    while (isalnum((unsigned char)*p) || *p == '+' || *p == '.' || *p == '-')
        p++;
    return strncmp(p, "://", 3) == 0;
}

/* Parameter names that carry credentials, matched as parts of the
 * lower-cased name (api_key, apiKey, access_token, X-Amz-Signature). */
static int key_like(const char *name, size_t n)
{
    static const char *const parts[] = {"key",  "token", "secret",
                                        "pass", "pwd",   "auth",
                                        "sig",  "cred",  "session"};
    char low[64];
    size_t i;

    if (n == 0)
        return 0;
    if (n >= sizeof low)
        return 1; /* a name that long is no setting we know: hide it */
    for (i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = '\0';
    for (i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(low, parts[i]))
            return 1;
    return 0;
}

/* Host part after "://": up to the path, query or fragment. The last '@'
 * in it ends the user info, which is replaced. Returns where it ended. */
static const char *authority(const char *s, struct out *o)
{
    const char *e = s;
    const char *at = NULL;

    while (!url_end(*e) && *e != '/' && *e != '?' && *e != '#' &&
           !next_url(e)) {
        if (*e == '@')
            at = e;
        e++;
    }
    if (at) {
        put(o, MTX_REDACTED "@", sizeof MTX_REDACTED);
        s = at + 1;
    }
    put(o, s, (size_t)(e - s));
    return e;
}

/* A parameter value ends at '&', ';', '#', the end of the URL, or a ','
 * that starts the next URL of a pool. */
static int value_end(const char *v)
{
    return url_end(*v) || *v == '&' || *v == ';' || *v == '#' || next_url(v);
}

/* The query after '?': key-like parameters get their value replaced. */
static const char *query(const char *s, struct out *o)
{
    while (!value_end(s) || *s == '&' || *s == ';') {
        const char *name = s;
        const char *v;

        while (!value_end(s) && *s != '=')
            s++;
        put(o, name, (size_t)(s - name));
        if (*s != '=') {
            if (*s == '&' || *s == ';')
                put(o, s++, 1);
            continue;
        }
        put(o, s++, 1);
        for (v = s; !value_end(s); s++)
            ;
        if (key_like(name, (size_t)(v - 1 - name)))
            put(o, MTX_REDACTED, sizeof MTX_REDACTED - 1);
        else
            put(o, v, (size_t)(s - v));
    }
    return s;
}

/* The rest of one URL after "://"; returns where it ended. */
static const char *url(const char *s, struct out *o)
{
    const char *p;

    s = authority(s, o);
    for (p = s; !url_end(*p) && *p != '?' && *p != '#' && !next_url(p); p++)
        ;
    put(o, s, (size_t)(p - s));
    if (*p != '?')
        return p;
    put(o, p, 1);
    return query(p + 1, o);
}

size_t mtx_redact(const char *in, char *out, size_t cap)
{
    struct out o = {out, cap, 0};
    const char *s = in ? in : "";

    while (*s) {
        const char *u = strstr(s, "://");
        if (!u) {
            put(&o, s, strlen(s));
            break;
        }
        put(&o, s, (size_t)(u + 3 - s));
        s = url(u + 3, &o);
    }
    if (cap)
        out[o.n < cap ? o.n : cap - 1] = '\0';
    return o.n;
}

char *mtx_redact_dup(const char *in)
{
    size_t n;
    char *r;

    if (!in)
        return NULL;
    n = mtx_redact(in, NULL, 0);
    r = mt_malloc(n + 1);
    if (r)
        mtx_redact(in, r, n + 1);
    return r;
}

void mtx_redact_inplace(char *s, size_t cap)
{
    char tmp[2048];
    char *buf = tmp;

    if (!s || !cap || !strstr(s, "://"))
        return;
    if (cap > sizeof tmp)
        buf = mt_malloc(cap);
    if (!buf) {
        s[0] = '\0'; /* never show what could not be checked */
        return;
    }
    mtx_redact(s, buf, cap);
    memcpy(s, buf, strlen(buf) + 1);
    if (buf != tmp)
        mt_free(buf);
}
