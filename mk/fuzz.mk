# libFuzzer targets (tests/fuzz/fuzz_*.c), built with Debian's clang and
# libclang-rt-dev (scripts/bootstrap): `make fuzz` builds the library with
# clang, ASan, UBSan and fuzzer coverage in build/fuzz, defines
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (readers skip the checksums
# that would stop most mutations before the structural checks), and links
# build/fuzz/fuzzers/fuzz_*. `make test` runs each for a few seconds on its
# seed corpus (tests/integration/test_fuzz.sh). Longer runs of every
# target, FUZZ_SECONDS each, one after the other:
#   make fuzz FUZZ_SECONDS=600
# or one target by hand:
#   build/fuzz/fuzzers/fuzz_http -max_len=8192 CORPUS tests/fuzz/http_seeds
FUZZ_BUILD ?= build/fuzz
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN   := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzzers/%)

.PHONY: fuzz fuzz-build
fuzz:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang SANITIZE=1 \
	    OPT="-O1 -g" EXTRA_CFLAGS="-fsanitize=fuzzer-no-link \
	    -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION" fuzz-build
ifneq ($(FUZZ_SECONDS),)
	@MEDTRUST_FUZZ_SECONDS=$(FUZZ_SECONDS) MEDTRUST_BIN=$(abspath build/test/medtrust) \
	    MEDTRUST_FUZZ_BUILD=$(abspath $(FUZZ_BUILD)) \
	    bash tests/integration/test_fuzz.sh
endif

fuzz-build: $(FUZZ_BIN)

$(BUILD)/fuzzers/%: tests/fuzz/%.c $(wildcard tests/fuzz/*.h) $(LIB) FORCE
	$(call cc_cmd,FUZZ    $@,$(filter-out -MMD -MP,$(CFLAGS_ALL)) \
	    -fsanitize=fuzzer -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS_ALL))
