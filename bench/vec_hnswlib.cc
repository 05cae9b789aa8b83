// hnswlib baseline (Debian libhnswlib-dev, float32, inner product) over
// vec_gen's data: single-thread build with M 16, ef_construction 200,
// memory, and an ef sweep of latency and recall@10 against exact float.
// Usage: vec_hnswlib DATADIR N DIMS Q   (prints one JSON object)
// MEDTRUST_BENCH_HNSW_M / MEDTRUST_BENCH_HNSW_EFC override M and
// ef_construction, as for vec_mt.
#include <hnswlib/hnswlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: vec_hnswlib DATADIR N DIMS Q\n");
        return 2;
    }
    std::string dir = argv[1];
    size_t n = std::strtoull(argv[2], nullptr, 10);
    size_t d = std::strtoul(argv[3], nullptr, 10);
    size_t nq = std::strtoul(argv[4], nullptr, 10);
    size_t sz = 0;
    float *base = (float *)bu_load((dir + "/base.f32").c_str(), &sz);
    if (!base || sz != n * d * sizeof(float))
        return 1;
    float *q = (float *)bu_load((dir + "/query.f32").c_str(), &sz);
    if (!q || sz != nq * d * sizeof(float))
        return 1;
    uint32_t *gt = (uint32_t *)bu_load((dir + "/gt.u32").c_str(), &sz);
    if (!gt || sz != nq * 10 * sizeof(uint32_t))
        return 1;

    uint64_t rss0 = bu_rss();
    hnswlib::InnerProductSpace space(d);
    double t0 = bu_now_ms();
    const char *em = std::getenv("MEDTRUST_BENCH_HNSW_M");
    const char *ee = std::getenv("MEDTRUST_BENCH_HNSW_EFC");
    size_t M = em && std::atoi(em) > 0 ? (size_t)std::atoi(em) : 16;
    size_t efc = ee && std::atoi(ee) > 0 ? (size_t)std::atoi(ee) : 200;
    auto *alg = new hnswlib::HierarchicalNSW<float>(&space, n, M, efc, 42);
    for (size_t i = 0; i < n; i++)
        alg->addPoint(base + i * d, i);
    double build_s = (bu_now_ms() - t0) / 1e3;
    uint64_t rss1 = bu_rss();
    std::string path = dir + "/hnswlib.bin";
    alg->saveIndex(path);

    std::printf("{\"engine\":\"hnswlib\",\"clock\":\"%s\",\"n\":%zu,\"dims\":%zu,"
                "\"queries\":%zu,\"hnsw\":{\"M\":%zu,\"ef_construction\":%zu,"
                "\"build_s\":%.2f,\"index_rss\":%llu,\"file_bytes\":%llu,"
                "\"sweep\":[",
                bu_clock_name(), n, d, nq, M, efc, build_s,
                (unsigned long long)(rss1 - rss0),
                (unsigned long long)bu_file_size(path.c_str()));
    std::remove(path.c_str());
    alg->setEf(128);
    for (size_t i = 0; i < 100 && i < nq; i++) // warm-up
        alg->searchKnn(q + i * d, 10);
    static const size_t efs[] = {16,  32,  48,  64,  96,  128,
                                 192, 256, 384, 512, 768, 1024};
    size_t nefs = sizeof efs / sizeof efs[0];
    for (size_t e = 0; e < nefs; e++) {
        alg->setEf(efs[e]);
        double rec = 0.0;
        double t1 = bu_now_ms();
        for (size_t i = 0; i < nq; i++) {
            auto res = alg->searchKnn(q + i * d, 10);
            uint32_t ids[10];
            uint32_t k = 0;
            std::vector<uint32_t> tmp;
            while (!res.empty()) { // worst first
                tmp.push_back((uint32_t)res.top().second);
                res.pop();
            }
            for (size_t j = tmp.size(); j-- > 0 && k < 10;)
                ids[k++] = tmp[j];
            rec += bu_recall10(ids, k, gt + i * 10);
        }
        double ms = (bu_now_ms() - t1) / (double)nq;
        std::printf("{\"ef\":%zu,\"ms\":%.4f,\"recall10\":%.4f}%s", efs[e], ms,
                    rec / (double)nq, e + 1 == nefs ? "" : ",");
    }
    std::printf("]}}\n");
    delete alg;
    return 0;
}
