/* Model specs, parsed in one place for every kind of model: "KIND" or
 * "KIND:ARG", and for openai the ARG "BASE_URL#MODEL". Names: mtx_
 * (cross-file internals, docs/architecture.md). */
#ifndef MT_MODEL_SPEC_H
#define MT_MODEL_SPEC_H

#include <stddef.h>

#include "medtrust/status.h"

struct mtx_spec {
    size_t kind;       /* index of the matched kind in the caller's list */
    const char *arg;   /* after "KIND:", NULL when absent (borrowed) */
    char *url, *model; /* kinds "openai" and "azure": BASE_URL and MODEL
                          (the deployment for azure; owned) */
};

/* Matches 'spec' against kinds[0..n): a kind alone, or followed by ':' and
 * an argument. "gguf" needs a non-empty argument; "openai" needs
 * BASE_URL#MODEL, split into out->url and out->model ('setting' names the
 * option to fix). Returns MT_ENOTFOUND when no kind matches (the caller
 * says which forms it takes), MT_EINVAL for a bad openai argument, or
 * MT_ENOMEM. Free with mtx_spec_free. */
enum mt_status mtx_spec_parse(const char *spec, const char *const *kinds,
                              size_t n, const char *setting,
                              struct mtx_spec *out, struct mt_error *err);

void mtx_spec_free(struct mtx_spec *s);

#endif
