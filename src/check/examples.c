/* Few-shot examples for the single strategy: the built-in ones (our own
 * short notes, src/llmcall/prompts/examples.txt), the first rows of a
 * MEDEC-format training CSV (--few-shot), or MedPrompt's kNN few-shot
 * (--examples): per note, the training notes nearest to it (knn.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check/agent_int.h"
#include "check/examples.h"
#include "core/csv.h"
#include "medtrust/core.h"
#include "text/sentence.h"

#define EX_MAX ((size_t)4 << 20)

static const char *const col_names[EX_NCOLS] = {
    "Text",
    "Sentences",
    "Error Flag",
    "Error Sentence ID",
    "Corrected Sentence",
    "Reasoning",
    "Text ID",
    "Corrected Text",
};

int mtx_examples_looks_like_eval(const char *path)
{
    const char *b = strrchr(path, '/');
    char low[256];
    size_t i;

    b = b ? b + 1 : path;
    for (i = 0; b[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)b[i]);
    low[i] = '\0';
    return strstr(low, "valid") || strstr(low, "test") || strstr(low, "-val");
}

/* Appends the sentence lines of one row. */
static enum mt_status put_sentences(struct mt_buf *b, struct mt_str text,
                                    struct mt_str field)
{
    struct mt_medec_sentence *ms = NULL;
    size_t n = 0;
    size_t i;
    enum mt_status st = MT_EPARSE;

    if (field.n)
        st = mtx_medec_sentences_parse(field.p, field.n, &ms, &n, NULL);
    if (st != MT_OK)
        return st;
    st = mtx_buf_append_str(b, "<sentences>\n");
    for (i = 0; st == MT_OK && i < n; i++)
        st = mtx_buf_printf(b, "%zu | %.*s\n", i,
                            (int)(ms[i].span.end - ms[i].span.start),
                            field.p + ms[i].span.start);
    mt_free(ms);
    (void)text;
    return st == MT_OK ? mtx_buf_append_str(b, "</sentences>\n") : st;
}

/* The answer of one example as the single prompt's reply schema has it:
 * the file's reasoning first when it has a Reasoning column (MedPrompt's
 * chain-of-thought examples; Nori et al. let GPT-4 write that reasoning,
 * medtrust takes the file's own, which `medtrust examples --explain`
 * writes), then the verdict. */
static char *answer_json(struct mt_csv *c, const long *col, int flag)
{
    struct mt_str sid = mtx_str_trim(mtx_csv_field(c, (size_t)col[C_SID]));
    struct mt_str corr = mtx_csv_field(c, (size_t)col[C_CORR]);
    struct mt_str why =
        col[C_REASON] >= 0
            ? mtx_str_trim(mtx_csv_field(c, (size_t)col[C_REASON]))
            : (struct mt_str){NULL, 0};
    json_t *ans = json_object();
    json_t *verdict =
        json_pack("{s:b,s:i,s:s%}", "is_error", flag, "sentence_id",
                  flag ? atoi(sid.p ? sid.p : "-1") : -1, "corrected_sentence",
                  flag ? corr.p : "", flag ? corr.n : (size_t)0);
    char *s = NULL;

    if (ans && why.n)
        json_object_set_new(ans, "reasoning", json_stringn(why.p, why.n));
    if (ans && verdict && json_object_update(ans, verdict) == 0)
        s = json_dumps(ans, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(verdict);
    json_decref(ans);
    return s;
}

enum mt_status mtx_example_body(struct mt_buf *b, struct mt_csv *c,
                                const long *col)
{
    struct mt_str fl = mtx_str_trim(mtx_csv_field(c, (size_t)col[C_FLAG]));
    int flag = fl.n == 1 && fl.p[0] == '1';
    enum mt_status st;
    char *s;

    st =
        put_sentences(b, mtx_csv_field(c, (size_t)col[C_TEXT]),
                      col[C_SENTS] >= 0 ? mtx_csv_field(c, (size_t)col[C_SENTS])
                                        : (struct mt_str){NULL, 0});
    if (st != MT_OK)
        return st;
    s = answer_json(c, col, flag);
    st = s ? mtx_buf_printf(b, "Answer: %s\n\n", s) : MT_ENOMEM;
    mt_free(s);
    return st;
}

static enum mt_status put_example(struct mt_buf *b, struct mt_csv *c,
                                  const long *col, size_t k)
{
    size_t at = b->len;
    enum mt_status st = mtx_buf_printf(b, "Example %zu\n", k);

    if (st == MT_OK)
        st = mtx_example_body(b, c, col);
    if (st != MT_OK)
        b->len = at; /* a row with a bad Sentences field leaves nothing */
    return st;
}

/* Header names match without regard to case (MedGuards' own files write
 * them in lower case). */
static long find_nocase(struct mt_csv *c, const char *name)
{
    size_t f;

    for (f = 0; f < mtx_csv_nfields(c); f++) {
        struct mt_str h = mtx_str_trim(mtx_csv_field(c, f));

        if (h.n == strlen(name) && strncasecmp(h.p, name, h.n) == 0)
            return (long)f;
    }
    return -1;
}

enum mt_status mtx_examples_cols(struct mt_csv *c, const char *opt,
                                 const char *path, long *col,
                                 struct mt_error *err)
{
    int got = 0;
    enum mt_status st = mtx_csv_next(c, &got, err);
    int i;

    if (st != MT_OK)
        return st;
    for (i = 0; i < EX_NCOLS; i++)
        col[i] = got ? find_nocase(c, col_names[i]) : -1;
    if (col[C_SENTS] < 0 || col[C_FLAG] < 0 || col[C_SID] < 0 ||
        col[C_CORR] < 0)
        return mt_fail(err, MT_EPARSE,
                       "%s %s: needs the columns "
                       "Sentences, Error Flag, Error Sentence ID and "
                       "Corrected Sentence",
                       opt, path);
    return MT_OK;
}

static enum mt_status read_rows(struct mt_agent *a, struct mt_csv *c,
                                const long *col, struct mt_buf *b,
                                struct mt_error *err)
{
    size_t want = a->p.max_few_shot;
    size_t n_err = 0;
    size_t n_ok = 0;
    int got = 1;
    enum mt_status st = MT_OK;

    while (st == MT_OK && n_err + n_ok < want) {
        struct mt_str fl;
        int flag;

        st = mtx_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        fl = mtx_str_trim(mtx_csv_field(c, (size_t)col[C_FLAG]));
        flag = fl.n == 1 && fl.p[0] == '1';
        if (flag ? n_err >= (want + 1) / 2 : n_ok >= want / 2)
            continue;
        if (put_example(b, c, col, n_err + n_ok + 1) != MT_OK)
            continue; /* a row with a bad Sentences field is skipped */
        n_err += (size_t)flag;
        n_ok += (size_t)!flag;
    }
    return st;
}

enum mt_status mtx_agent_examples_load(struct mt_agent *a, struct mt_error *err)
{
    const char *path = a->p.few_shot_path;
    struct mt_buf b = MT_BUF_INIT(EX_MAX);
    struct mt_csv *c = NULL;
    struct mt_str sys;
    struct mt_str user;
    long col[EX_NCOLS];
    enum mt_status st;

    if (a->p.examples_path)
        return mtx_knn_load(a, err);
    if (!path) {
        mtx_prompts_get(a->prompts, "examples", &sys, &user);
        a->examples = mt_strndup(user.p, user.n);
        return a->examples ? MT_OK : MT_ENOMEM;
    }
    if (mtx_examples_looks_like_eval(path))
        return mt_fail(err, MT_EINVAL,
                       "--few-shot %s looks like an "
                       "evaluation split (validation/test): give a "
                       "training split",
                       path);
    st = mtx_csv_open(path, NULL, &c, err);
    if (st == MT_OK)
        st = mtx_examples_cols(c, "--few-shot", path, col, err);
    if (st == MT_OK)
        st = read_rows(a, c, col, &b, err);
    if (st == MT_OK)
        st = mtx_buf_reserve(&b, 1);
    mtx_csv_close(c);
    if (st == MT_OK)
        a->examples = mtx_buf_take(&b);
    mtx_buf_free(&b);
    return st;
}
