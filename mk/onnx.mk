# ONNX Runtime for onnx:DIR models (src/model/ort_rt.c): compiled against
# the C API header scripts/bootstrap extracts from Debian's
# libonnxruntime-dev into third_party/onnxruntime/include, and dlopened at
# run time, so nothing links it. The build tree gets a copy of the CPU
# library the bootstrap took from onnxruntime-node, in $(BUILD)/lib/medtrust
# beside llama.cpp's, where the binaries' run path finds it; `make install`
# puts it in PREFIX/lib/medtrust. MEDTRUST_ONNXRUNTIME names another (a
# system or GPU build) at run time. Without the header the build still
# works and onnx: says how to get it.
ORT_DIR := third_party/onnxruntime
ORT_HDR := $(ORT_DIR)/include/onnxruntime_c_api.h
ORT_SO  := $(ORT_DIR)/lib/libonnxruntime.so.1

ifneq ($(wildcard $(ORT_HDR)),)
$(BUILD)/obj/src/model/ort_rt.o: CFLAGS_ALL += -DMT_HAVE_ORT=1 \
    -isystem $(ORT_DIR)/include
LDLIBS_ALL += -ldl
endif

ifneq ($(wildcard $(ORT_SO)),)
ORT_COPY := $(BUILD)/lib/medtrust/libonnxruntime.so.1
$(LIB): | $(ORT_COPY)
$(ORT_COPY): $(ORT_SO)
	@mkdir -p $(dir $@)
	@cp $< $@

.PHONY: install-onnxruntime
install: install-onnxruntime
install-onnxruntime:
	install -d $(DESTDIR)$(PREFIX)/lib/medtrust
	install -m 755 $(ORT_SO) $(DESTDIR)$(PREFIX)/lib/medtrust/
endif
