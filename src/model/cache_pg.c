/* The model call cache in PostgreSQL (model/cache_pg.h). Responses are
 * bytea, sent and read as hex so that binary values (embeddings) pass
 * through libpq's text parameters. The unique key is (hash, backend,
 * model, md5(request)): a btree cannot hold a whole long prompt, and the
 * lookup still compares the full request. */
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "model/cache_pg.h"

static const struct mtx_pg_migration cache_steps[] = {
    {1, "CREATE TABLE model_calls ("
        " hash BIGINT NOT NULL, backend TEXT NOT NULL, model TEXT NOT NULL,"
        " request TEXT NOT NULL, response BYTEA NOT NULL,"
        " created TIMESTAMPTZ NOT NULL DEFAULT now());"
        "CREATE UNIQUE INDEX model_calls_key ON model_calls"
        " (hash, backend, model, md5(request));"},
};

enum mt_status mtx_cache_pg_open(const char *url, struct mtx_pg **out,
                                 struct mt_error *err)
{
    return mtx_pg_open_migrated(url, "cache", cache_steps,
                                sizeof cache_steps / sizeof cache_steps[0], out,
                                err);
}

static int unhex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* bytea in hex output form, "\x0a1b...", to a NUL-terminated copy. */
static enum mt_status from_hex(const char *h, char **val, size_t *n)
{
    size_t len = strlen(h), i;
    char *v;

    if (len < 2 || h[0] != '\\' || h[1] != 'x' || len % 2)
        return MT_EPARSE;
    v = mt_malloc((len - 2) / 2 + 1);
    if (!v)
        return MT_ENOMEM;
    for (i = 0; i < (len - 2) / 2; i++) {
        int a = unhex(h[2 + 2 * i]), b = unhex(h[3 + 2 * i]);

        if (a < 0 || b < 0) {
            mt_free(v);
            return MT_EPARSE;
        }
        v[i] = (char)(a * 16 + b);
    }
    v[i] = '\0';
    *val = v;
    *n = i;
    return MT_OK;
}

static char *to_hex(const void *val, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = val;
    char *h = mt_malloc(2 * n + 1);
    size_t i;

    if (!h)
        return NULL;
    for (i = 0; i < n; i++) {
        h[2 * i] = digits[p[i] >> 4];
        h[2 * i + 1] = digits[p[i] & 15];
    }
    h[2 * n] = '\0';
    return h;
}

enum mt_status mtx_cache_pg_get(struct mtx_pg *pg, int64_t hash,
                                const char *backend, const char *model,
                                const char *request, char **val, size_t *n,
                                struct mt_error *err)
{
    char hb[24];
    const char *pa[4] = {mtx_pg_i64(hb, hash), backend, model, request};
    PGresult *r = NULL;
    enum mt_status st = mtx_pg_exec(
        pg,
        "SELECT response FROM model_calls WHERE hash = $1::bigint AND"
        " backend = $2 AND model = $3 AND md5(request) = md5($4) AND"
        " request = $4 LIMIT 1",
        4, pa, &r, err);

    if (st != MT_OK)
        return st;
    st = PQntuples(r) == 1 ? from_hex(mtx_pg_text(r, 0, 0), val, n)
                           : MT_ENOTFOUND;
    PQclear(r);
    if (st == MT_EPARSE || st == MT_ENOMEM)
        return mt_fail(err, st, "call cache %s: unreadable response",
                       mtx_pg_where(pg));
    return st;
}

enum mt_status mtx_cache_pg_put(struct mtx_pg *pg, int64_t hash,
                                const char *backend, const char *model,
                                const char *request, const void *val, size_t n,
                                struct mt_error *err)
{
    char hb[24];
    char *hex = to_hex(val, n);
    const char *pa[5] = {mtx_pg_i64(hb, hash), backend, model, request, hex};
    enum mt_status st;

    if (!hex)
        return mt_fail(err, MT_ENOMEM, "call cache: out of memory");
    /* an absolute write: harmless when sent again after a lost reply */
    st = mtx_pg_cmd(pg,
                    "INSERT INTO model_calls (hash, backend, model, request,"
                    " response) VALUES ($1::bigint, $2, $3, $4,"
                    " decode($5, 'hex')) ON CONFLICT (hash, backend, model,"
                    " md5(request)) DO UPDATE SET response = EXCLUDED.response",
                    5, pa, NULL, err);
    mt_free(hex);
    return st;
}

size_t mtx_cache_pg_count(struct mtx_pg *pg)
{
    PGresult *r = NULL;
    size_t n = 0;

    if (mtx_pg_exec(pg, "SELECT count(*) FROM model_calls", 0, NULL, &r,
                    NULL) == MT_OK)
        n = (size_t)mtx_pg_int(r, 0, 0);
    PQclear(r);
    return n;
}
