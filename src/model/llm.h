/* LLM backend vtable behind include/medtrust/model.h, plus helpers the
 * backends share: spec parsing, result allocation, canonical requests. */
#ifndef MT_MODEL_LLM_H
#define MT_MODEL_LLM_H

#include <jansson.h>

#include "medtrust/model.h"

/* Backend operations; 'self' is the backend's state. */
struct mt_llm_ops {
    const char *name; /* "openai", "gguf" */
    /* Fills res (zeroed on entry) with p->n completions. Must be
     * thread-safe when the backend allows concurrent calls. */
    enum mt_status (*chat)(void *self, const struct mt_llm_message *msgs,
                           size_t n_msgs, const struct mt_chat_params *p,
                           struct mt_chat_result *res, struct mt_error *err);
    const char *(*model)(const void *self);
    void (*free)(void *self);
};

/* Wraps backend state in a handle and opens the call cache when
 * p->cache_path is set; takes ownership of 'self' (freed with ops->free
 * even on failure). */
enum mt_status mt_llm_new_take(const struct mt_llm_ops *ops, void *self,
                               const struct mt_llm_params *p,
                               struct mt_llm **out, struct mt_error *err);

/* Backends. Each returns a complete handle. */
enum mt_status mt_llm_openai_open(const char *url, const char *model,
                                  const struct mt_llm_params *p,
                                  struct mt_llm **out, struct mt_error *err);
enum mt_status mt_llm_llama_open(const char *path,
                                 const struct mt_llm_params *p,
                                 struct mt_llm **out, struct mt_error *err);

/* Splits "BASE_URL#MODEL" into two new strings (free with mt_free).
 * 'setting' names the option in errors. */
enum mt_status mt_model_split_url(const char *rest, const char *setting,
                                  char **url, char **model,
                                  struct mt_error *err);

/* Allocates room for n texts in a zeroed result. */
enum mt_status mt_chat_result_init(struct mt_chat_result *r, uint32_t n);

/* Canonical request JSON (sorted keys, compact) for cache keys: messages
 * and every parameter that changes the output; the seed only when
 * temperature > 0. Caller frees with mt_free; NULL when out of memory. */
char *mt_chat_request_key(const struct mt_llm_message *msgs, size_t n_msgs,
                          const struct mt_chat_params *p);

/* The messages as a JSON array of {"role","content"}; NULL when out of
 * memory. */
json_t *mt_chat_messages_json(const struct mt_llm_message *msgs, size_t n);

/* Validates n_msgs and p (n, n_stop, roles). */
enum mt_status mt_chat_check(const struct mt_llm_message *msgs, size_t n_msgs,
                             const struct mt_chat_params *p,
                             struct mt_error *err);

/* Seconds from a monotonic clock. */
double mt_model_now(void);

#endif
