# medtrust build: GNU make, out-of-tree. `make` builds build/medtrust,
# build/libmedtrust.a and build/libmedtrust.so; `make test` builds a
# sanitized tree in build/test with -Werror and runs every suite. See
# README.md.

BUILD     ?= build
# One name per build folder: a BUILD given as an absolute path inside the
# checkout (tests/integration/test_install.sh passes one) is made relative,
# so that its targets are named as the .d files (-MMD) and the saved
# commands (.cmd, below) name them: otherwise make finds no header
# dependency for them and misses a changed header.
override BUILD := $(patsubst $(CURDIR)/%,%,$(abspath $(BUILD)))
CC        ?= gcc
CXX       ?= g++
PREFIX    ?= /usr/local
# The data sets (README, "Data sets"): ../shared/data beside the clone
# when it holds them, else ./data, where `make demo` fetches them
# (scripts/fetch-data). tests/run.sh alone defaults to ../shared/data.
SHARED_DATA := $(wildcard ../shared/data/medquad/corpus.jsonl)
MEDTRUST_DATA ?= $(abspath $(if $(SHARED_DATA),../shared/data,data))
export MEDTRUST_DATA

CSTD := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wpointer-arith -Wcast-qual -Wwrite-strings \
        -Wformat=2 -Wundef -Wvla -Wconversion -Wdouble-promotion \
        -Wimplicit-fallthrough -Wnull-dereference \
        -Werror=implicit-function-declaration \
        -Werror=incompatible-pointer-types
SAN  := -fsanitize=address,undefined -fno-sanitize-recover=all \
        -fno-omit-frame-pointer
OPT  ?= -O2 -g

PKGS := sqlite3 jansson libutf8proc libpq
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# pkg-config prints nothing at all when one of PKGS is missing, so every
# include path and library would go without a word: the build stops below
# naming the missing ones instead.
PKG_MISSING := $(foreach p,$(PKGS),$(if $(shell pkg-config --exists $(p) \
                 2>/dev/null && echo y),,$(p)))

# -fPIC: the same objects make libmedtrust.a and libmedtrust.so (one
# compile); -fno-semantic-interposition keeps -fPIE's inlining of global
# functions within a file, since the .so binds its own symbols anyway
# (-Bsymbolic below).
CFLAGS_ALL := $(CSTD) $(WARN) $(OPT) -fPIC -fno-semantic-interposition \
              -Iinclude -Isrc $(PKG_CFLAGS) -MMD -MP $(EXTRA_CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -lstemmer -lpthread -lm $(EXTRA_LDLIBS)
ifeq ($(SANITIZE),1)
CFLAGS_ALL += $(SAN)
LDFLAGS    += $(SAN)
endif
ifeq ($(WERROR),1)
CFLAGS_ALL += -Werror
endif

# Library layers, lowest first (docs/architecture.md).
LAYERS   := core text store corpus index model retrieve llmcall check qa eval \
            batch server

LIB_SRC  := $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c))
CLI_SRC  := $(wildcard src/cli/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
LIB      := $(BUILD)/libmedtrust.a
BIN      := $(BUILD)/medtrust
# The shared library: libmedtrust.so.MAJOR is its SONAME, bumped when the
# C API breaks; libmedtrust.so links against it. Only the mt_ names the
# public headers declare are exported (the version script is generated
# from include/medtrust/*.h; scripts/lint checks the result with nm -D).
SO_VERSION := 0.1.0
SO_MAJOR   := 0
SO_NAME    := libmedtrust.so.$(SO_MAJOR)
SO_REAL    := $(BUILD)/libmedtrust.so.$(SO_VERSION)
SO         := $(BUILD)/libmedtrust.so
SO_MAP     := $(BUILD)/libmedtrust.map

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FIX_SRC  := $(wildcard tests/fixtures/*.c)
FIX_BIN  := $(FIX_SRC:tests/fixtures/%.c=$(BUILD)/fixtures/%)
HDRS     := $(wildcard include/medtrust/*.h)

# Per-subsystem fragments (extra flags, libraries, generated sources,
# bench programs) live in mk/*.mk so each layer's build needs stay beside
# each other. Included after LIB, BIN and BUILD are set, since their rules
# name them as prerequisites.
-include $(sort $(wildcard mk/*.mk))

# A build needs what scripts/bootstrap fetches: without llama.cpp and the
# USE-lite weights it would quietly make a binary that can load no GGUF
# model and embed nothing. make stops and says so instead of fetching them
# itself: the fetch installs apt packages (as root) and downloads from npm,
# which a build should not do unasked. test, lint, demo and bench run the
# bootstrap first on their own.
NO_BOOTSTRAP_GOALS := bootstrap test lint demo bench clean
ifneq ($(filter-out $(NO_BOOTSTRAP_GOALS),$(or $(MAKECMDGOALS),all)),)
MISSING_TP := $(if $(wildcard $(LLAMA_SO)),,$(LLAMA_SO)) \
              $(if $(wildcard $(UL_DIR)/model.json),,$(UL_DIR)/model.json)
ifneq ($(strip $(MISSING_TP)),)
$(error missing $(strip $(MISSING_TP)): run `make bootstrap` first (it \
fetches llama.cpp and the USE-lite weights; see README.md))
endif
ifneq ($(strip $(PKG_MISSING)),)
$(error pkg-config finds no $(strip $(PKG_MISSING)) (of PKGS: $(PKGS)): \
install its -dev package (`make bootstrap` does; see scripts/bootstrap))
endif
endif

.PHONY: all test unit-build lint demo bench install clean bootstrap \
        check-headers FORCE

# Every object and program remembers the command that made it, in
# TARGET.cmd beside it (as the Linux kernel's .cmd files do): a target
# whose command changed (other flags, -fPIC, a -D, another compiler, a
# different PREFIX baked in) is rebuilt as if its source had changed, so
# that an old build folder never mixes objects of two sets of flags. The
# compiler is recorded as the program it is (`cc`, `gcc` and `ccache gcc`
# are the same compiler here), not as it was named.
CC_ID := $(shell p=$$(command -v $(lastword $(filter-out -%,$(CC)))) && \
           readlink -f "$$p")
, := ,
# sq STR: STR quoted for the shell's single quotes
sq = '$(subst ','\'',$(1))'
# same A,B: non-empty when the strings A and B are equal (findstring is
# literal, filter would read % as a pattern)
same = $(and $(findstring $(1),$(2)),$(findstring $(2),$(1)))
# saved_cmd: the command that made $@ (empty when none was saved)
saved_cmd = $(if $(wildcard $@.cmd),$(strip $(file <$@.cmd)))
# cc_cmd LABEL,ARGS: a recipe line that runs $(CC) ARGS (printing
# "  LABEL") when a prerequisite is newer than $@ or ARGS, or the compiler,
# differ from what made it; it then saves the command in $@.cmd. Rules
# that use it depend on FORCE.
cc_cmd = $(if $(or $(filter-out FORCE,$?),$(if $(call same,$(strip \
    $(CC_ID) $(2)),$(saved_cmd)),,changed)),@mkdir -p $(dir $@) && \
    echo '  $(1)' && $(CC) $(2) && \
    printf '%s\n' $(call sq,$(strip $(CC_ID) $(2))) >$@.cmd,@:)
.DEFAULT_GOAL := all

all: $(BIN) $(LIB) $(SO)

bootstrap:
	@bash scripts/bootstrap

$(BUILD)/obj/%.o: %.c FORCE
	$(call cc_cmd,CC      $<,$(CFLAGS_ALL) -c $< -o $@)

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	@ar rcs $@ $^

# Every mt_ name in the public headers (types and macros too: a version
# script entry that matches no symbol is ignored); nothing else is global.
$(SO_MAP): $(HDRS)
	@mkdir -p $(dir $@)
	@{ echo 'MEDTRUST_$(SO_MAJOR) {'; echo '  global:'; \
	  grep -ohE '\bmt_[A-Za-z0-9_]+' $(HDRS) | sort -u | sed 's/.*/    &;/'; \
	  echo '  local: *;'; echo '};'; } >$@

# The whole archive, so every public function is in it whether or not
# anything in the library calls it. $$ORIGIN/medtrust finds llama.cpp's
# libraries beside an installed PREFIX/lib/libmedtrust.so.
$(SO_REAL): $(LIB) $(SO_MAP) FORCE
	$(call cc_cmd,LD      $@,-shared -Wl$(,)-soname$(,)$(SO_NAME) \
	    -Wl$(,)--version-script=$(SO_MAP) -Wl$(,)-Bsymbolic -Wl$(,)-z$(,)defs \
	    -Wl$(,)-rpath$(,)'$$ORIGIN/medtrust' -o $@ -Wl$(,)--whole-archive \
	    $(LIB) -Wl$(,)--no-whole-archive $(LDFLAGS) $(LDLIBS_ALL))

$(SO): $(SO_REAL)
	@ln -sf $(notdir $(SO_REAL)) $(BUILD)/$(SO_NAME)
	@ln -sf $(SO_NAME) $@

$(BIN): $(CLI_OBJ) $(LIB) FORCE
	$(call cc_cmd,LD      $@,$(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS_ALL))

$(BUILD)/tests/%: tests/unit/%.c $(LIB) FORCE
	$(call cc_cmd,CCLD    $@,$(CFLAGS_ALL) -Wno-missing-prototypes -o $@ $< \
	    $(LIB) $(LDFLAGS) $(LDLIBS_ALL) -lcmocka)

$(BUILD)/fixtures/%: tests/fixtures/%.c $(LIB) FORCE
	$(call cc_cmd,CCLD    $@,$(CFLAGS_ALL) -o $@ $< $(LIB) $(LDFLAGS) \
	    $(LDLIBS_ALL))

# Every public header compiles alone as C11 and as C++.
$(BUILD)/headers.ok: $(HDRS)
	@mkdir -p $(dir $@)
	@for h in $(HDRS); do \
	  echo "#include \"$${h#include/}\"" > $(BUILD)/hdr.c; \
	  $(CC) -std=c11 $(WARN) -Werror -Iinclude -fsyntax-only \
	      $(BUILD)/hdr.c || exit 1; \
	  $(CXX) -std=c++11 -Wall -Werror -Iinclude -fsyntax-only -x c++ \
	      $(BUILD)/hdr.c || exit 1; \
	done
	@touch $@

unit-build: $(BIN) $(SO) $(UNIT_BIN) $(FIX_BIN) $(BUILD)/headers.ok

# The sanitized and fuzzing builds of `make test` run one compile per
# core (TEST_JOBS, default nproc) unless make itself was given -j: a plain
# `make test` (as .ci/run calls it) would otherwise compile one file at a
# time.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_J     = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(TEST_JOBS))

test: bootstrap
	@$(MAKE) --no-print-directory $(TEST_J) BUILD=build/test SANITIZE=1 \
	    WERROR=1 OPT="-O1 -g" unit-build
	@$(MAKE) --no-print-directory $(TEST_J) fuzz
	@bash tests/run.sh build/test

lint: bootstrap
	@bash scripts/lint

# The demo's bootstrap installs only what the demo uses (scripts/bootstrap
# --demo: no PostgreSQL, Chromium, clang, cmake or llama-server build).
demo:
	@bash scripts/bootstrap --demo
	@$(MAKE) --no-print-directory all
	@bash scripts/demo

bench:
	@bash scripts/bootstrap --bench
	@$(MAKE) --no-print-directory all bench-build
	@bash bench/run

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib \
	    $(DESTDIR)$(PREFIX)/include/medtrust \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/medtrust
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libmedtrust.a
	install -m 755 $(SO_REAL) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(notdir $(SO_REAL)) $(DESTDIR)$(PREFIX)/lib/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(PREFIX)/lib/libmedtrust.so
	install -m 644 $(HDRS) $(DESTDIR)$(PREFIX)/include/medtrust/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|0.1.0|' \
	    -e 's|@LIBS@|$(PC_LIBS)|' medtrust.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/medtrust.pc

# What a program linking the installed libmedtrust.a (a static library)
# needs after it: the libraries, llama.cpp's from PREFIX/lib/medtrust
# (PC_LIBS_LLAMA, mk/model.mk), and the sanitizers a SANITIZE=1 build
# was compiled with.
PC_LIBS = $(filter-out $(LLAMA_LIB)/%,$(LDLIBS_ALL)) $(PC_LIBS_LLAMA) \
          $(if $(filter 1,$(SANITIZE)),$(SAN))

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
