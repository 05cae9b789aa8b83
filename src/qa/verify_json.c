/* `medtrust verify`'s result as JSON: every sentence with its span and
 * status, each claim with its verdict, quotes and evidence, and a summary
 * of the counts per verdict. */
#include <string.h>

#include <jansson.h>

#include "medtrust/core.h"
#include "qa/verify_int.h"

static const char *const verdict_names[MT_VERDICT_N] = {
    "SUPPORT",   "CONTRADICT", "NO_EVIDENCE", "NO_REFERENCE",
    "MISQUOTED", "FAILED",     "NOT_A_CLAIM",
};

const char *mt_verdict_str(enum mt_verdict v)
{
    return (unsigned)v < MT_VERDICT_N ? verdict_names[v] : "UNKNOWN";
}

const char *mt_quote_status_str(enum mt_quote_status s)
{
    switch (s) {
    case MT_QUOTE_FOUND:
        return "FOUND";
    case MT_QUOTE_STITCHED:
        return "STITCHED";
    default:
        return "NOT_FOUND";
    }
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *evidence_json(const struct mt_verify_evidence *e)
{
    json_t *o = json_pack("{s:s,s:o,s:s,s:f,s:o,s:o,s:b}", "doc", e->doc_id,
                          "title", str_or_null(e->title), "label",
                          mt_verdict_str(e->label), "score", (double)e->score,
                          "sentence", str_or_null(e->sentence), "url",
                          str_or_null(e->url), "cited", e->cited);

    if (o && e->error)
        json_object_set_new(o, "error", json_string(e->error));
    return o;
}

static json_t *quotes_json(const struct mt_verify_claim *c)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < c->nquotes; i++)
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:o}", "text", c->quotes[i].text, "status",
                         mt_quote_status_str(c->quotes[i].status), "doc",
                         str_or_null(c->quotes[i].doc_id)));
    return a;
}

json_t *mtx_vf_claim_json(const struct mt_verify_claim *c)
{
    json_t *cites = json_array();
    json_t *ev = json_array();
    json_t *o;
    size_t i;

    for (i = 0; i < c->ncites; i++)
        json_array_append_new(cites, json_string(c->cites[i]));
    for (i = 0; i < c->nevidence; i++)
        json_array_append_new(ev, evidence_json(&c->evidence[i]));
    o = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o}", "text", c->text, "verdict",
                  mt_verdict_str(c->verdict), "cites", cites, "quotes",
                  quotes_json(c), "evidence", ev, "decided_by",
                  c->decided_by >= 0 ? json_integer(c->decided_by)
                                     : json_null());
    if (o && c->error)
        json_object_set_new(o, "error", json_string(c->error));
    return o;
}

json_t *mtx_vf_sentence_json(const struct mt_verify_sentence *s)
{
    json_t *claims = json_array();
    size_t i;

    for (i = 0; i < s->nclaims; i++)
        json_array_append_new(claims, mtx_vf_claim_json(&s->claims[i]));
    return json_pack("{s:s,s:[I,I],s:s,s:o}", "text", s->text, "span",
                     (json_int_t)s->start, (json_int_t)s->end, "status",
                     mt_verdict_str(s->status), "claims", claims);
}

static json_t *usage_json(const struct mt_qa_usage *u)
{
    return json_pack("{s:i,s:i,s:I,s:I,s:i,s:i,s:f}", "llm_calls",
                     (int)u->llm_calls, "failed_calls", (int)u->failed_calls,
                     "prompt_tokens", (json_int_t)u->prompt_tokens,
                     "completion_tokens", (json_int_t)u->completion_tokens,
                     "verifications", (int)u->verifications, "verify_failures",
                     (int)u->verify_failures, "seconds", u->seconds);
}

static json_t *result_json(const struct mt_verify_result *r)
{
    json_t *o = json_object();
    json_t *sents = json_array();
    json_t *sum = json_object();
    json_t *notes = json_array();
    size_t i;

    for (i = 0; i < r->nsentences; i++)
        json_array_append_new(sents, mtx_vf_sentence_json(&r->sentences[i]));
    for (i = 0; i < MT_VERDICT_N; i++)
        json_object_set_new(sum, verdict_names[i],
                            json_integer((json_int_t)r->counts[i]));
    for (i = 0; i < r->nnotes; i++)
        json_array_append_new(notes, json_string(r->notes[i]));
    json_object_set_new(o, "sentences", sents);
    json_object_set_new(o, "summary", sum);
    json_object_set_new(o, "search", json_string(r->search));
    if (r->verifier) /* the trace says how the classifier's labels map */
        json_object_set_new(o, "verifier", json_string(r->verifier));
    json_object_set_new(o, "notes", notes);
    json_object_set_new(o, "usage", usage_json(&r->usage));
    return o;
}

char *mt_verify_result_json(const struct mt_verify_result *r)
{
    json_t *o = result_json(r);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    json_decref(o);
    return s;
}
