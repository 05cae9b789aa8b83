// Xapian baseline (Debian libxapian-dev): indexes a medtrust store's
// chunks (document title then chunk text, one field) with the English
// stemmer and ranks with BM25Weight's defaults (k1 1, b 0.5), the query
// parsed by QueryParser (English stemmer, STEM_SOME, default OR).
//   bm25_xapian quality STORE_DIR QRELS.tsv OUT_DIR
//       per-document nDCG@10 / MRR@10 (a document's best chunk stands for
//       it, top 10 distinct documents), as medtrust retrieval-eval does;
//   bm25_xapian speed STORE_DIR QUERIES.txt OUT_DIR [REPS]
//       build throughput and single-thread top-10 mean latency.
// Prints one JSON object.
#include <sqlite3.h>
#include <xapian.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_util.h"

struct Corpus {
    std::vector<uint32_t> doc_of_xid; // Xapian docid -> store document id
    std::unordered_map<uint32_t, std::string> ext_of; // document -> ext_id
    uint64_t chunks = 0;
};

// Builds the database from the store's chunks; returns seconds.
static double build(const std::string &store, const std::string &out,
                    Corpus &c, bool want_docs)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    std::string uri = "file:" + store + "/store.db?mode=ro";
    if (sqlite3_open_v2(uri.c_str(), &db,
                        SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                        nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT c.id, c.doc_id, d.title, c.text, "
                           "d.ext_id FROM chunk_texts c JOIN documents d ON "
                           "d.id = c.doc_id ORDER BY c.id",
                           -1, &st, nullptr) != SQLITE_OK) {
        std::fprintf(stderr, "bm25_xapian: %s\n", sqlite3_errmsg(db));
        std::exit(1);
    }
    double t0 = bu_now_ms();
    Xapian::WritableDatabase xdb(out, Xapian::DB_CREATE_OR_OVERWRITE);
    Xapian::TermGenerator tg;
    tg.set_stemmer(Xapian::Stem("english"));
    c.doc_of_xid.push_back(0);
    while (sqlite3_step(st) == SQLITE_ROW) {
        Xapian::Document doc;
        tg.set_document(doc);
        const char *title = (const char *)sqlite3_column_text(st, 2);
        if (title) {
            tg.index_text(title);
            tg.increase_termpos();
        }
        tg.index_text((const char *)sqlite3_column_text(st, 3));
        xdb.add_document(doc);
        uint32_t d = (uint32_t)sqlite3_column_int64(st, 1);
        if (want_docs) {
            c.doc_of_xid.push_back(d);
            if (!c.ext_of.count(d))
                c.ext_of[d] = (const char *)sqlite3_column_text(st, 4);
        }
        c.chunks++;
    }
    xdb.commit();
    xdb.close();
    double secs = (bu_now_ms() - t0) / 1e3;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return secs;
}

static Xapian::Query parse(Xapian::QueryParser &qp, const char *q)
{
    try {
        return qp.parse_query(q);
    } catch (const Xapian::QueryParserError &) {
        return qp.parse_query(q, 0); // no operators: words only
    }
}

// The query side of the comparison: English stemmer (STEM_SOME), words
// OR-ed, the same for the quality and the speed runs.
static Xapian::QueryParser make_parser(Xapian::Database &db)
{
    Xapian::QueryParser qp;
    qp.set_stemmer(Xapian::Stem("english"));
    qp.set_stemming_strategy(Xapian::QueryParser::STEM_SOME);
    qp.set_default_op(Xapian::Query::OP_OR);
    qp.set_database(db);
    return qp;
}

static void quality(const std::string &out, Corpus &c, const char *qrels)
{
    size_t nq = 0;
    char **lines = bu_lines(qrels, &nq);
    Xapian::Database db(out);
    Xapian::Enquire enq(db);
    enq.set_weighting_scheme(Xapian::BM25Weight());
    Xapian::QueryParser qp = make_parser(db);
    double ndcg = 0.0, mrr = 0.0, t0 = bu_now_ms();
    for (size_t i = 0; i < nq; i++) {
        bu_qrel q;
        bu_qrel_parse(lines[i], &q);
        enq.set_query(parse(qp, q.query));
        Xapian::MSet ms = enq.get_mset(0, 200);
        std::vector<uint32_t> docs;
        int rel[10];
        for (auto it = ms.begin(); it != ms.end() && docs.size() < 10; ++it) {
            uint32_t d = c.doc_of_xid[*it];
            bool seen = false;
            for (uint32_t x : docs)
                seen = seen || x == d;
            if (!seen) {
                rel[docs.size()] = bu_is_rel(&q, c.ext_of[d].c_str());
                docs.push_back(d);
            }
        }
        ndcg += bu_ndcg10(rel, docs.size(), q.nrel);
        mrr += bu_mrr10(rel, docs.size());
    }
    std::printf("\"queries\":%zu,\"ndcg10\":%.4f,\"mrr10\":%.4f,"
                "\"ms_per_query\":%.3f}\n",
                nq, ndcg / (double)nq, mrr / (double)nq,
                (bu_now_ms() - t0) / (double)nq);
}

static double pass(Xapian::Enquire &enq, Xapian::QueryParser &qp,
                   char **lines, size_t nq)
{
    double t0 = bu_now_ms();
    for (size_t i = 0; i < nq; i++) {
        enq.set_query(parse(qp, lines[i]));
        Xapian::MSet ms = enq.get_mset(0, 10);
        (void)ms.size();
    }
    return (bu_now_ms() - t0) / (double)nq;
}

static void speed(const std::string &out, const char *queries, int reps)
{
    size_t nq = 0;
    char **lines = bu_lines(queries, &nq);
    Xapian::Database db(out);
    Xapian::Enquire enq(db);
    enq.set_weighting_scheme(Xapian::BM25Weight());
    Xapian::QueryParser qp = make_parser(db);
    pass(enq, qp, lines, nq < 100 ? nq : 100); // warm-up
    std::vector<double> ms;
    for (int r = 0; r < reps; r++)
        ms.push_back(pass(enq, qp, lines, nq));
    std::printf("\"queries\":%zu,\"reps\":%d,\"ms_per_query\":%.4f,"
                "\"rss\":%llu}\n",
                nq, reps, bu_median(ms.data(), ms.size()),
                (unsigned long long)bu_rss());
}

int main(int argc, char **argv)
{
    if (argc < 5 || (std::strcmp(argv[1], "quality") &&
                     std::strcmp(argv[1], "speed"))) {
        std::fprintf(stderr, "usage: bm25_xapian quality|speed STORE_DIR "
                             "QUERIES OUT_DIR [REPS]\n");
        return 2;
    }
    bool qual = std::strcmp(argv[1], "quality") == 0;
    Corpus c;
    double secs = build(argv[2], argv[4], c, qual);
    std::printf("{\"engine\":\"xapian\",\"clock\":\"%s\",\"version\":\"%s\",\"chunks\":%llu,"
                "\"build_s\":%.2f,\"chunks_per_s\":%.0f,",
                bu_clock_name(), Xapian::version_string(),
                (unsigned long long)c.chunks, secs,
                (double)c.chunks / secs);
    if (qual)
        quality(argv[4], c, argv[3]);
    else
        speed(argv[4], argv[3], argc > 5 ? std::atoi(argv[5]) : 3);
    return 0;
}
