/* The one model-spec parser (llm, embedder, reranker, NLI). */
#include <string.h>

#include "medtrust/core.h"
#include "model/llm.h"
#include "model/spec.h"

enum mt_status mtx_spec_parse(const char *spec, const char *const *kinds,
                              size_t n, const char *setting,
                              struct mtx_spec *out, struct mt_error *err)
{
    size_t i;

    memset(out, 0, sizeof *out);
    for (i = 0; spec && i < n; i++) {
        size_t k = strlen(kinds[i]);

        if (strncmp(spec, kinds[i], k) != 0 ||
            (spec[k] != '\0' && spec[k] != ':'))
            continue;
        out->kind = i;
        out->arg = spec[k] ? spec + k + 1 : NULL;
        if ((strcmp(kinds[i], "gguf") == 0 && (!out->arg || !*out->arg)) ||
            (strcmp(kinds[i], "openai") == 0 && !out->arg))
            return MT_ENOTFOUND;
        if (strcmp(kinds[i], "openai") == 0)
            return mt_model_split_url(out->arg, setting, &out->url, &out->model,
                                      err);
        return MT_OK;
    }
    return MT_ENOTFOUND;
}

void mtx_spec_free(struct mtx_spec *s)
{
    mt_free(s->url);
    mt_free(s->model);
    s->url = s->model = NULL;
}
