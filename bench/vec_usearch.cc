// USearch baseline (npm usearch@2.26.2, its C++ headers include/usearch/
// with the NumKong kernels it ships, header-only, -O3 -march=native) over
// vec_gen's data: for each scalar kind (f32, i8) and each build thread
// count, a graph with M 16 (level 0: 32) and expansion_add 200, built by
// the wall clock (and the bench clock), its memory, and an ef sweep of
// latency and recall@10 against exact float on one thread. The vectors
// are unit length, so USearch's cosine metric ranks as inner product does
// (its i8 kind is meant for cosine: it scales each component by 127).
// Usage: vec_usearch DATADIR N DIMS Q KINDS THREADS
//   KINDS "f32,i8,i8q", THREADS "1,2" (every kind is built with every
//   count). i8 is USearch's own cast from float: it divides by the
//   vector's norm and multiplies by 127, so unit 256-d vectors, whose
//   components are near +-0.06, get about 4 bits (values within +-20 or
//   so). i8q gives USearch int8 codes quantised per vector by the largest
//   |component| (as medtrust's are), which USearch stores as they are:
//   the strongest i8 it can hold for such vectors.
// Prints one JSON object.
#include <usearch/index_dense.hpp>

#include <algorithm>
#include <cmath>
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
    const int8_t *base8 = nullptr, *q8 = nullptr; // i8q: the codes given
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

static index_dense_t::search_result_t query(index_dense_t &ix,
                                            const data &dt, size_t i)
{
    if (dt.q8)
        return ix.search(dt.q8 + i * dt.d, 10, 0);
    return ix.search(dt.q + i * dt.d, 10, 0);
}

static void sweep(index_dense_t &ix, const data &dt)
{
    for (size_t i = 0; i < 100 && i < dt.nq; i++) { // warm-up
        ix.change_expansion_search(128);
        query(ix, dt, i);
    }
    size_t nefs = sizeof efs / sizeof efs[0];
    for (size_t e = 0; e < nefs; e++) {
        ix.change_expansion_search(efs[e]);
        double rec = 0.0, t0 = bu_now_ms();
        for (size_t i = 0; i < dt.nq; i++) {
            auto res = query(ix, dt, i);
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
                if (!(dt.base8 ? ix.add((default_key_t)i,
                                        dt.base8 + i * dt.d, t)
                               : ix.add((default_key_t)i, dt.base + i * dt.d,
                                        t)))
                    ok[t] = 0;
        });
    for (auto &th : pool)
        th.join();
    for (int v : ok)
        if (!v)
            return false;
    return true;
}

// A copy of dt that also carries int8 codes of its vectors and queries,
// each quantised as medtrust does it (per vector: round(x * 127 /
// max|x|); the memory is the caller's). USearch takes int8 input as it
// is, and its cosine on int8 ignores each vector's scale, so this is the
// cosine of medtrust's own codes.
static data quantised(const data &dt, std::vector<int8_t> &base,
                      std::vector<int8_t> &q)
{
    auto quant = [&](const float *in, size_t n, std::vector<int8_t> &out) {
        out.resize(n * dt.d);
        for (size_t i = 0; i < n; i++) {
            float m = 0.0f;
            for (size_t j = 0; j < dt.d; j++)
                m = std::max(m, std::fabs(in[i * dt.d + j]));
            for (size_t j = 0; j < dt.d; j++)
                out[i * dt.d + j] = (int8_t)(m > 0.0f ? std::lrint(
                                        in[i * dt.d + j] * 127.0f / m) : 0);
        }
    };
    data out = dt;
    quant(dt.base, dt.n, base);
    quant(dt.q, dt.nq, q);
    out.base8 = base.data();
    out.q8 = q.data();
    return out;
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
    std::vector<int8_t> qbase, qq;
    for (const std::string &k : split(argv[5])) {
        if (k != "f32" && k != "i8" && k != "i8q") {
            std::fprintf(stderr, "vec_usearch: unknown kind '%s'\n",
                         k.c_str());
            return 2;
        }
        scalar_kind_t kind = k == "f32" ? scalar_kind_t::f32_k
                                        : scalar_kind_t::i8_k;
        data kd = k == "i8q" ? quantised(dt, qbase, qq) : dt;
        for (const std::string &t : split(argv[6])) {
            size_t nt = std::strtoul(t.c_str(), nullptr, 10);
            if (nt == 0)
                nt = std::thread::hardware_concurrency();
            if (!bench_one(kd, dir, kind, k.c_str(), nt, first))
                return 1;
            first = false;
        }
    }
    std::printf("]}\n");
    return 0;
}
