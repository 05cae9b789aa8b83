/* SQLite FTS5 baseline: indexes a medtrust store's chunks (document title
 * and chunk text as two columns, tokenize 'porter unicode61') and ranks
 * with FTS5's bm25() (k1 1.2, b 0.75, column weights 1), the query's
 * words OR-ed together.
 *   bm25_fts5 quality STORE_DIR QRELS.tsv OUT.db
 *       per-document nDCG@10 / MRR@10 (a document's best chunk stands for
 *       it, top 10 distinct documents), as medtrust retrieval-eval does;
 *   bm25_fts5 speed STORE_DIR QUERIES.txt OUT.db [REPS]
 *       build throughput and single-thread top-10 mean latency.
 * Prints one JSON object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "bench_util.h"

#define DEPTH 200 /* chunks fetched to find 10 distinct documents */

struct corpus {
    int64_t max_id;
    uint32_t *doc_of; /* chunk id -> document row id */
    char **ext_of;    /* document row id -> ext_id */
    int64_t max_doc;
    uint64_t chunks;
};

static void die(sqlite3 *db, const char *what)
{
    fprintf(stderr, "bm25_fts5: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        die(db, sql);
}

/* Builds the FTS5 table from the store's chunks; returns seconds. */
static double build(sqlite3 *db, const char *store_dir, struct corpus *c)
{
    char sql[4400];
    sqlite3_stmt *rd, *ins;
    double t0 = bu_now_ms();

    snprintf(sql, sizeof sql, "ATTACH 'file:%s/store.db?mode=ro' AS s",
             store_dir);
    exec(db, sql);
    exec(db, "CREATE VIRTUAL TABLE f USING fts5(title, text, "
             "tokenize = 'porter unicode61')");
    exec(db, "BEGIN");
    if (sqlite3_prepare_v2(db,
                           "SELECT c.id, d.title, c.text FROM s.chunk_texts c "
                           "JOIN s.documents d ON d.id = c.doc_id "
                           "ORDER BY c.id",
                           -1, &rd, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO f(rowid, title, text) "
                           "VALUES (?1, ?2, ?3)",
                           -1, &ins, NULL) != SQLITE_OK)
        die(db, "prepare");
    while (sqlite3_step(rd) == SQLITE_ROW) {
        sqlite3_bind_int64(ins, 1, sqlite3_column_int64(rd, 0));
        sqlite3_bind_value(ins, 2, sqlite3_column_value(rd, 1));
        sqlite3_bind_value(ins, 3, sqlite3_column_value(rd, 2));
        if (sqlite3_step(ins) != SQLITE_DONE)
            die(db, "insert");
        sqlite3_reset(ins);
        c->chunks++;
    }
    sqlite3_finalize(rd);
    sqlite3_finalize(ins);
    exec(db, "COMMIT");
    return (bu_now_ms() - t0) / 1e3;
}

/* Loads chunk -> document -> ext_id maps for per-document evaluation. */
static void load_docs(sqlite3 *db, struct corpus *c)
{
    sqlite3_stmt *st;

    sqlite3_prepare_v2(db, "SELECT max(id) FROM s.chunks", -1, &st, NULL);
    sqlite3_step(st);
    c->max_id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_prepare_v2(db, "SELECT max(id) FROM s.documents", -1, &st, NULL);
    sqlite3_step(st);
    c->max_doc = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    c->doc_of = calloc((size_t)c->max_id + 1, sizeof *c->doc_of);
    c->ext_of = calloc((size_t)c->max_doc + 1, sizeof *c->ext_of);
    sqlite3_prepare_v2(db, "SELECT id, doc_id FROM s.chunks", -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW)
        c->doc_of[sqlite3_column_int64(st, 0)] =
            (uint32_t)sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    sqlite3_prepare_v2(db, "SELECT id, ext_id FROM s.documents", -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW)
        c->ext_of[sqlite3_column_int64(st, 0)] =
            strdup((const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
}

/* FTS5 query text: the query's words (runs of ASCII letters and digits or
 * non-ASCII bytes), each quoted, joined by OR. */
static void to_match(const char *q, char *out, size_t cap)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)q;

    out[0] = '\0';
    while (*p) {
        const unsigned char *s;
        while (*p && !(*p >= 0x80 || (*p >= '0' && *p <= '9') ||
                       ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')))
            p++;
        s = p;
        while (*p >= 0x80 || (*p >= '0' && *p <= '9') ||
               ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))
            p++;
        if (p > s && n + (size_t)(p - s) + 8 < cap)
            n += (size_t)snprintf(out + n, cap - n, "%s\"%.*s\"",
                                  n ? " OR " : "", (int)(p - s),
                                  (const char *)s);
    }
}

static void quality(sqlite3 *db, struct corpus *c, const char *qrels)
{
    size_t nq = 0, i;
    char **lines = bu_lines(qrels, &nq);
    sqlite3_stmt *st;
    double ndcg = 0.0, mrr = 0.0, t0 = bu_now_ms();
    char match[8192];

    load_docs(db, c);
    if (sqlite3_prepare_v2(db,
                           "SELECT rowid FROM f WHERE f MATCH ?1 "
                           "ORDER BY rank LIMIT 200",
                           -1, &st, NULL) != SQLITE_OK)
        die(db, "prepare");
    for (i = 0; i < nq; i++) {
        struct bu_qrel q;
        uint32_t docs[10];
        int rel[10];
        size_t nd = 0, j;
        bu_qrel_parse(lines[i], &q);
        to_match(q.query, match, sizeof match);
        sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
        while (nd < 10 && match[0] && sqlite3_step(st) == SQLITE_ROW) {
            uint32_t d = c->doc_of[sqlite3_column_int64(st, 0)];
            for (j = 0; j < nd && docs[j] != d; j++)
                ;
            if (j == nd) {
                rel[nd] = bu_is_rel(&q, c->ext_of[d]);
                docs[nd++] = d;
            }
        }
        sqlite3_reset(st);
        ndcg += bu_ndcg10(rel, nd, q.nrel);
        mrr += bu_mrr10(rel, nd);
    }
    printf("\"queries\":%zu,\"ndcg10\":%.4f,\"mrr10\":%.4f,"
           "\"ms_per_query\":%.3f}\n",
           nq, ndcg / (double)nq, mrr / (double)nq,
           (bu_now_ms() - t0) / (double)nq);
    sqlite3_finalize(st);
}

/* One pass over the queries; returns the mean milliseconds a query. */
static double pass(sqlite3_stmt *st, char **lines, size_t nq)
{
    char match[8192];
    double t0 = bu_now_ms();
    size_t i;

    for (i = 0; i < nq; i++) {
        to_match(lines[i], match, sizeof match);
        sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
        while (match[0] && sqlite3_step(st) == SQLITE_ROW)
            ;
        sqlite3_reset(st);
    }
    return (bu_now_ms() - t0) / (double)nq;
}

static void speed(sqlite3 *db, const char *queries, int reps)
{
    size_t nq = 0;
    char **lines = bu_lines(queries, &nq);
    sqlite3_stmt *st;
    double ms[16];
    double t0 = bu_now_ms();
    int r;

    exec(db, "INSERT INTO f(f) VALUES ('optimize')");
    printf("\"optimize_s\":%.2f,", (bu_now_ms() - t0) / 1e3);
    if (sqlite3_prepare_v2(db,
                           "SELECT rowid, bm25(f) FROM f WHERE f MATCH ?1 "
                           "ORDER BY rank LIMIT 10",
                           -1, &st, NULL) != SQLITE_OK)
        die(db, "prepare");
    pass(st, lines, nq < 100 ? nq : 100); /* warm-up */
    for (r = 0; r < reps && r < 16; r++)
        ms[r] = pass(st, lines, nq);
    printf("\"queries\":%zu,\"reps\":%d,\"ms_per_query\":%.4f,"
           "\"rss\":%llu}\n",
           nq, reps, bu_median(ms, (size_t)r), (unsigned long long)bu_rss());
    sqlite3_finalize(st);
}

int main(int argc, char **argv)
{
    struct corpus c = {0};
    sqlite3 *db;
    double secs;

    if (argc < 5 || (strcmp(argv[1], "quality") && strcmp(argv[1], "speed"))) {
        fprintf(stderr, "usage: bm25_fts5 quality|speed STORE_DIR "
                        "QUERIES OUT.db [REPS]\n");
        return 2;
    }
    remove(argv[4]);
    if (sqlite3_open_v2(argv[4], &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK)
        die(db, argv[4]);
    exec(db, "PRAGMA cache_size = -262144"); /* 256 MiB page cache */
    secs = build(db, argv[2], &c);
    printf("{\"engine\":\"fts5\",\"clock\":\"%s\",\"sqlite\":\"%s\",\"chunks\":"
           "%llu,"
           "\"build_s\":%.2f,\"chunks_per_s\":%.0f,",
           bu_clock_name(), sqlite3_libversion(), (unsigned long long)c.chunks,
           secs, (double)c.chunks / secs);
    if (strcmp(argv[1], "quality") == 0) {
        quality(db, &c, argv[3]);
    } else {
        speed(db, argv[3], argc > 5 ? atoi(argv[5]) : 1);
    }
    sqlite3_close(db);
    return 0;
}
