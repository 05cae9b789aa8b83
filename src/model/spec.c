/* The one model-spec parser (LLMs, embedders, rerankers, NLI, the
 * BERTScore token encoder). */
#include <string.h>

#include "medtrust/core.h"
#include "model/spec.h"

/* Splits "BASE_URL#MODEL" into two new strings; 'setting' names the
 * option in errors. */
static enum mt_status split_url(const char *kind, const char *rest,
                                const char *setting, char **url, char **model,
                                struct mt_error *err)
{
    const char *h = strrchr(rest, '#');

    if (!h || h == rest || !h[1])
        return mt_fail(
            err, MT_EINVAL, "'%s:%s' needs the form %s:BASE_URL#%s: fix %s",
            kind, rest, kind,
            strcmp(kind, "azure") == 0 ? "DEPLOYMENT" : "MODEL", setting);
    *url = mt_strndup(rest, (size_t)(h - rest));
    *model = mt_strdup(h + 1);
    if (!*url || !*model) {
        mt_free(*url);
        mt_free(*model);
        *url = *model = NULL;
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    return MT_OK;
}

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
        int url =
            strcmp(kinds[i], "openai") == 0 || strcmp(kinds[i], "azure") == 0;
        if ((strcmp(kinds[i], "gguf") == 0 && (!out->arg || !*out->arg)) ||
            (url && !out->arg))
            return MT_ENOTFOUND;
        if (url)
            return split_url(kinds[i], out->arg, setting, &out->url,
                             &out->model, err);
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
