/* Server profiles (model/openai_profile.h): each kind's documented
 * behaviour and the signs that tell it from a reply or a refusal. */
#include <stdio.h>
#include <string.h>

#include "model/openai_profile.h"

/* Per kind: its name, its structured-output dialect and where its
 * reasoning text goes, as each server documents them. */
static const struct {
    const char *name;
    const char *dialect;
    const char *reasoning;
} kinds[] = {
    [MTX_SK_UNKNOWN] = {"not detected yet (no reply)", "?", "?"},
    [MTX_SK_GENERIC] = {"openai-compatible", "response_format",
                        "reasoning, reasoning_content or <think>"},
    [MTX_SK_LLAMA] = {"llama-server", "response_format or grammar (GBNF)",
                      "reasoning_content"},
    [MTX_SK_VLLM] = {"vllm", "response_format (guided_json removed)",
                     "reasoning"},
    [MTX_SK_OLLAMA] = {"ollama", "response_format",
                       "reasoning or <think>; cuts prompts at its context"},
    [MTX_SK_LMSTUDIO] = {"lm-studio", "response_format json_schema only",
                         "reasoning_content"},
    [MTX_SK_OPENAI] = {"openai", "strict json_schema", "hidden"},
    [MTX_SK_AZURE] = {"azure", "strict json_schema", "hidden"},
    [MTX_SK_DEEPSEEK] = {"deepseek", "response_format json_object",
                         "reasoning_content"},
};

enum mtx_server_kind mtx_server_kind_of_reply(const json_t *reply)
{
    const char *fp =
        json_string_value(json_object_get(reply, "system_fingerprint"));
    const json_t *c0 = json_array_get(json_object_get(reply, "choices"), 0);
    const json_t *u = json_object_get(reply, "usage");

    if (json_object_get(reply, "timings")) /* llama-server's timings */
        return MTX_SK_LLAMA;
    if (fp && strcmp(fp, "fp_ollama") == 0)
        return MTX_SK_OLLAMA;
    if (json_object_get(c0, "stop_reason") ||
        json_object_get(reply, "prompt_logprobs")) /* vLLM's own fields */
        return MTX_SK_VLLM;
    if (json_object_get(reply, "prompt_filter_results")) /* Azure's */
        return MTX_SK_AZURE;
    if (json_object_get(u, "prompt_cache_hit_tokens")) /* DeepSeek's */
        return MTX_SK_DEEPSEEK;
    if (json_object_get(reply, "service_tier") ||
        (fp && strncmp(fp, "fp_", 3) == 0))
        return MTX_SK_OPENAI;
    return MTX_SK_GENERIC;
}

enum mtx_server_kind mtx_server_kind_of_error(const char *msg)
{
    if (strstr(msg, "'response_format.type' must be")) /* LM Studio */
        return MTX_SK_LMSTUDIO;
    if (strstr(msg, "\"json_schema\" or \"grammar\"")) /* llama-server */
        return MTX_SK_LLAMA;
    if (strstr(msg, "Unsupported parameter: '") ||
        strstr(msg, "Unsupported value: '")) /* OpenAI's wording */
        return MTX_SK_OPENAI;
    return MTX_SK_UNKNOWN;
}

void mtx_server_profile(char *buf, size_t n, const struct mtx_server_state *s)
{
    size_t k = (size_t)s->kind < sizeof kinds / sizeof *kinds ? s->kind : 0;

    snprintf(buf, n,
             "%s (auth %s; %s; %s; temperature %s; structured output %s, "
             "sending %s%s; reasoning in %s%s%s)",
             kinds[k].name,
             s->api_key ? "api-key header" : "Authorization: Bearer", s->url,
             s->mct ? "max_completion_tokens" : "max_tokens",
             s->no_temp ? "left out" : "sent", kinds[k].dialect, s->format,
             s->no_strlen ? " without string lengths" : "", kinds[k].reasoning,
             s->n_one ? "; n = 1 a request" : "",
             s->fold_sys ? "; system prompt folded into the user turn" : "");
}
