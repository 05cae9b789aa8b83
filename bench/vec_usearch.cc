// USearch baseline (npm usearch@2.26.2, its C++ headers include/usearch/
// with the NumKong kernels it ships, header-only, -O3 -march=native) over
// vec_gen's data: for each scalar kind (f32, i8) and each build thread
// count, a graph with M 16 (level 0: 32) and expansion_add 200, built by
// the wall clock (and the bench clock), its memory, and an ef sweep of
// latency and recall@10 against exact float on one thread. The vectors
// are unit length, so USearch's cosine metric ranks as inner product does
// (its i8 kind is meant for cosine: it scales each component by 127).
// Usage: vec_usearch DATADIR N DIMS Q KINDS THREADS
//   KINDS "f32,i8", THREADS "1,2" (every kind is built with every count)
// Prints one JSON object.
#include <usearch/index_dense.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

using namespace unum::usearch;

static const size_t efs[] = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512,
                             768, 1024};

struct data {
    float *base, *q;
    uint32_t *gt;
    size_t n, d, nq;
};

static std::vector<std::string> split(const char *s)
{
    std::vector<std::string> out;
    std::string cur;
    for (; *s; s++) {
        if (*s == ',') {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += *s;
        }
    }
    if (!cur.empty())
        out.push_back(cur);
    return out;
}

static void sweep(index_dense_t &ix, const data &dt)
{
    for (size_t i = 0; i < 100 && i < dt.nq; i++) { // warm-up
        ix.change_expansion_search(128);
        ix.search(dt.q + i * dt.d, 10, 0);
    }
    size_t nefs = sizeof efs / sizeof efs[0];
    for (size_t e = 0; e < nefs; e++) {
        ix.change_expansion_search(efs[e]);
        double rec = 0.0, t0 = bu_now_ms();
        for (size_t i = 0; i < dt.nq; i++) {
            auto res = ix.search(dt.q + i * dt.d, 10, 0);
            uint32_t ids[10];
            uint32_t k = 0;
            for (size_t j = 0; j < res.size() && k < 10; j++)
                ids[k++] = (uint32_t)res[j].member.key;
            rec += bu_recall10(ids, k, dt.gt + i * 10);
        }
        double ms = (bu_now_ms() - t0) / (double)dt.nq;
        std::printf("{\"ef\":%zu,\"ms\":%.4f,\"recall10\":%.4f}%s", efs[e],
                    ms, rec / (double)dt.nq, e + 1 == nefs ? "" : ",");
    }
}

// Adds vectors [0, n) on 'nt' threads (thread t takes every nt-th id, as
// USearch's own benchmarks share the work out).
static bool add_all(index_dense_t &ix, const data &dt, size_t nt)
{
    std::vector<std::thread> pool;
    std::vector<int> ok(nt, 1);
    for (size_t t = 0; t < nt; t++)
        pool.emplace_back([&, t] {
            for (size_t i = t; i < dt.n; i += nt)
                if (!ix.add((default_key_t)i, dt.base + i * dt.d, t))
                    ok[t] = 0;
        });
    for (auto &th : pool)
        th.join();
    for (int v : ok)
        if (!v)
            return false;
    return true;
}

static bool bench_one(const data &dt, const std::string &dir,
                      scalar_kind_t kind, const char *kname, size_t nt,
                      bool first)
{
    metric_punned_t metric(dt.d, metric_kind_t::cos_k, kind);
    index_dense_config_t cfg(16, 200, 128);
    uint64_t rss0 = bu_rss();
    auto made = index_dense_t::make(metric, cfg, default_free_value<
                                    default_key_t>(),
                                    index_limits_t(dt.n, nt));
    if (!made) {
        std::fprintf(stderr, "vec_usearch: %s\n", made.error.release());
        return false;
    }
    index_dense_t ix = std::move(made.index);
    double t0 = bu_now_ms(), w0 = bu_wall_ms();
    if (!add_all(ix, dt, nt))
        return false;
    double wall = bu_wall_ms() - w0, build = bu_now_ms() - t0;
    uint64_t rss1 = bu_rss();
    std::string path = dir + "/usearch.bin";
    if (!ix.save(path.c_str()))
        return false;
    std::printf("%s{\"scalar\":\"%s\",\"M\":16,\"ef_construction\":200,"
                "\"threads\":%zu,\"build_s\":%.2f,\"build_wall_s\":%.2f,"
                "\"load\":\"%s\",\"index_rss\":%llu,\"memory_usage\":%zu,"
                "\"file_bytes\":%llu,\"sweep\":[",
                first ? "" : ",", kname, nt, build / 1e3, wall / 1e3,
                bu_loadavg(), (unsigned long long)(rss1 - rss0),
                ix.memory_usage(),
                (unsigned long long)bu_file_size(path.c_str()));
    std::remove(path.c_str());
    sweep(ix, dt);
    std::printf("]}");
    std::fflush(stdout);
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        std::fprintf(stderr,
                     "usage: vec_usearch DATADIR N DIMS Q KINDS THREADS\n");
        return 2;
    }
    data dt;
    std::string dir = argv[1];
    dt.n = std::strtoull(argv[2], nullptr, 10);
    dt.d = std::strtoul(argv[3], nullptr, 10);
    dt.nq = std::strtoul(argv[4], nullptr, 10);
    size_t sz = 0;
    dt.base = (float *)bu_load((dir + "/base.f32").c_str(), &sz);
    if (!dt.base || sz != dt.n * dt.d * sizeof(float))
        return 1;
    dt.q = (float *)bu_load((dir + "/query.f32").c_str(), &sz);
    if (!dt.q || sz != dt.nq * dt.d * sizeof(float))
        return 1;
    dt.gt = (uint32_t *)bu_load((dir + "/gt.u32").c_str(), &sz);
    if (!dt.gt || sz != dt.nq * 10 * sizeof(uint32_t))
        return 1;
    // the kernels NumKong picked at run time for each kind
    metric_punned_t mf(dt.d, metric_kind_t::cos_k, scalar_kind_t::f32_k);
    metric_punned_t mi(dt.d, metric_kind_t::cos_k, scalar_kind_t::i8_k);
    std::printf("{\"engine\":\"usearch\",\"version\":\"%d.%d.%d\","
                "\"isa_f32\":\"%s\",\"isa_i8\":\"%s\","
                "\"clock\":\"%s\",\"n\":%zu,\"dims\":%zu,\"queries\":%zu,"
                "\"builds\":[",
                USEARCH_VERSION_MAJOR, USEARCH_VERSION_MINOR,
                USEARCH_VERSION_PATCH, mf.isa_name(), mi.isa_name(),
                bu_clock_name(), dt.n, dt.d, dt.nq);
    bool first = true;
    for (const std::string &k : split(argv[5])) {
        scalar_kind_t kind = k == "i8" ? scalar_kind_t::i8_k
                                       : scalar_kind_t::f32_k;
        for (const std::string &t : split(argv[6])) {
            size_t nt = std::strtoul(t.c_str(), nullptr, 10);
            if (nt == 0)
                nt = std::thread::hardware_concurrency();
            if (!bench_one(dt, dir, kind, k == "i8" ? "i8" : "f32", nt,
                           first))
                return 1;
            first = false;
        }
    }
    std::printf("]}\n");
    return 0;
}
