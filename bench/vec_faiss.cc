// FAISS baselines (Debian libfaiss-dev) over vec_gen's data, one thread:
// IndexFlatIP (float32) and IndexScalarQuantizer 8-bit (inner product),
// one query per call as a search engine serves them: latency, GB/s of
// codes scanned, recall@10 against exact float.
// Usage: vec_faiss DATADIR N DIMS Q [QUERIES]   (prints one JSON object)
#include <faiss/IndexFlat.h>
#include <faiss/IndexScalarQuantizer.h>
#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_util.h"

static void run(faiss::Index *idx, const char *name, size_t code_bytes,
                const float *q, const uint32_t *gt, size_t nq, size_t n,
                size_t d, bool last)
{
    faiss::Index::idx_t labels[10];
    float dist[10];
    idx->search(1, q, 10, dist, labels); // warm-up
    double rec = 0.0;
    double t0 = bu_now_ms();
    for (size_t i = 0; i < nq; i++) {
        idx->search(1, q + i * d, 10, dist, labels);
        uint32_t ids[10];
        for (int j = 0; j < 10; j++)
            ids[j] = (uint32_t)labels[j];
        rec += bu_recall10(ids, 10, gt + i * 10);
    }
    double ms = (bu_now_ms() - t0) / (double)nq;
    std::printf("\"%s\":{\"queries\":%zu,\"ms\":%.4f,\"gbps\":%.3f,"
                "\"recall10\":%.4f}%s",
                name, nq, ms, (double)n * (double)code_bytes / (ms * 1e6),
                rec / (double)nq, last ? "" : ",");
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: vec_faiss DATADIR N DIMS Q [QUERIES]\n");
        return 2;
    }
    omp_set_num_threads(1);
    std::string dir = argv[1];
    size_t n = std::strtoull(argv[2], nullptr, 10);
    size_t d = std::strtoul(argv[3], nullptr, 10);
    size_t nq = std::strtoul(argv[4], nullptr, 10);
    size_t nrun = argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 50;
    if (nrun > nq)
        nrun = nq;
    size_t sz = 0;
    float *base = (float *)bu_load((dir + "/base.f32").c_str(), &sz);
    if (!base || sz != n * d * sizeof(float))
        return 1;
    float *q = (float *)bu_load((dir + "/query.f32").c_str(), &sz);
    uint32_t *gt = (uint32_t *)bu_load((dir + "/gt.u32").c_str(), &sz);
    if (!q || !gt)
        return 1;

    std::printf("{\"engine\":\"faiss\",\"clock\":\"%s\",\"n\":%zu,\"dims\":%zu,"
                "\"threads\":%d,",
                bu_clock_name(), n, d, omp_get_max_threads());
    {
        faiss::IndexFlatIP flat((faiss::Index::idx_t)d);
        flat.add((faiss::Index::idx_t)n, base);
        run(&flat, "flat_ip", d * sizeof(float), q, gt, nrun, n, d, false);
    }
    {
        faiss::IndexScalarQuantizer sq((faiss::Index::idx_t)d,
                                       faiss::ScalarQuantizer::QT_8bit,
                                       faiss::METRIC_INNER_PRODUCT);
        size_t ntrain = n < 100000 ? n : 100000;
        sq.train((faiss::Index::idx_t)ntrain, base);
        sq.add((faiss::Index::idx_t)n, base);
        run(&sq, "sq8", d, q, gt, nrun, n, d, true);
    }
    std::printf("}\n");
    return 0;
}
