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

enum mtx_server_kind mtx_server_kind_of_header(const char *server)
{
    /* cpp-httplib's default in llama-server; vLLM's uvicorn, Ollama's Go
     * server and LM Studio name nothing of their own */
    if (server && strncmp(server, "llama.cpp", 9) == 0)
        return MTX_SK_LLAMA;
    return MTX_SK_UNKNOWN;
}

/* "owned_by" as each server's /v1/models sets it. */
static enum mtx_server_kind owner_kind(const char *o)
{
    static const struct {
        const char *owner;
        enum mtx_server_kind kind;
    } owners[] = {
        {"llamacpp", MTX_SK_LLAMA},
        {"vllm", MTX_SK_VLLM},
        {"library", MTX_SK_OLLAMA}, /* Ollama: the model's namespace */
        {"organization_owner", MTX_SK_LMSTUDIO},
        {"deepseek", MTX_SK_DEEPSEEK},
        {"openai", MTX_SK_OPENAI},
        {"system", MTX_SK_OPENAI},
        {"openai-internal", MTX_SK_OPENAI},
    };
    size_t i;

    for (i = 0; o && i < sizeof owners / sizeof *owners; i++)
        if (strcmp(o, owners[i].owner) == 0)
            return owners[i].kind;
    return MTX_SK_UNKNOWN;
}

enum mtx_server_kind mtx_server_kind_of_models(const json_t *list,
                                               const char *model, uint32_t *ctx)
{
    const json_t *data = json_object_get(list, "data");
    const json_t *e = json_array_get(data, 0);
    json_int_t len;
    size_t i;

    for (i = 0; model && i < json_array_size(data); i++) {
        const char *id =
            json_string_value(json_object_get(json_array_get(data, i), "id"));
        if (id && strcmp(id, model) == 0)
            e = json_array_get(data, i);
    }
    len = json_integer_value(json_object_get(e, "max_model_len"));
    *ctx = len > 0 && len <= (json_int_t)UINT32_MAX ? (uint32_t)len : 0;
    return owner_kind(json_string_value(json_object_get(e, "owned_by")));
}

/* OpenAI's reasoning models by name ("o3-mini", "o1-2024-12-17",
 * "gpt-5-mini"): its reasoning guide's list; gpt-5-chat is not one. An
 * Azure deployment's name is the user's, so only one named like its
 * model is told. */
static int reasoning_model(const char *m)
{
    static const char *const o_series[] = {"o1", "o3", "o4"};
    size_t i;

    if (!m)
        return 0;
    for (i = 0; i < sizeof o_series / sizeof *o_series; i++)
        if (strncmp(m, o_series[i], 2) == 0 && (m[2] == '\0' || m[2] == '-'))
            return 1;
    return strncmp(m, "gpt-5", 5) == 0 && strncmp(m, "gpt-5-chat", 10) != 0 &&
           (m[5] == '\0' || m[5] == '-' || m[5] == '.');
}

void mtx_server_preset(enum mtx_server_kind k, const char *model,
                       struct mtx_server_preset *p)
{
    memset(p, 0, sizeof *p);
    if ((k == MTX_SK_OPENAI || k == MTX_SK_AZURE) && reasoning_model(model)) {
        p->mct = 1;
        p->no_temp = 1;
        p->no_top_p = 1;
    }
    p->n_one = k == MTX_SK_OLLAMA || k == MTX_SK_LMSTUDIO;
}

void mtx_server_profile(char *buf, size_t n, const struct mtx_server_state *s)
{
    size_t k = (size_t)s->kind < sizeof kinds / sizeof *kinds ? s->kind : 0;
    char how[160] = "";

    if (s->how || (s->server && s->server[0]))
        snprintf(how, sizeof how, "; detected from %s%s%s%s",
                 s->how ? s->how : "nothing yet",
                 s->server && s->server[0] ? " (Server: " : "",
                 s->server && s->server[0] ? s->server : "",
                 s->server && s->server[0] ? ")" : "");
    snprintf(
        buf, n,
        "%s (auth %s; %s; %s; temperature %s; structured output %s, "
        "sending %s%s; reasoning in %s%s%s%s)",
        kinds[k].name, s->api_key ? "api-key header" : "Authorization: Bearer",
        s->url, s->mct ? "max_completion_tokens" : "max_tokens",
        s->no_temp ? "left out" : "sent", kinds[k].dialect, s->format,
        s->no_strlen ? " without string lengths" : "", kinds[k].reasoning,
        s->n_one ? "; n = 1 a request" : "",
        s->fold_sys ? "; system prompt folded into the user turn" : "", how);
}
