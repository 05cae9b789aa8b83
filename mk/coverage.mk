# Coverage: `make coverage` builds the library, the binary, the unit tests
# and the fixtures in build/cov with gcc's --coverage (no optimisation, no
# sanitizers), runs every suite on it (tests/run.sh; COV_SUITES, an extglob
# as tests/run.sh takes, picks fewer; the fuzzers run on their own build
# and add nothing here) and prints the line and branch coverage of each
# folder of src/ and the whole library (scripts/coverage, from gcov's
# own counts). Expensive: the whole suite, once; build nothing in
# build/cov while it runs (a rebuilt object's counts no longer match).
COV_BUILD  ?= build/cov
COV_SUITES ?= !(test_fuzz)
COV_FLAGS  := --coverage -fprofile-update=atomic

.PHONY: coverage coverage-report
coverage:
	@$(MAKE) --no-print-directory BUILD=$(COV_BUILD) OPT="-O0 -g" \
	    EXTRA_CFLAGS="$(COV_FLAGS)" EXTRA_LDLIBS="$(COV_FLAGS)" unit-build
	@find $(COV_BUILD) -name '*.gcda' -delete
	@bash tests/run.sh $(COV_BUILD) '$(COV_SUITES)' || \
	    echo "make coverage: some suites failed (above); coverage of what ran:"
	@$(MAKE) --no-print-directory coverage-report

coverage-report:
	@bash scripts/coverage $(COV_BUILD)
