# Model calls (src/llmcall): the prompt files in src/llmcall/prompts/*.txt
# are compiled into the library as byte arrays by tools/embed_prompts.sh, in
# a header that src/llmcall/prompt.c includes. The test fixture agent_stub
# is built by the generic fixtures rule.
AGENT_PROMPTS := $(sort $(wildcard src/llmcall/prompts/*.txt))
AGENT_GEN     := $(BUILD)/gen/llmcall/prompts_gen.h

$(AGENT_GEN): $(AGENT_PROMPTS) tools/embed_prompts.sh mk/llmcall.mk
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@sh tools/embed_prompts.sh $@ $(AGENT_PROMPTS)

$(BUILD)/obj/src/llmcall/prompt.o: $(AGENT_GEN)
$(BUILD)/obj/src/llmcall/prompt.o: CFLAGS_ALL += -I$(BUILD)/gen/llmcall
