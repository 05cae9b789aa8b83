/* Few-shot examples for the single strategy: the built-in ones (our own
 * short notes, src/llmcall/prompts/examples.txt) or rows of a MEDEC-format
 * training CSV given with --few-shot. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check/agent_int.h"
#include "core/csv.h"
#include "medtrust/core.h"
#include "text/sentence.h"

#define EX_MAX ((size_t)4 << 20)

enum { C_TEXT, C_SENTS, C_FLAG, C_SID, C_CORR, NCOLS };
static const char *const col_names[NCOLS] = {
    "Text",
    "Sentences",
    "Error Flag",
    "Error Sentence ID",
    "Corrected Sentence",
};

/* Refuses file names that look like an evaluation split. */
static int looks_like_eval(const char *path)
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
        st = mt_medec_sentences_parse(field.p, field.n, &ms, &n, NULL);
    if (st != MT_OK)
        return st;
    st = mt_buf_append_str(b, "<sentences>\n");
    for (i = 0; st == MT_OK && i < n; i++)
        st = mt_buf_printf(b, "%zu | %.*s\n", i,
                           (int)(ms[i].span.end - ms[i].span.start),
                           field.p + ms[i].span.start);
    mt_free(ms);
    (void)text;
    return st == MT_OK ? mt_buf_append_str(b, "</sentences>\n") : st;
}

static enum mt_status put_example(struct mt_buf *b, struct mt_csv *c,
                                  const long *col, size_t k, int flag)
{
    struct mt_str sid = mt_str_trim(mt_csv_field(c, (size_t)col[C_SID]));
    struct mt_str corr = mt_csv_field(c, (size_t)col[C_CORR]);
    json_t *ans;
    char *s;
    enum mt_status st = mt_buf_printf(b, "Example %zu\n", k);

    if (st == MT_OK)
        st = put_sentences(b, mt_csv_field(c, (size_t)col[C_TEXT]),
                           col[C_SENTS] >= 0
                               ? mt_csv_field(c, (size_t)col[C_SENTS])
                               : (struct mt_str){NULL, 0});
    if (st != MT_OK)
        return st;
    ans =
        json_pack("{s:b,s:i,s:s%}", "is_error", flag, "sentence_id",
                  flag ? atoi(sid.p ? sid.p : "-1") : -1, "corrected_sentence",
                  flag ? corr.p : "", flag ? corr.n : (size_t)0);
    s = ans ? json_dumps(ans, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(ans);
    st = s ? mt_buf_printf(b, "Answer: %s\n\n", s) : MT_ENOMEM;
    mt_free(s);
    return st;
}

static enum mt_status find_cols(struct mt_csv *c, const char *path, long *col,
                                struct mt_error *err)
{
    int got = 0;
    enum mt_status st = mt_csv_next(c, &got, err);
    int i;

    if (st != MT_OK)
        return st;
    for (i = 0; i < NCOLS; i++)
        col[i] = got ? mt_csv_find(c, col_names[i]) : -1;
    if (col[C_SENTS] < 0 || col[C_FLAG] < 0 || col[C_SID] < 0 ||
        col[C_CORR] < 0)
        return mt_fail(err, MT_EPARSE,
                       "--few-shot %s: needs the columns "
                       "Sentences, Error Flag, Error Sentence ID and "
                       "Corrected Sentence",
                       path);
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

        st = mt_csv_next(c, &got, err);
        if (st != MT_OK || !got)
            break;
        fl = mt_str_trim(mt_csv_field(c, (size_t)col[C_FLAG]));
        flag = fl.n == 1 && fl.p[0] == '1';
        if (flag ? n_err >= (want + 1) / 2 : n_ok >= want / 2)
            continue;
        if (put_example(b, c, col, n_err + n_ok + 1, flag) != MT_OK)
            continue; /* a row with a bad Sentences field is skipped */
        n_err += (size_t)flag;
        n_ok += (size_t)!flag;
    }
    return st;
}

enum mt_status mt_agent_examples_load(struct mt_agent *a, struct mt_error *err)
{
    const char *path = a->p.few_shot_path;
    struct mt_buf b = MT_BUF_INIT(EX_MAX);
    struct mt_csv *c = NULL;
    struct mt_str sys;
    struct mt_str user;
    long col[NCOLS];
    enum mt_status st;

    if (!path) {
        mt_prompts_get(a->prompts, "examples", &sys, &user);
        a->examples = mt_strndup(user.p, user.n);
        return a->examples ? MT_OK : MT_ENOMEM;
    }
    if (looks_like_eval(path))
        return mt_fail(err, MT_EINVAL,
                       "--few-shot %s looks like an "
                       "evaluation split (validation/test): give a "
                       "training split",
                       path);
    st = mt_csv_open(path, NULL, &c, err);
    if (st == MT_OK)
        st = find_cols(c, path, col, err);
    if (st == MT_OK)
        st = read_rows(a, c, col, &b, err);
    if (st == MT_OK)
        st = mt_buf_reserve(&b, 1);
    mt_csv_close(c);
    if (st == MT_OK)
        a->examples = mt_buf_take(&b);
    mt_buf_free(&b);
    return st;
}
