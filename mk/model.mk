# Model layer (src/model): libcurl for the OpenAI-compatible backends, and
# llama.cpp (headers from third_party/llama.cpp, prebuilt CPU libraries from
# the @node-llama-cpp/linux-x64 bundle) when scripts/bootstrap fetched them.
LDLIBS_ALL += -lcurl

LLAMA_SRC := third_party/llama.cpp
LLAMA_BIN := $(abspath third_party/llama-linux-x64/bins/linux-x64)
LLAMA_SO  := $(LLAMA_BIN)/libllama.v0.5.0.so

ifneq ($(wildcard $(LLAMA_SO)),)
# -isystem: llama.h and ggml.h are third-party and need not pass our WARN.
CFLAGS_ALL += -DMT_HAVE_LLAMA=1 -DMT_LLAMA_LIB_DIR='"$(LLAMA_BIN)"' \
              -isystem $(LLAMA_SRC)/include -isystem $(LLAMA_SRC)/ggml/include
LDLIBS_ALL += $(LLAMA_SO) $(LLAMA_BIN)/libggml.v0.5.0.so \
              $(LLAMA_BIN)/libggml-base.so -Wl,-rpath,$(LLAMA_BIN)
# An installed binary finds the libraries `make install` puts beside it
# first ($ORIGIN/../lib/medtrust); in the build tree that folder does not
# exist and the loader falls through to third_party.
LDFLAGS += -Wl,-rpath,'$$ORIGIN/../lib/medtrust'

.PHONY: install-llama
install: install-llama
install-llama:
	install -d $(DESTDIR)$(PREFIX)/lib/medtrust
	install -m 755 $(LLAMA_BIN)/*.so $(DESTDIR)$(PREFIX)/lib/medtrust/
endif

# Model benchmarks (bench/model_bench.c, recorded in BENCHMARKS.md):
#   make BUILD=build/rel bench-models
$(BUILD)/bench/model_bench: bench/model_bench.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O2 -O1 -O0 -MMD -MP,$(CFLAGS_ALL)) -O2 -o $@ $< \
	    $(LIB) $(LDFLAGS) $(LDLIBS_ALL)

.PHONY: bench-models
bench-models: $(BUILD)/bench/model_bench $(BUILD)/fixtures/make_tiny_gguf
	@bash bench/models.sh $(BUILD)
