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
# The build tree holds its own copy of the libraries and CPU backends in
# $(BUILD)/lib/medtrust, laid out as `make install` lays out PREFIX, and
# programs find them relative to themselves: $(BUILD)/medtrust through
# $ORIGIN/lib/medtrust; the programs a folder down (tests/, fixtures/,
# tools/, bench/) and an installed binary through $ORIGIN/../lib/medtrust.
# No absolute path is recorded, so a build tree or a checkout moved to
# another folder still runs (tests/integration/test_relocate.sh).
LLAMA_LIB  := $(BUILD)/lib/medtrust
LLAMA_COPY := $(patsubst $(LLAMA_BIN)/%,$(LLAMA_LIB)/%,\
                $(wildcard $(LLAMA_BIN)/*.so))
LDLIBS_ALL += $(LLAMA_LIB)/libllama.v0.5.0.so $(LLAMA_LIB)/libggml.v0.5.0.so \
              $(LLAMA_LIB)/libggml-base.so
LDFLAGS += -Wl,-rpath,'$$ORIGIN/lib/medtrust:$$ORIGIN/../lib/medtrust'
# The installed medtrust.pc names the copies `make install` puts in
# PREFIX/lib/medtrust (never the build tree's), with a run path to them.
PC_LIBS_LLAMA := -L$${libdir}/medtrust -l:libllama.v0.5.0.so \
                 -l:libggml.v0.5.0.so -l:libggml-base.so \
                 -Wl,-rpath,$${libdir}/medtrust

# Everything that links links the library, so the copies come first.
$(LIB): | $(LLAMA_COPY)
$(LLAMA_LIB)/%.so: $(LLAMA_BIN)/%.so
	@mkdir -p $(dir $@)
	@cp $< $@

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
