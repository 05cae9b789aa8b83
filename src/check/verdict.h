/* The verdict of a run (verdict.c): setting it, and the final-answer
 * check shared by single, MedReAct's final_mistake and the parser. */
#ifndef MT_CHECK_VERDICT_H
#define MT_CHECK_VERDICT_H

#include "check/agent_int.h"

/* Sets the verdict: flag 1 with sentence 'sid' and correction 'corr', or
 * no error (flag 0). */
enum mt_status mtx_run_verdict(struct run *r, int flag, int sid,
                               const char *corr);

/* Sets MedGuards' "error detected, not located" verdict: flag 1 with no
 * sentence (-1) and no correction (the official line `ID 1 -1 NA`). */
void mtx_run_verdict_unlocated(struct run *r);

/* Final-answer check shared by single, the parser and MedReAct's
 * final_mistake: is_error, sentence_id (mapped from error_sentence by
 * fuzzy matching when out of range), corrected_sentence. On success
 * writes the answer into 'user' (struct final_answer *). */
struct final_answer {
    int flag;
    int sid;
    const char *corr; /* borrowed from the reply object */
};
int mtx_check_final(struct run *r, json_t *o, void *user, char *why, size_t n);

#endif
