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
