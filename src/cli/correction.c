/* `check --verify-correction` (issue 32): opens the verifier of proposed
 * corrections and sets it as the checker's hook (batch/correction.h). */
#include <stdlib.h>
#include <string.h>

#include "cli/correction.h"
#include "batch/correction.h"
#include "medtrust/core.h"

enum mt_status correction_open(const struct cli_args *a,
                               struct mt_agent_params *p, struct mt_qa **q,
                               struct mt_error *err)
{
    const char *nli =
        cli_get(a, "nli") ? cli_get(a, "nli") : getenv("MEDTRUST_NLI");
    struct mt_qa_params qp;
    enum mt_status st;

    *q = NULL;
    if (cli_get(a, "no-verify-correction") ||
        (!cli_get(a, "verify-correction") && !(nli && *nli)))
        return MT_OK;
    mt_qa_default_params(&qp);
    qp.db_dir = p->db_dir;
    qp.llm_spec = p->llm_spec;
    qp.llm = p->llm;
    qp.nli_spec = nli && *nli ? nli : NULL;
    qp.embedder_spec = p->embedder_spec;
    qp.answer_optional = 1;
    st = mt_qa_open(&qp, q, err);
    if (st != MT_OK)
        return mt_error_prefix(err, "--verify-correction");
    mtx_correction_attach(p, *q);
    return MT_OK;
}
