# Agents (src/agents): the prompt files in src/agents/prompts/*.txt are
# compiled into the library as byte arrays by tools/embed_prompts.sh, in a
# header that src/agents/prompt.c includes. The test fixture agent_stub is
# built by the generic fixtures rule.
AGENT_PROMPTS := $(sort $(wildcard src/agents/prompts/*.txt))
AGENT_GEN     := $(BUILD)/gen/agents/prompts_gen.h

$(AGENT_GEN): $(AGENT_PROMPTS) tools/embed_prompts.sh mk/agents.mk
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@sh tools/embed_prompts.sh $@ $(AGENT_PROMPTS)

$(BUILD)/obj/src/agents/prompt.o: $(AGENT_GEN)
$(BUILD)/obj/src/agents/prompt.o: CFLAGS_ALL += -I$(BUILD)/gen/agents
