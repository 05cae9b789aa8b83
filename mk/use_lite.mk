# use-lite (src/model/use_lite*): the kernels are built -O3 with FMA
# contraction; tools/use_lite_convert turns the npm package's TF.js files
# (third_party/use-lite, from scripts/bootstrap) into $(BUILD)/use-lite.mtw,
# which the runtime finds beside or above the binary (see use_lite_file.c).
UL_DIR   := third_party/use-lite/dist
UL_MTW   := $(BUILD)/use-lite.mtw
UL_CONV  := $(BUILD)/tools/use_lite_convert
UL_BENCH := $(BUILD)/bench/use_lite_bench
UL_LIB   := $(BUILD)/libmedtrust.a

$(BUILD)/obj/src/model/use_lite_gemm.o: CFLAGS_ALL += -O3 -ffp-contract=fast
$(BUILD)/obj/src/model/use_lite_i8.o: CFLAGS_ALL += -O3
$(BUILD)/obj/src/model/use_lite_file.o: \
    CFLAGS_ALL += -DMT_USE_LITE_DATADIR='"$(PREFIX)/share/medtrust"'

# The converter (tools/use_lite_conv.c) is build-time only, so it is linked
# into the tool and not into the library.
$(UL_CONV): tools/use_lite_convert.c tools/use_lite_conv.c \
    tools/use_lite_conv.h $(UL_LIB) FORCE
	$(call cc_cmd,CCLD    $@,$(filter-out -MMD -MP,$(CFLAGS_ALL)) -o $@ \
	    $(filter %.c,$^) $(UL_LIB) $(LDFLAGS) $(LDLIBS_ALL))

$(UL_BENCH): bench/use_lite_bench.c $(UL_LIB) FORCE
	$(call cc_cmd,CCLD    $@,$(CFLAGS_ALL) -o $@ $< $(UL_LIB) $(LDFLAGS) \
	    $(LDLIBS_ALL))

ifneq ($(wildcard $(UL_DIR)/model.json),)
$(UL_MTW): $(UL_CONV) $(UL_DIR)/model.json $(UL_DIR)/vocab.json
	@echo "  CONVERT $@"
	@$(UL_CONV) $(UL_DIR) $@

all unit-build: $(UL_MTW)

# `make install` also installs the weights where the runtime looks for them
# (PREFIX/share/medtrust, i.e. ../share/medtrust from the installed binary).
.PHONY: install-use-lite
install: install-use-lite
install-use-lite: $(UL_MTW)
	install -d $(DESTDIR)$(PREFIX)/share/medtrust
	install -m 644 $(UL_MTW) $(DESTDIR)$(PREFIX)/share/medtrust/use-lite.mtw
endif

.PHONY: bench-use-lite
bench-use-lite: $(UL_MTW) $(UL_BENCH)
	@bash bench/use_lite.sh $(BUILD)
