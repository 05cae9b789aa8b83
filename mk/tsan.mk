# ThreadSanitizer: `make tsan` builds the library, the binary, the unit
# tests and the fixtures in build/tsan with -fsanitize=thread (instead of
# ASan/UBSan, which cannot be combined with it) and runs the suites that
# run threads: the thread pool, the index build (analysis on worker
# threads), segments and publishing, the server (network threads, the
# job queue, streams) and its API suites. TSan writes each report to
# build/tsan/tsan-logs/; the target fails when there is any, or when a
# suite fails. TSAN_SUITES (an extglob of suite names, as tests/run.sh
# takes) picks others.
TSAN_BUILD  ?= build/tsan
TSAN_SUITES ?= @(test_progress_pool|test_index|test_index_segments|test_queue|test_server|test_publish|test_serve|test_check_api|test_ask_api|test_batch_api)
TSAN_FLAGS  := -fsanitize=thread -fno-omit-frame-pointer
# Function multiversioning (target_clones) runs its ifunc resolver before
# the TSan runtime starts, which crashes at load: one version under TSan.
TSAN_CFLAGS := $(TSAN_FLAGS) -DMT_UL_NO_CLONES

.PHONY: tsan
tsan:
	@$(MAKE) --no-print-directory BUILD=$(TSAN_BUILD) OPT="-O1 -g" \
	    EXTRA_CFLAGS="$(TSAN_CFLAGS)" EXTRA_LDLIBS="$(TSAN_FLAGS)" unit-build
	@rm -rf $(TSAN_BUILD)/tsan-logs && mkdir -p $(TSAN_BUILD)/tsan-logs
	@TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 \
	    history_size=4 log_path=$(abspath $(TSAN_BUILD))/tsan-logs/tsan \
	    suppressions=$(abspath tests/tsan.supp)" \
	    bash tests/run.sh $(TSAN_BUILD) '$(TSAN_SUITES)'; rc=$$?; \
	n=$$(ls $(TSAN_BUILD)/tsan-logs | wc -l); \
	if [ $$n -gt 0 ]; then \
	    echo "make tsan: $$n ThreadSanitizer report(s) in $(TSAN_BUILD)/tsan-logs:"; \
	    grep -h '^SUMMARY' $(TSAN_BUILD)/tsan-logs/* | sort | uniq -c; exit 1; \
	fi; \
	[ $$rc -eq 0 ] && echo "make tsan: no data race, no suite failed"; exit $$rc
