/* MedGuards' Chinese ROUGE-1 (eval_CN.py's NLGMetrics.compute_rouge): both
 * texts cut by jieba (src/text/segment_zh.c), tokens joined by one space,
 * then rouge-chinese's ROUGE-1 F (mtx_rouge_chinese). */
#include <string.h>

#include "core/buf.h"
#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/segment_zh.h"

/* ' '.join(jieba.cut(s)) into *out (mt_free). */
static enum mt_status cut_joined(const struct mtx_jieba *j, const char *s,
                                 char **out, size_t *n)
{
    struct mt_str *t = NULL;
    size_t nt = 0, len = strlen(s), o = 0;
    enum mt_status st = mtx_jieba_cut(j, s, len, &t, &nt);
    char *b = st == MT_OK ? mt_malloc(len + nt + 1) : NULL;

    if (!b) {
        mt_free(t);
        return MT_ENOMEM;
    }
    for (size_t k = 0; k < nt; k++) {
        if (k)
            b[o++] = ' ';
        memcpy(b + o, t[k].p, t[k].n);
        o += t[k].n;
    }
    b[o] = '\0';
    mt_free(t);
    *out = b;
    *n = o;
    return MT_OK;
}

enum mt_status mtx_kpcs_rouge1_zh(const struct mtx_jieba *j, const char *hyp,
                                  const char *ref, double *f)
{
    char *h = NULL, *r = NULL;
    size_t hn = 0, rn = 0;
    struct mt_rouge_scores rs;
    enum mt_status st = cut_joined(j, hyp, &h, &hn);

    if (st == MT_OK)
        st = cut_joined(j, ref, &r, &rn);
    if (st == MT_OK)
        st = mtx_rouge_chinese(h, hn, r, rn, &rs);
    if (st == MT_OK)
        *f = rs.r1.f;
    mt_free(h);
    mt_free(r);
    return st;
}
