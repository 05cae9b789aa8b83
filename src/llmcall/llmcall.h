/* The one model-call loop every feature uses (the checker's role calls,
 * question answering's answer and judge): render a prompt, send it, and
 * on a reply that cannot be used send it once more with a "fix" message,
 * or on a failed request repeat it as is. Decisions rest on the attempt's
 * outcome code, never on the text of its error. Names: mtx_ (cross-file
 * internals, docs/architecture.md). */
#ifndef MT_LLMCALL_LLMCALL_H
#define MT_LLMCALL_LLMCALL_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "llmcall/prompt.h"
#include "medtrust/model.h"

/* Largest rendered system or user part of a prompt. */
#define MTX_PROMPT_MAX ((size_t)64 << 20)

/* Renders prompt 'name' of 'p' into sys and user (NUL-terminated, each at
 * most MTX_PROMPT_MAX), {{keys[i]}} replaced by vals[i]. MT_EINTERNAL for
 * an unknown prompt, MT_ELIMIT or MT_ENOMEM. */
enum mt_status mtx_llmcall_render(const struct mt_prompts *p, const char *name,
                                  const char *const *keys,
                                  const char *const *vals, size_t n,
                                  struct mt_buf *sys, struct mt_buf *user);

/* What one request came to. */
enum mtx_outcome {
    MTX_OUTCOME_OK,        /* a usable reply */
    MTX_OUTCOME_FAILED,    /* the backend failed (HTTP, time-out) */
    MTX_OUTCOME_BAD_REPLY, /* a reply came, but could not be used */
    MTX_OUTCOME_TOO_LONG,  /* the backend refused the prompt as longer
                              than the model's context: a failure that
                              the same request repeated cannot mend */
};

/* One request of the loop: attempt k (0 or 1) of messages m[0..nm). Writes
 * why it did not succeed into why (wn bytes). */
typedef enum mtx_outcome (*mtx_attempt_fn)(void *user,
                                           const struct mt_llm_message *m,
                                           size_t nm, int k, char *why,
                                           size_t wn);

struct mtx_llmcall {
    const struct mt_llm_message *msgs; /* system, user, history */
    size_t nmsgs;
    mtx_attempt_fn attempt;
    int (*cancelled)(void *user); /* polled before each request; may be
                                     NULL */
    void *user;
    /* The text of the unusable reply the last attempt got (borrowed, valid
     * until the next attempt), or NULL; may be NULL. The repeat echoes it
     * as the assistant turn before the fix, so roles alternate. */
    const char *(*bad_reply)(void *user);
    /* The model the call goes to, so that the repeat's echo of the bad
     * reply is cut to what its context leaves (a reply that ran to the
     * end of a small context cannot be echoed whole); may be NULL (the
     * echo is cut at MTX_REPAIR_ECHO_MAX only). */
    struct mt_llm *llm;
    uint32_t max_tokens; /* the answer's, for the room the repeat keeps */
    /* What the repair turn asks for after naming the problem: NULL for a
     * JSON reply ("Reply again with only the JSON object the instructions
     * ask for."); a plain-text reply names its own ("Answer with one
     * word: yes or no."). */
    const char *fix;
};

/* Longest bad reply echoed back in the repair turn (bytes, cut at a
 * character boundary): enough for the model to see what it wrote. */
#define MTX_REPAIR_ECHO_MAX 8192

/* Runs up to two attempts: after a bad reply the second one appends the
 * reply as an assistant turn and a user message naming the problem (why)
 * and asking for the JSON object alone, or c->fix ([system, user,
 * assistant(bad), user(fix)]: chat templates that require alternating roles,
 * such as Mistral-Instruct's, refuse two user turns in a row); after a failed
 * request it repeats the same messages. *last gets
 * the last attempt's outcome and 'why' its reason. MT_OK, MT_ECANCELED
 * (c->cancelled said stop) or MT_ENOMEM. */
enum mt_status mtx_llmcall_run(const struct mtx_llmcall *c,
                               enum mtx_outcome *last, char *why, size_t wn);

/* Writes "model call failed: <reason>" for a failed request into why. */
void mtx_llmcall_failed_why(enum mt_status st, const struct mt_error *e,
                            char *why, size_t wn);

#endif
