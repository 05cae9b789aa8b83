/* llama.cpp chat backend (gguf:PATH). Placeholder until the in-process
 * backend lands: reports that GGUF models are not available. */
#include "model/llm.h"
#include "model/rerank.h"

enum mt_status mt_llm_llama_open(const char *path,
                                 const struct mt_llm_params *p,
                                 struct mt_llm **out, struct mt_error *err)
{
    (void)p;
    (void)out;
    return mt_fail(err, MT_EUNSUPPORTED,
                   "gguf:%s: this build has no llama.cpp backend", path);
}

enum mt_status mt_reranker_open_llama(const char *path,
                                      const struct mt_reranker_params *p,
                                      struct mt_reranker **out,
                                      struct mt_error *err)
{
    (void)p;
    (void)out;
    return mt_fail(err, MT_EUNSUPPORTED,
                   "gguf:%s: this build has no llama.cpp backend", path);
}
