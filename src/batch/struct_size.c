/* mt_struct_size: the size of each public struct, so a binding that lays
 * them out itself (python/medtrust/_lib.py, over ctypes) refuses a library
 * whose headers changed under it instead of passing a struct of the wrong
 * shape. It lives in batch, the lowest layer above every header it
 * includes (the layering check of make lint). */
#include <string.h>

#include "medtrust/batch.h"
#include "medtrust/check.h"
#include "medtrust/core.h"
#include "medtrust/corpus.h"
#include "medtrust/index.h"
#include "medtrust/model.h"
#include "medtrust/params.h"
#include "medtrust/qa.h"
#include "medtrust/retrieve.h"
#include "medtrust/store.h"
#include "medtrust/verify.h"

#define S(name)                                                                \
    {                                                                          \
#name, sizeof(struct name)                                             \
    }

static const struct {
    const char *name;
    size_t size;
} sizes[] = {
    S(mt_error),
    S(mt_str),
    S(mt_store_params),
    S(mt_doc),
    S(mt_put_result),
    S(mt_store_counts),
    S(mt_index_build_params),
    S(mt_index_build_result),
    S(mt_index_update_params),
    S(mt_ingest_params),
    S(mt_ingest_result),
    S(mt_index_run_params),
    S(mt_index_run_result),
    S(mt_meta_cond),
    S(mt_search_params),
    S(mt_search_hit),
    S(mt_search_result),
    S(mt_retriever_params),
    S(mt_embedder_params),
    S(mt_import_params),
    S(mt_import_result),
    S(mt_llm_params),
    S(mt_agent_params),
    S(mt_note),
    S(mt_agent_check_params),
    S(mt_check_usage),
    S(mt_check_result),
    S(mt_agent_check_params),
    S(mt_strategy_info),
    S(mt_trace_kind_info),
    S(mt_param),
    S(mt_param_table),
    S(mt_qa_params),
    S(mt_qa_ask_params),
    S(mt_verify_params),
    S(mt_batch_progress),
    S(mt_batch_note),
    S(mt_batch_params),
};

size_t mt_struct_size(const char *name)
{
    size_t i;

    for (i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(sizes[i].name, name) == 0)
            return sizes[i].size;
    return 0;
}
