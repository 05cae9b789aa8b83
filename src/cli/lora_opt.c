/* --lora ADAPTER[:SCALE] (repeatable) on every verb that takes --llm: the
 * adapters join the default LLM's spec as gguf:BASE?lora=A[:S]&lora=B. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/buf.h"
#include "medtrust/core.h"

/* The default LLM spec: --llm, else MEDTRUST_LLM (*from_env). */
static const char *default_llm(const struct cli_args *a, int *from_env)
{
    const char *opt = cli_get(a, "llm");
    const char *env = getenv("MEDTRUST_LLM");

    *from_env = !opt && env && *env;
    return opt ? opt : *from_env ? env : NULL;
}

/* 1 when spec already carries "lora=v" (an argv rebuilt from parsed
 * options, as sweep's runs are, gives both the --llm made here and the
 * --lora values again). */
static int has_lora(const char *spec, const char *v)
{
    size_t n = strlen(v);
    const char *p = strchr(spec, '?');

    while (p) {
        if (strncmp(p + 1, "lora=", 5) == 0 && strncmp(p + 6, v, n) == 0 &&
            (p[6 + n] == '\0' || p[6 + n] == '&'))
            return 1;
        p = strchr(p + 1, '&');
    }
    return 0;
}

static int lora_error(const char *why, const char *spec)
{
    fprintf(stderr,
            "medtrust: ERROR: --lora %s%s%s: LoRA adapters apply to a "
            "gguf:BASE.gguf model (--llm gguf:PATH, or MEDTRUST_LLM). For "
            "an openai: server, load the adapter in the server (llama-server "
            "--lora FILE applies it to every request; vLLM --lora-modules "
            "NAME=PATH, then openai:URL#NAME picks it by model name)\n",
            why, spec ? " " : "", spec ? spec : "");
    return 1;
}

int cli_lora_apply(struct cli_args *a)
{
    struct mt_buf b = MT_BUF_INIT(1 << 20);
    const char **v;
    size_t n = 0;
    size_t i;
    int env = 0;
    const char *base;

    v = cli_get_all(a, "lora", &n);
    if (n == 0)
        return 0;
    base = default_llm(a, &env);
    if (!base)
        return lora_error("needs an LLM", NULL);
    if (strncmp(base, "gguf:", 5) != 0)
        return lora_error("cannot apply to", base);
    enum mt_status st = mtx_buf_printf(&b, "%s", base);
    for (i = 0; st == MT_OK && i < n; i++)
        if (!has_lora(b.data, v[i]))
            st = mtx_buf_printf(&b, "%clora=%s",
                                strchr(b.data, '?') ? '&' : '?', v[i]);
    if (st == MT_OK && env && setenv("MEDTRUST_LLM", b.data, 1) != 0)
        st = MT_ENOMEM;
    if (st == MT_OK && !env) {
        a->owned = mtx_buf_take(&b);
        st = a->owned && cli_args_put(a, "llm", a->owned) == 0 ? MT_OK
                                                               : MT_ENOMEM;
    }
    mtx_buf_free(&b);
    if (st != MT_OK)
        fprintf(stderr, "medtrust: ERROR: --lora: out of memory\n");
    return st == MT_OK ? 0 : 1;
}
