/* `check --verify-correction` (issue 32): opens the verifier of proposed
 * corrections and adapts mt_verify_correction to the checker's hook. */
#include <stdlib.h>
#include <string.h>

#include "cli/correction.h"
#include "medtrust/core.h"
#include "medtrust/verify.h"

static enum mt_status verify_hook(void *user, const char *corrected,
                                  const char *original,
                                  const struct mt_check_passage *ps, size_t n,
                                  char **json, struct mt_error *err)
{
    const char *ids[MT_CHECK_VERIFY_PASSAGES + 1];
    const char *texts[MT_CHECK_VERIFY_PASSAGES + 1];
    size_t i;

    if (n > MT_CHECK_VERIFY_PASSAGES)
        n = MT_CHECK_VERIFY_PASSAGES;
    for (i = 0; i < n; i++) {
        ids[i] = ps[i].id;
        texts[i] = ps[i].text;
    }
    return mt_verify_correction(user, corrected, original, ids, texts, n, json,
                                err);
}

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
    p->verify_correction = verify_hook;
    p->verify_correction_user = *q;
    return MT_OK;
}
