# HTTP server (src/server): GNU libmicrohttpd, and libsodium for accounts
# (src/store/accounts.c). The web UI (ui/) is embedded into the library as
# a generated C file, $(BUILD)/gen/ui_assets.c, rebuilt when a file under
# ui/ changes; the archive rule's $^ picks up the extra object.
LDLIBS_ALL += -lmicrohttpd -lsodium

UI_FILES  := $(shell find ui -type f ! -name '.*' 2>/dev/null)
UI_GEN_C  := $(BUILD)/gen/ui_assets.c
UI_GEN_O  := $(BUILD)/obj/gen/ui_assets.o

$(UI_GEN_C): tools/embed_ui.sh $(UI_FILES) $(wildcard ui)
	@mkdir -p $(dir $@)
	@echo "  EMBED   ui/ -> $@"
	@sh tools/embed_ui.sh $@ ui

$(UI_GEN_O): $(UI_GEN_C) src/server/ui_assets.h FORCE
	$(call cc_cmd,CC      $<,$(CFLAGS_ALL) -c $< -o $@)

$(BUILD)/libmedtrust.a: $(UI_GEN_O)
