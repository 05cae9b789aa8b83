/* Test helper: makes tiny random-weight GGUF models with
 * tests/fixtures/make_tiny_gguf (built under $MEDTRUST_BUILD, vocabularies
 * from $MEDTRUST_LLAMA_VOCAB or llama.cpp's models folder). */
#ifndef MT_TEST_TINY_GGUF_H
#define MT_TEST_TINY_GGUF_H

#include <stdio.h>
#include <stdlib.h>

/* Makes a new folder from 'tmpl' (a mkdtemp template, copied into dir of
 * n bytes) holding DIR/KIND.gguf for each of the nk kinds ("chat",
 * "embed", "rerank", "classify"). When a model cannot be made dir[0] is
 * cleared, so the tests that need one fail. Returns -1 only when the
 * folder cannot be made. */
static inline int tiny_gguf_make(char *dir, size_t n, const char *tmpl,
                                 const char *const *kinds, size_t nk)
{
    const char *b = getenv("MEDTRUST_BUILD");
    const char *v = getenv("MEDTRUST_LLAMA_VOCAB");
    char cmd[1024];
    size_t i;

    snprintf(dir, n, "%s", tmpl);
    if (!mkdtemp(dir))
        return -1;
    for (i = 0; i < nk && dir[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s/fixtures/make_tiny_gguf %s %s/%s.gguf %s",
                 b ? b : "build", kinds[i], dir, kinds[i],
                 v ? v : "third_party/llama.cpp/models");
        if (system(cmd) != 0)
            dir[0] = '\0'; /* tests fail */
    }
    return 0;
}

#endif
