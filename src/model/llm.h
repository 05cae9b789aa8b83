/* LLM backends behind include/medtrust/model.h (their handle and ops
 * table are model/handle.h's), plus helpers the backends share: result
 * allocation and the messages as JSON. Names: mtx_ (docs/architecture.md). */
#ifndef MT_MODEL_LLM_H
#define MT_MODEL_LLM_H

#include <jansson.h>

#include "medtrust/model.h"
#include "model/handle.h"

/* Backends. Each returns a complete handle (the front end, mt_llm_open,
 * attaches the call cache). */
enum mt_status mtx_llm_openai_open(const char *url, const char *model,
                                   const struct mt_llm_params *p,
                                   struct mt_llm **out, struct mt_error *err);
/* Azure OpenAI: BASE#DEPLOYMENT, the legacy path
 * (BASE/openai/deployments/DEPLOYMENT/chat/completions?api-version=V; V
 * from "?api-version=V" on BASE, else AZURE_OPENAI_API_VERSION, else
 * 2024-10-21) or, for a BASE ending in /openai/v1, the v1 path; the key
 * from AZURE_OPENAI_API_KEY in the api-key header. */
enum mt_status mtx_llm_azure_open(const char *url, const char *deployment,
                                  const struct mt_llm_params *p,
                                  struct mt_llm **out, struct mt_error *err);
enum mt_status mtx_llm_llama_open(const char *path,
                                  const struct mt_llm_params *p,
                                  struct mt_llm **out, struct mt_error *err);

/* Whether entry ("NAME=VALUE", from environ) is a MEDTRUST_LLM_<ROLE>
 * model spec, not one of the settings MEDTRUST_LLM_TIMEOUT and _RETRIES:
 * then its ROLE as written goes into role (n bytes; a longer one is not
 * taken) and its spec is returned; else NULL. */
const char *mtx_llm_env_role(const char *entry, char *role, size_t n);

/* Estimated tokens of s[0..n): one per 3 ASCII bytes (rounded up) and
 * one per other UTF-8 character. English runs near 4 bytes a token in
 * the usual BPE vocabularies and CJK near a token a character, so this
 * errs high, which is the safe side for a budget. */
uint32_t mtx_llm_estimate_tokens(const char *s, size_t n);

/* Reads a context-length refusal's message: the model's context into
 * *ctx and, when the message says it, the prompt's tokens into *prompt
 * (else 0). Knows llama-server ("request (N tokens) exceeds the
 * available context size (C tokens)"), vLLM and OpenAI ("maximum context
 * length is C tokens. However, you requested T tokens (N in the
 * messages, M in the completion)", "your request has N input tokens",
 * "your messages resulted in N tokens"). Returns 1 when C was found. */
int mtx_llm_parse_ctx_error(const char *msg, uint32_t *ctx, uint32_t *prompt);

/* Allocates room for n texts in a zeroed result. */
enum mt_status mtx_chat_result_init(struct mt_chat_result *r, uint32_t n);

/* Appends t[0..n) to completion i's reasoning (allocating r->reasoning
 * on first use; a second piece joins the first after a newline). */
enum mt_status mtx_chat_reasoning_add(struct mt_chat_result *r, uint32_t i,
                                      const char *t, size_t n);

/* Moves a "<think>...</think>" block (or, for templates that open <think>
 * in the prompt, everything before a lone "</think>") at the head of each
 * completion into its reasoning; an unclosed "<think>" is all reasoning
 * and leaves an empty answer. */
enum mt_status mtx_chat_split_think(struct mt_chat_result *r);

/* The messages as a JSON array of {"role","content"}; NULL when out of
 * memory. */
json_t *mtx_chat_messages_json(const struct mt_llm_message *msgs, size_t n);

#endif
