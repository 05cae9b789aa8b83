/* The verdict of one note's run: the final-answer check every strategy
 * that ends in an answer object shares (single, MedReAct's final_mistake,
 * MedFinalParser) and the one place a verdict is set. Its own file, so
 * the strategies depend on it and on nothing of run.c. */
#include <stdio.h>
#include <string.h>

#include "check/agent_int.h"
#include "check/match.h"
#include "check/verdict.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"

enum mt_status mtx_run_verdict(struct run *r, int flag, int sid,
                               const char *corr)
{
    char *c = NULL;

    if (flag && (sid < 0 || (size_t)sid >= r->nsents))
        flag = 0;
    if (flag && (!corr || !*corr)) /* never an empty correction */
        corr = NULL;
    if (flag) {
        c = corr ? mt_strdup(corr)
                 : mt_strndup(r->sents[sid].p, r->sents[sid].n);
        if (!c)
            return MT_ENOMEM;
    }
    mt_free(r->corr);
    r->corr = c;
    r->flag = flag;
    r->sid = flag ? sid : -1;
    return MT_OK;
}

void mtx_run_verdict_unlocated(struct run *r)
{
    mt_free(r->corr);
    r->corr = NULL;
    r->flag = 1;
    r->sid = -1;
}

/* Maps a quoted error sentence to an id; -1 when it matches none. */
static int quote_id(struct run *r, const char *q, double *score)
{
    *score = 0;
    if (!q || !*q)
        return -1;
    return mtx_match_sentence(mtx_str_from(q), r->sents, r->nsents,
                              MT_MATCH_MIN, score);
}

int mtx_check_final(struct run *r, json_t *o, void *user, char *why, size_t n)
{
    struct final_answer *f = user;
    const char *q = mtx_reply_str(o, "error_sentence");
    long sid = -1;
    double score;

    if (mtx_reply_bool(o, "is_error", &f->flag) != 0) {
        snprintf(why, n, "\"is_error\" must be true or false");
        return -1;
    }
    f->sid = -1;
    f->corr = mtx_reply_str(o, "corrected_sentence");
    if (!f->flag)
        return 0;
    if (mtx_reply_int(o, "sentence_id", 0, (long)r->nsents - 1, &sid) != 0)
        sid = quote_id(r, q, &score);
    if (sid < 0) {
        snprintf(why, n,
                 "\"sentence_id\" must be a sentence id from 0 to "
                 "%zu (or \"error_sentence\" must quote one)",
                 r->nsents - 1);
        return -1;
    }
    if (!f->corr || !*f->corr) {
        snprintf(why, n, "\"corrected_sentence\" is missing or empty");
        return -1;
    }
    f->sid = (int)sid;
    return 0;
}
