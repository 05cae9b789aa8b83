/* The correction verifier as a checker's hook: see correction.h. */
#include "batch/correction.h"

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
        texts[i] = ps[i].text; /* NULL: read by its id */
    }
    return mt_verify_correction(user, corrected, original, ids, texts, n, json,
                                err);
}

void mtx_correction_attach(struct mt_agent_params *p, struct mt_qa *q)
{
    p->verify_correction = verify_hook;
    p->verify_correction_user = q;
}
