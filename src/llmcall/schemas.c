/* JSON Schemas of the agents' replies, one per prompt, written to match
 * the shapes the prompts ask for and the reply checks accept. A gguf model
 * gets them as a grammar (GBNF), so even a small local model answers in
 * well-formed JSON of the right shape; strings are bounded so that a reply
 * always closes within the completion budget. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "llmcall/reply.h"
#include "core/buf.h"
#include "medtrust/core.h"
#include "text/utf8.h"

#define STR(n) "{\"type\":\"string\",\"maxLength\":" #n "}"
/* Free-text fields (thoughts, reasoning, plans) are bounded generously:
 * the completion's token limit is what bounds a reply; these caps only
 * make sure a grammar-bound string closes. A sentence field's cap is
 * derived from the note (mtx_reply_schema_for: twice its longest
 * sentence, at least SENT_CAP). */
#define REASON STR(1500)
#define SENT_CAP 400
#define BOOL "{\"type\":\"boolean\"}"
#define INT "{\"type\":\"integer\"}"
#define CONF "{\"type\":\"number\"}"
#define GRADE "{\"enum\":[1,2,3,4,5]}"
#define OBJ(props, req)                                                        \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req "]}"

/* The final answer's fields, shared by react's final_mistake, the parser
 * and single. */
#define FINAL_PROPS                                                            \
    "\"is_error\":" BOOL ",\"sentence_id\":" INT                               \
    ",\"error_sentence\":" STR(400) ",\"corrected_sentence\":" STR(400)
#define FINAL_REQ                                                              \
    "\"is_error\",\"sentence_id\",\"error_sentence\",\"corrected_sentence\""

/* react's action is one of two shapes (anyOf: a grammar with two
 * branches, response_format alike): a search names its query, a
 * final_mistake carries the answer's fields and no query, so a final step
 * is never stored or shown as a search. */
#define SEARCH_ACT                                                             \
    OBJ("\"name\":{\"enum\":[\"search\"]},\"query\":" STR(120),                \
        "\"name\",\"query\"")
#define FINAL_ACT                                                              \
    OBJ("\"name\":{\"enum\":[\"final_mistake\"]}," FINAL_PROPS,                \
        "\"name\"," FINAL_REQ)

static const char react[] =
    OBJ("\"observation\":" REASON ",\"thought\":" REASON
        ",\"action\":{\"anyOf\":[" SEARCH_ACT "," FINAL_ACT "]}",
        "\"observation\",\"thought\",\"action\"");

/* MedEval reasons before it scores, criterion by criterion, as the
 * published Evaluation (correction/definitions.py: validity_reasoning,
 * validity_score, ...): keys are generated in schema order, so no score
 * is written before its reasons. */
#define CRIT(k) "\"" k "_reasoning\":" STR(800) ",\"" k "\":" GRADE
#define CRIT_REQ(k) "\"" k "_reasoning\",\"" k "\""
static const char eval[] = OBJ(
    CRIT("validity") "," CRIT("preciseness") "," CRIT("confidence") "," CRIT(
        "relevance") "," CRIT("completeness") "," CRIT("final"),
    CRIT_REQ("validity") "," CRIT_REQ("preciseness") "," CRIT_REQ(
        "confiden"
        "ce") "," CRIT_REQ("relevance") "," CRIT_REQ("completeness") "," CRIT_REQ("final"));

static const char reflect[] = OBJ("\"reflection\":" REASON ",\"plan\":" REASON,
                                  "\"reflection\",\"plan\"");

static const char parser[] =
    OBJ(FINAL_PROPS ",\"reasoning\":" REASON, FINAL_REQ ",\"reasoning\"");

static const char single[] =
    OBJ("\"reasoning\":" REASON "," FINAL_PROPS, "\"reasoning\"," FINAL_REQ);

/* MedGuards' first principle is chain-of-thought decomposition: the
 * agent reasons, then decides, then says how sure it is. Keys are
 * generated in schema order (GBNF and json_schema alike), so "reasoning"
 * comes first and the verdict cannot be written before the reasons. */
static const char detect[] =
    OBJ("\"reasoning\":" REASON
        ",\"verdict\":{\"enum\":[\"CORRECT\",\"INCORRECT\"]},"
        "\"confidence\":" CONF,
        "\"reasoning\",\"verdict\",\"confidence\"");

static const char locate[] = OBJ(
    "\"reasoning\":" REASON ",\"sentence\":" STR(400) ",\"confidence\":" CONF,
    "\"reasoning\",\"sentence\",\"confidence\"");

static const char correct[] =
    OBJ("\"reasoning\":" REASON
        ",\"corrected_sentence\":" STR(400) ",\"confidence\":" CONF,
        "\"reasoning\",\"corrected_sentence\",\"confidence\"");

static const char judge[] =
    OBJ("\"label\":{\"enum\":[\"SUPPORT\",\"CONTRADICT\",\"NO_EVIDENCE\"]},"
        "\"confidence\":" CONF ",\"reasoning\":" STR(1000),
        "\"label\",\"confidence\",\"reasoning\"");

/* `medtrust verify --decompose`: a sentence's atomic claims (FActScore). */
static const char decompose[] =
    OBJ("\"claims\":{\"type\":\"array\",\"items\":" STR(400) "}", "\"claims\"");

#define SID_KEY "\"sentence_id\":" INT
#define SID_MAX 1024 /* notes longer than this keep a plain integer */

#define LOC_KEY "\"sentence\":" STR(400)

/* Which of a schema's fields the note bounds (mtx_reply_schema_for): the
 * sentence id of the final answer, or the sentence the localisation
 * quotes. */
enum bound {
    BOUND_NONE,
    BOUND_SID,   /* "sentence_id": -1 or one of the note's ids */
    BOUND_QUOTE, /* "sentence": "NONE" or one of the note's sentences */
};

static const char *const bound_key[] = {NULL, SID_KEY, LOC_KEY};

static const struct {
    const char *prefix;
    const char *schema;
    enum bound bound; /* the note-bound field, replaced by an enum */
} schemas[] = {
    {"react", react, BOUND_SID},
    {"eval", eval, BOUND_NONE},
    {"reflect", reflect, BOUND_NONE},
    {"parser", parser, BOUND_SID},
    {"single", single, BOUND_SID},
    {"guard_detect", detect, BOUND_NONE},
    {"guard_locate", locate, BOUND_QUOTE},
    {"guard_correct", correct, BOUND_NONE},
    {"qa_judge", judge, BOUND_NONE},
    {"verify_decompose", decompose, BOUND_NONE},
};

static int schema_index(const char *prompt)
{
    size_t i;

    for (i = 0; i < sizeof schemas / sizeof schemas[0]; i++)
        if (strncmp(prompt, schemas[i].prefix, strlen(schemas[i].prefix)) == 0)
            return (int)i;
    return -1;
}

const char *mtx_reply_schema(const char *prompt)
{
    int i = schema_index(prompt);

    return i < 0 ? NULL : schemas[i].schema;
}

/* Appends the enum that replaces "sentence_id": -1 and the note's ids. */
static enum mt_status put_sid_enum(struct mt_buf *b, size_t nsents)
{
    enum mt_status st = mtx_buf_append_str(b, "\"sentence_id\":{\"enum\":[-1");
    size_t i;

    for (i = 0; st == MT_OK && i < nsents; i++)
        st = mtx_buf_printf(b, ",%zu", i);
    return st == MT_OK ? mtx_buf_append_str(b, "]}") : st;
}

/* Appends the enum that replaces guard_locate's "sentence": "NONE" and
 * each of the note's sentences, trimmed, as the prompt shows them. */
static enum mt_status put_quote_enum(struct mt_buf *b,
                                     const struct mt_str *sents, size_t nsents)
{
    enum mt_status st =
        mtx_buf_append_str(b, "\"sentence\":{\"enum\":[\"NONE\"");
    size_t i;

    for (i = 0; st == MT_OK && i < nsents; i++) {
        struct mt_str t = mtx_str_trim(sents[i]);
        json_t *j = t.n ? json_stringn(t.p, t.n) : NULL;
        char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

        if (t.n && !q)
            st = MT_ENOMEM; /* or not UTF-8: the caller keeps the string */
        else if (q)
            st = mtx_buf_printf(b, ",%s", q);
        free(q);
        json_decref(j);
    }
    return st == MT_OK ? mtx_buf_append_str(b, "]}") : st;
}

/* The schema text with the note-bound field's key at 'at' replaced by
 * its enum; NULL when out of memory. */
static char *splice(const char *s, const char *at, enum bound bound,
                    const struct mt_str *sents, size_t nsents)
{
    const char *key = bound_key[bound];
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 20);
    enum mt_status st = mtx_buf_append(&b, s, (size_t)(at - s));

    if (st == MT_OK)
        st = bound == BOUND_QUOTE ? put_quote_enum(&b, sents, nsents)
                                  : put_sid_enum(&b, nsents);
    if (st == MT_OK)
        st = mtx_buf_append_str(&b, at + strlen(key));
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* s with every "KEY":{...,"maxLength":SENT_CAP} of the sentence fields
 * given 'cap' instead (a new string, or NULL when out of memory). */
static char *sentence_caps(const char *s, size_t cap)
{
    static const char *const keys[] = {"\"error_sentence\":",
                                       "\"corrected_sentence\":"};
    static const char old[] = "\"maxLength\":400}";
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 20);
    enum mt_status st = MT_OK;
    const char *p = s;

    while (st == MT_OK && *p) {
        const char *hit = NULL;
        size_t i, k = 0;

        for (i = 0; i < 2; i++) {
            const char *h = strstr(p, keys[i]);

            if (h && (!hit || h < hit)) {
                hit = h;
                k = strlen(keys[i]);
            }
        }
        if (!hit) {
            st = mtx_buf_append_str(&b, p);
            break;
        }
        st = mtx_buf_append(&b, p, (size_t)(hit - p) + k);
        p = hit + k;
        hit = strstr(p, old);
        if (st == MT_OK && hit && hit - p < 40) { /* this key's own cap */
            st = mtx_buf_append(&b, p, (size_t)(hit - p));
            if (st == MT_OK)
                st = mtx_buf_printf(&b, "\"maxLength\":%zu}", cap);
            p = hit + strlen(old);
        }
    }
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return NULL;
    }
    return mtx_buf_take(&b);
}

/* Twice the note's longest sentence in characters, at least SENT_CAP: a
 * correction may be longer than the sentence it fixes (MEDEC has one of
 * 625 characters). */
static size_t sentence_cap(const struct mt_str *sents, size_t nsents)
{
    size_t cap = SENT_CAP;
    size_t i;

    for (i = 0; sents && i < nsents; i++) {
        size_t c = 2 * mtx_utf8_count(sents[i].p, sents[i].n);

        if (c > cap)
            cap = c;
    }
    return cap;
}

/* The schema bound to the note (see reply.h), with its sentence caps. */
static char *schema_bound(const char *prompt, const struct mt_str *sents,
                          size_t nsents);

char *mtx_reply_schema_for(const char *prompt, const struct mt_str *sents,
                           size_t nsents)
{
    char *s = schema_bound(prompt, sents, nsents);
    size_t cap = sentence_cap(sents, nsents);
    char *c;

    if (!s || cap == SENT_CAP)
        return s;
    c = sentence_caps(s, cap);
    if (!c) /* out of memory: the default caps */
        return s;
    mt_free(s);
    return c;
}

static char *schema_bound(const char *prompt, const struct mt_str *sents,
                          size_t nsents)
{
    int i = schema_index(prompt);
    enum bound bound = i < 0 ? BOUND_NONE : schemas[i].bound;
    const char *s = i < 0 ? NULL : schemas[i].schema;
    const char *at;
    char *plain, *bound_s;

    if (!s)
        return NULL;
    if (bound == BOUND_QUOTE && !sents)
        bound = BOUND_NONE; /* no sentences to quote from */
    at = bound != BOUND_NONE ? strstr(s, bound_key[bound]) : NULL;
    if (!at || nsents == 0 || nsents > SID_MAX)
        return mt_strdup(s);
    /* out of memory: the unbound schema, whose reply check still refuses
     * an id or a quote that is not the note's. Its copy is made first, so
     * it does not depend on memory the failed splice could not get. */
    plain = mt_strdup(s);
    bound_s = plain ? splice(s, at, bound, sents, nsents) : NULL;
    if (!bound_s)
        return plain;
    mt_free(plain);
    return bound_s;
}
