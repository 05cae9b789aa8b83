# Retrieval benchmarks (bench/, run by `make bench` through bench/run):
# medtrust programs link $(BUILD)/libmedtrust.a; the baselines link SQLite
# FTS5, Xapian, hnswlib (header-only) and FAISS from Debian (installed by
# `scripts/bootstrap --bench`). Not part of `make test`.
BENCH_DIR  := $(BUILD)/bench
BENCH_LIB  := $(BUILD)/libmedtrust.a
BENCH_CFLAGS := $(filter-out -O2 -O1 -O0 -MMD -MP,$(CFLAGS_ALL)) -O2 -Ibench
BENCH_CXXFLAGS := -std=c++17 -O3 -march=native -g -Wall -Wextra -Ibench \
                  -Iinclude -Isrc
BENCH_C  := vec_mt vec_query bm25_mt hybrid_mt bm25_fts5 index_recall
BENCH_X  := bm25_xapian vec_hnswlib vec_faiss vec_usearch
BENCH_BIN := $(BENCH_C:%=$(BENCH_DIR)/%) $(BENCH_X:%=$(BENCH_DIR)/%) \
             $(BENCH_DIR)/gen_corpus $(BENCH_DIR)/vec_gen $(BENCH_DIR)/membw \
             $(BENCH_DIR)/gen_pubmed

$(BENCH_C:%=$(BENCH_DIR)/%): $(BENCH_DIR)/%: bench/%.c bench/bench_util.h \
    bench/bench_mt.h \
    $(BENCH_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_LIB) $(LDFLAGS) $(LDLIBS_ALL)

# Self-contained helpers, built -O3 -march=native.
$(BENCH_DIR)/gen_corpus: bench/gen_corpus.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -O2 -o $@ $< -ljansson
$(BENCH_DIR)/gen_pubmed: bench/gen_pubmed.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -O2 -Wall -Wextra -o $@ $< -ljansson \
	    -lz -lm
$(BENCH_DIR)/vec_gen: bench/vec_gen.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -O3 -march=native -Wall -Wextra \
	    -o $@ $< -lpthread -lm
$(BENCH_DIR)/membw: bench/membw.c bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -O3 -march=native -Wall -Wextra \
	    -Ibench -o $@ $< -lpthread

$(BENCH_DIR)/bm25_xapian: bench/bm25_xapian.cc bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CXX) $(BENCH_CXXFLAGS) -o $@ $< -lxapian -lsqlite3
$(BENCH_DIR)/vec_hnswlib: bench/vec_hnswlib.cc bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CXX) $(BENCH_CXXFLAGS) -o $@ $< -lpthread
$(BENCH_DIR)/vec_faiss: bench/vec_faiss.cc bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CXX) $(BENCH_CXXFLAGS) -fopenmp -o $@ $< -lfaiss -llapack -lblas

# USearch (npm usearch, unpacked by `scripts/bootstrap --bench` into
# third_party/usearch): its headers, with the NumKong kernels it ships
# compiled here with run-time dispatch as its own node binding builds them
# (float16/bfloat16 kernels off: gcc 12's C++ has no _Float16/__bf16).
US_DIR := third_party/usearch
NK_SRC := $(wildcard $(US_DIR)/numkong/c/numkong.c $(US_DIR)/numkong/c/dispatch_*.c)
NK_OBJ := $(NK_SRC:$(US_DIR)/numkong/c/%.c=$(BENCH_DIR)/numkong/%.o)
NK_DEFS := -DNK_DYNAMIC_DISPATCH=1 -DNK_NATIVE_F16=0 -DNK_NATIVE_BF16=0
$(BENCH_DIR)/numkong/%.o: $(US_DIR)/numkong/c/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O3 -march=native -w $(NK_DEFS) \
	    -I$(US_DIR)/numkong/include -c -o $@ $<
$(BENCH_DIR)/vec_usearch: bench/vec_usearch.cc bench/bench_util.h $(NK_OBJ)
	@mkdir -p $(dir $@)
	$(CXX) $(BENCH_CXXFLAGS) -Wno-unknown-pragmas -I$(US_DIR)/include \
	    -I$(US_DIR)/numkong/include $(NK_DEFS) -DUSEARCH_USE_NUMKONG=1 \
	    -DUSEARCH_CAN_COMPILE_FP16=0 -DUSEARCH_CAN_COMPILE_BF16=0 \
	    -o $@ $< $(NK_OBJ) -lpthread

.PHONY: bench-build
bench-build: $(BUILD)/medtrust $(BENCH_BIN) $(BUILD)/fixtures/agent_stub
