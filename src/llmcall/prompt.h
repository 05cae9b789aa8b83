/* Prompt templates: built-in text files (src/llmcall/prompts/NAME.txt,
 * compiled in) that a directory may override file by file. A file holds
 * the system part, a line "=== user ===", then the user part; {{KEY}} in
 * either is replaced when rendering. */
#ifndef MT_LLMCALL_PROMPT_H
#define MT_LLMCALL_PROMPT_H

#include <stddef.h>

#include "core/buf.h"
#include "medtrust/status.h"

struct mt_prompts;

/* Loads the built-in prompts, each replaced by DIR/NAME.txt when 'dir' is
 * not NULL and that file exists. MT_EIO when dir cannot be read,
 * MT_EPARSE (naming the file) when a file lacks the user separator. */
enum mt_status mtx_prompts_load(const char *dir, struct mt_prompts **out,
                                struct mt_error *err);
void mtx_prompts_free(struct mt_prompts *p);

/* The system and user templates of prompt 'name'; -1 when unknown. */
int mtx_prompts_get(const struct mt_prompts *p, const char *name,
                    struct mt_str *sys, struct mt_str *user);

/* Number of built-in prompts and the name of prompt i. */
size_t mtx_prompts_builtin_count(void);
const char *mtx_prompts_builtin_name(size_t i);

/* Appends 'tpl' to out with each {{keys[i]}} replaced by vals[i];
 * unknown placeholders stay as they are. */
enum mt_status mtx_prompt_render(struct mt_str tpl, const char *const *keys,
                                 const char *const *vals, size_t n,
                                 struct mt_buf *out);

#endif
