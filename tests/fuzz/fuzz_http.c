/* libFuzzer harness for the server's request handling: the input is a raw
 * HTTP/1.1 request (request line, headers, body), split and percent-decoded
 * as libmicrohttpd would, then routed through mtx_srv_handle: route
 * matching, cookie and Bearer parsing, CSRF checks, JSON bodies, static
 * files. The server context (a store in /tmp with one user) is made once.
 * Build from the repository root (the library with clang and coverage):
 *   make BUILD=build/fuzz CC=clang OPT="-O1 -g" \
 *     EXTRA_CFLAGS=-fsanitize=fuzzer-no-link,address,undefined \
 *     build/fuzz/libmedtrust.a
 *   clang -std=c11 -D_DEFAULT_SOURCE -g -O1 \
 *     -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *     tests/fuzz/fuzz_http.c build/fuzz/libmedtrust.a \
 *     $(make -s print-libs ...) or: -lsqlite3 -ljansson -lutf8proc \
 *     -lstemmer -lcurl -lmicrohttpd -lsodium -lpthread -lm \
 *     -o build/fuzz/fuzz_http
 *   build/fuzz/fuzz_http -max_len=8192 tests/fuzz/http_seeds
 * (add the llama libraries of mk/model.mk when third_party has them). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "server/srv_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HDRS 32

struct parsed {
    char *buf; /* copy of the input, cut in place */
    char *method, *path, *query;
    char *names[MAX_HDRS], *values[MAX_HDRS];
    size_t nh;
    char *body;
    size_t body_len;
};

static struct mt_server *srv;

static void make_server(void)
{
    static char dir[] = "/tmp/mt-fuzz-http-XXXXXX";
    struct mt_server_params p;
    struct mt_state *s = NULL;
    char db[64];

    mtx_jsonl_init_alloc();
    if (!mkdtemp(dir))
        abort();
    snprintf(db, sizeof db, "%s/db", dir);
    if (mt_state_open(db, &s, NULL) != MT_OK)
        abort();
    mt_user_add(s, "fuzz", "fuzz-password", MT_ROLE_ADMIN, NULL, NULL);
    mt_state_close(s);
    mt_server_default_params(&p);
    p.db_dir = db;
    p.rate_per_s = 0;
    p.test_routes = 1;
    p.llm_jobs = 1;
    srv = mt_calloc(1, sizeof *srv);
    if (!srv || mtx_srv_init(srv, &p, NULL) != MT_OK)
        abort();
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes in place, as libmicrohttpd does for the path. */
static void unescape(char *s)
{
    char *w = s;

    for (; *s; s++) {
        if (s[0] == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
            *w++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
            s += 2;
        } else {
            *w++ = *s;
        }
    }
    *w = '\0';
}

static char *cut(char **p, const char *sep)
{
    char *start = *p;
    char *e = start ? strstr(start, sep) : NULL;

    if (!e)
        return NULL;
    *e = '\0';
    *p = e + strlen(sep);
    return start;
}

static int parse(struct parsed *r)
{
    char *p = r->buf;
    char *line = cut(&p, "\r\n");
    char *h;

    if (!line || !(r->method = cut(&line, " ")) || !(r->path = cut(&line, " ")))
        return -1;
    r->query = strchr(r->path, '?');
    if (r->query)
        *r->query++ = '\0';
    unescape(r->path);
    while ((h = cut(&p, "\r\n")) != NULL && *h && r->nh < MAX_HDRS) {
        char *v = strchr(h, ':');
        if (!v)
            return -1;
        *v++ = '\0';
        r->names[r->nh] = h;
        r->values[r->nh++] = v + strspn(v, " \t");
    }
    r->body = p ? p : (char *)"";
    r->body_len = strlen(r->body);
    return 0;
}

static const char *header(void *ctx, const char *name)
{
    const struct parsed *r = ctx;
    size_t i;

    for (i = 0; i < r->nh; i++)
        if (strcasecmp(r->names[i], name) == 0)
            return r->values[i];
    return NULL;
}

static const char *arg(void *ctx, const char *name)
{
    const struct parsed *r = ctx;
    const char *q = r->query;
    size_t n = strlen(name);

    while (q && *q) {
        if (strncmp(q, name, n) == 0 && q[n] == '=')
            return q + n + 1; /* runs to the end: good enough here */
        q = strchr(q, '&');
        if (q)
            q++;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct parsed r;
    struct srv_req rq;
    struct srv_resp rs;

    if (!srv)
        make_server();
    memset(&r, 0, sizeof r);
    r.buf = mt_malloc(size + 1);
    if (!r.buf)
        return 0;
    memcpy(r.buf, data, size);
    r.buf[size] = '\0';
    if (parse(&r) == 0) {
        memset(&rq, 0, sizeof rq);
        memset(&rs, 0, sizeof rs);
        rq.method = r.method;
        rq.path = r.path;
        rq.header = header;
        rq.arg = arg;
        rq.ctx = &r;
        rq.body = r.body;
        rq.body_len = r.body_len;
        rq.remote = "127.0.0.1";
        mtx_srv_handle(srv, &rq, &rs);
        if (rs.status < 200 || rs.status > 599)
            abort();
        mtx_srv_resp_free(&rs);
    }
    mt_free(r.buf);
    return 0;
}
