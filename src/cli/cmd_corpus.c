/* medtrust corpus vote|filter: IryoNLP's MedWiki recipe as a tool. vote
 * asks an LLM, --votes times at temperature 1.0, whether each item (a
 * BERTopic topic's top words, or a document) is medical and keeps the
 * items with at least --min-yes yes votes; filter then keeps the
 * documents whose label passed. Votes go through the call cache and a
 * journal, so a rerun costs no model calls and --resume skips finished
 * items, as mediqa does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "batch/journal.h"
#include "core/buf.h"
#include "core/file.h"
#include "core/jsonl.h"
#include "batch/rows.h"
#include "batch/vote.h"
#include "medtrust/core.h"
#include "medtrust/model.h"

static const struct cli_opt corpus_opts[] = {
    {"input", 'i', "FILE",
     "vote: JSONL items {\"id\", \"text\" | \"words\": [...] | \"title\"}; "
     "filter: the documents to filter",
     0},
    {"out", 'o', "FILE",
     "vote: one {\"id\",\"votes\",\"yes\",\"keep\"} line per item; filter: "
     "the kept documents (default stdout for filter)",
     0},
    {"llm", 'l', "SPEC",
     "vote: openai:URL#MODEL or gguf:PATH (default $MEDTRUST_LLM)", 0},
    CLI_LORA_OPT,
    {"votes", 'n', "N", "vote: questions per item, 1..64 (default 5)", 0},
    {"min-yes", 'm', "N",
     "vote: yes votes an item needs to be kept (default 4)", 0},
    {"prompt", 'p', "FILE",
     "vote: the question; {{text}} stands for the item (default: the "
     "built-in prompt corpus_vote.txt's user part: is this topic medical? "
     "answer yes or no)",
     0},
    {"jobs", 'J', "N", "vote: items in parallel, 1..64 (default 4)", 0},
    {"resume", 'r', NULL,
     "vote: keep the items OUT.journal holds from an interrupted run", 0},
    {"keep", 'k', "FILE", "filter: the votes file of corpus vote", 0},
    {"label", 0, "FIELD",
     "filter: the document field naming its item (default \"topic\"; the "
     "document's \"id\" when it has no such field)",
     0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    CLI_MODEL_CALL_OPTS,
    {NULL, 0, NULL, NULL, 0},
};

struct item {
    char *id;
    char *text; /* what {{text}} becomes */
    char *line; /* the result line, once voted */
    int resumed;
    int keep; /* voted (or resumed) "keep": true */
};

struct vote_run {
    struct item *items;
    size_t n;
    char *prompt;
    struct mtx_rows *rows; /* the model over the items (batch/rows.h) */
    unsigned votes;
    unsigned min_yes;
    struct mtx_journal *journal;
    size_t failed;
};

/* ==== Reading the items ==== */

/* An item's text: "text", else "words" joined with ", ", else "title". */
static char *item_text(json_t *o)
{
    json_t *w = json_object_get(o, "words");
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 26);
    size_t i;

    if (json_is_string(json_object_get(o, "text")))
        return mt_strdup(json_string_value(json_object_get(o, "text")));
    for (i = 0; i < json_array_size(w); i++) {
        const char *s = json_string_value(json_array_get(w, i));

        if (s && (mtx_buf_append_str(&b, i ? ", " : "") != MT_OK ||
                  mtx_buf_append_str(&b, s) != MT_OK))
            break;
    }
    if (b.len)
        return mtx_buf_take(&b);
    mtx_buf_free(&b);
    if (json_is_string(json_object_get(o, "title")))
        return mt_strdup(json_string_value(json_object_get(o, "title")));
    return NULL;
}

static enum mt_status add_item(struct vote_run *r, json_t *o, const char *path,
                               size_t line, size_t *cap, struct mt_error *err)
{
    json_t *id = json_object_get(o, "id");
    struct item *x;

    if (!json_is_string(id) && !json_is_integer(id))
        return mt_fail(err, MT_EPARSE, "%s:%zu: item without an \"id\"", path,
                       line);
    if (r->n == *cap) {
        struct item *v = mt_realloc(r->items, (*cap * 2 + 16) * sizeof *v);

        if (!v)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        r->items = v;
        *cap = *cap * 2 + 16;
    }
    x = &r->items[r->n];
    memset(x, 0, sizeof *x);
    x->id = json_is_string(id) ? mt_strdup(json_string_value(id))
                               : json_dumps(id, JSON_ENCODE_ANY);
    x->text = item_text(o);
    r->n++;
    if (!x->id)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    if (!x->text)
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: item %s has no \"text\", \"words\" or "
                       "\"title\"",
                       path, line, x->id);
    return MT_OK;
}

static enum mt_status read_items(struct vote_run *r, const char *path,
                                 struct mt_error *err)
{
    struct mt_jsonl *j = NULL;
    json_t *o = NULL;
    size_t cap = 0;
    enum mt_status st = mtx_jsonl_open(path, NULL, &j, err);

    while (st == MT_OK && (st = mtx_jsonl_next(j, &o, err)) == MT_OK && o)
        st = add_item(r, o, path, mtx_jsonl_line(j), &cap, err);
    mtx_jsonl_close(j);
    if (st == MT_OK && r->n == 0)
        st = mt_fail(err, MT_EPARSE, "%s: no items", path);
    return st;
}

/* One item (the rows runner's callback): its votes (batch/vote.h)
 * journaled, or the item named and counted as failed; a journal that
 * cannot be written ends the run. */
static enum mt_status vote_item(void *user, struct mt_llm *llm, size_t i,
                                enum mtx_row_outcome *out,
                                struct mt_error *jerr)
{
    struct vote_run *r = user;
    struct item *x = &r->items[i];
    struct mt_error err = {MT_OK, ""};
    char *res = mtx_vote_item(llm, r->prompt, x->text, r->votes, r->min_yes,
                              &x->keep, &err);
    char *line = res ? mtx_work_line(x->id, res, NULL) : NULL;

    x->line = line;
    if (!line) {
        mt_log(MT_LOG_ERROR, "item %s: %s", x->id,
               err.msg[0] ? err.msg : "out of memory");
        *out = MTX_ROW_FAILED;
        return MT_OK;
    }
    return mtx_journal_append(r->journal, x->id, line, NULL, jerr);
}

static int item_resumed(void *user, size_t i)
{
    return ((struct vote_run *)user)->items[i].resumed;
}

/* ==== The vote run ==== */

static void on_resumed(const char *id, const char *line, void *user)
{
    struct vote_run *r = user;
    size_t i;

    for (i = 0; i < r->n; i++) {
        if (r->items[i].resumed || strcmp(r->items[i].id, id) != 0)
            continue;
        r->items[i].line = mt_strdup(line);
        r->items[i].resumed = r->items[i].line != NULL;
        r->items[i].keep =
            r->items[i].resumed && strstr(line, "\"keep\":true") != NULL;
        return;
    }
}

static enum mt_status write_votes(const struct vote_run *r, const char *path,
                                  struct mt_error *err)
{
    struct mt_buf b = MT_BUF_INIT((size_t)1 << 31);
    enum mt_status st = mtx_buf_reserve(&b, 1);
    size_t i;

    for (i = 0; st == MT_OK && i < r->n; i++)
        if (r->items[i].line)
            st = mtx_buf_printf(&b, "%s\n", r->items[i].line);
    st = st == MT_OK ? mtx_file_write_atomic(path, b.data, b.len, err)
                     : mt_fail(err, st, "%s: out of memory", path);
    mtx_buf_free(&b);
    return st;
}

static int vote_opts(struct cli_args *a, struct vote_run *r,
                     struct mtx_rows_params *rp, struct mt_llm_params *lp)
{
    unsigned long v = 5, m = 4, j = 4;

    if (cli_get_uint(a, "votes", 1, 64, &v) < 0 ||
        cli_get_uint(a, "min-yes", 0, 64, &m) < 0 ||
        cli_get_uint(a, "jobs", 1, 64, &j) < 0)
        return -1;
    if (m > v) {
        fprintf(stderr,
                "medtrust corpus vote: --min-yes %lu is more than "
                "--votes %lu\n",
                m, v);
        return -1;
    }
    if (!cli_get(a, "input") || !cli_get(a, "out")) {
        fprintf(stderr, "medtrust corpus vote: --input and --out are "
                        "required\nTry 'medtrust corpus --help'.\n");
        return -1;
    }
    r->votes = (unsigned)v;
    r->min_yes = (unsigned)m;
    return cli_rows_params_read(a, "vote", (unsigned)j, rp, lp);
}

static enum mt_status vote_open(struct cli_args *a, struct vote_run *r,
                                const struct mtx_rows_params *rp,
                                struct mt_error *err)
{
    char jpath[4200];
    enum mt_status st = read_items(r, cli_get(a, "input"), err);

    if (st == MT_OK)
        r->prompt = cli_get(a, "prompt")
                        ? mtx_vote_prompt_file(cli_get(a, "prompt"), err)
                        : mtx_vote_builtin_prompt(err);
    if (st == MT_OK && !r->prompt)
        st = err->status != MT_OK ? err->status : MT_ENOMEM;
    if (st == MT_OK)
        st = mtx_rows_open(rp, &r->rows, err);
    snprintf(jpath, sizeof jpath, "%s.journal", cli_get(a, "out"));
    if (st == MT_OK)
        st = mtx_journal_open(jpath, cli_get(a, "resume") != NULL, on_resumed,
                              r, &r->journal, err);
    return st;
}

static void vote_free(struct vote_run *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        mt_free(r->items[i].id);
        mt_free(r->items[i].text);
        mt_free(r->items[i].line);
    }
    mt_free(r->items);
    mt_free(r->prompt);
    mtx_journal_close(r->journal);
    mtx_rows_close(r->rows);
}

static size_t kept_items(const struct vote_run *r)
{
    size_t i, k = 0;

    for (i = 0; i < r->n; i++)
        k += r->items[i].line && r->items[i].keep;
    return k;
}

static int run_vote(struct cli_args *a)
{
    struct vote_run r;
    struct mtx_rows_params rp;
    struct mt_llm_params lp;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    memset(&r, 0, sizeof r);
    if (vote_opts(a, &r, &rp, &lp) < 0) {
        vote_free(&r);
        return 1;
    }
    st = vote_open(a, &r, &rp, &err);
    if (st == MT_OK)
        st = mtx_rows_run(r.rows, r.n, vote_item, item_resumed, &r, &r.failed,
                          &err);
    if (st == MT_OK)
        st = write_votes(&r, cli_get(a, "out"), &err);
    if (st == MT_OK)
        fprintf(stderr,
                "corpus vote: %zu items, %zu kept, %zu failed (run "
                "again with --resume to retry them)\n",
                r.n, kept_items(&r), r.failed);
    if (st == MT_OK && r.failed)
        st = mt_fail(&err, MT_EIO, "%zu items could not be voted on", r.failed);
    vote_free(&r);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

/* ==== filter ==== */

struct keep_set {
    char **ids;
    size_t n;
    size_t cap;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum mt_status keep_add(struct keep_set *k, json_t *o, const char *path,
                               size_t line, struct mt_error *err)
{
    json_t *id = json_object_get(o, "id");
    json_t *keep = json_object_get(o, "keep");

    if (!json_is_string(id) || !json_is_boolean(keep))
        return mt_fail(err, MT_EPARSE,
                       "%s:%zu: not a corpus vote line (needs \"id\" and "
                       "\"keep\")",
                       path, line);
    if (!json_is_true(keep))
        return MT_OK;
    if (k->n == k->cap) {
        char **v = mt_realloc(k->ids, (k->cap * 2 + 64) * sizeof *v);

        if (!v)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        k->ids = v;
        k->cap = k->cap * 2 + 64;
    }
    k->ids[k->n] = mt_strdup(json_string_value(id));
    return k->ids[k->n++] ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

static enum mt_status keep_read(struct keep_set *k, const char *path,
                                struct mt_error *err)
{
    struct mt_jsonl *j = NULL;
    json_t *o = NULL;
    enum mt_status st = mtx_jsonl_open(path, NULL, &j, err);

    while (st == MT_OK && (st = mtx_jsonl_next(j, &o, err)) == MT_OK && o)
        st = keep_add(k, o, path, mtx_jsonl_line(j), err);
    mtx_jsonl_close(j);
    if (st == MT_OK && k->n)
        qsort(k->ids, k->n, sizeof *k->ids, cmp_str);
    return st;
}

static int kept(const struct keep_set *k, json_t *doc, const char *label)
{
    json_t *v = json_object_get(doc, label);
    char buf[32];
    const char *key = buf;

    if (!v)
        v = json_object_get(doc, "id");
    if (json_is_string(v))
        key = json_string_value(v);
    else if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
    else
        return 0;
    return k->n && bsearch(&key, k->ids, k->n, sizeof *k->ids, cmp_str);
}

static enum mt_status filter_docs(const struct keep_set *k, const char *in,
                                  const char *label, FILE *out,
                                  size_t counts[2], struct mt_error *err)
{
    struct mt_jsonl *j = NULL;
    json_t *o = NULL;
    enum mt_status st = mtx_jsonl_open(in, NULL, &j, err);

    while (st == MT_OK && (st = mtx_jsonl_next(j, &o, err)) == MT_OK && o) {
        int keep = kept(k, o, label);

        counts[keep]++;
        if (keep && (json_dumpf(o, out, JSON_COMPACT | JSON_PRESERVE_ORDER) ||
                     fputc('\n', out) == EOF))
            st = mt_fail(err, MT_EIO, "write failed");
    }
    mtx_jsonl_close(j);
    return st;
}

/* Writes to OUT.part and renames it into place on success. */
static enum mt_status filter_to(const struct keep_set *k, struct cli_args *a,
                                size_t counts[2], struct mt_error *err)
{
    const char *out = cli_get(a, "out");
    const char *label = cli_get(a, "label") ? cli_get(a, "label") : "topic";
    char tmp[4200];
    FILE *f = stdout;
    enum mt_status st;

    if (out) {
        snprintf(tmp, sizeof tmp, "%s.part", out);
        f = mtx_file_fopen(tmp, "wb", 0666);
        if (!f)
            return mt_fail(err, mtx_file_errno_status(errno),
                           "%s: cannot create: %s", tmp, strerror(errno));
    }
    st = filter_docs(k, cli_get(a, "input"), label, f, counts, err);
    if (!out)
        return st;
    if (st == MT_OK && mtx_file_flush_sync(f, 0) != 0)
        st = mt_fail(err, mtx_file_errno_status(errno), "%s: write failed: %s",
                     tmp, strerror(errno));
    if (fclose(f) != 0 && st == MT_OK)
        st = mt_fail(err, mtx_file_errno_status(errno), "%s: write failed: %s",
                     tmp, strerror(errno));
    if (st == MT_OK && mtx_file_rename(tmp, out) != 0)
        st = mt_fail(err, mtx_file_errno_status(errno),
                     "%s: cannot rename into place: %s", out, strerror(errno));
    if (st == MT_OK)
        st = mtx_file_sync_dir(out, err);
    if (st != MT_OK)
        remove(tmp);
    return st;
}

static int run_filter(struct cli_args *a)
{
    struct keep_set k = {NULL, 0, 0};
    struct mt_error err = {MT_OK, ""};
    size_t counts[2] = {0, 0};
    size_t i;
    enum mt_status st;

    if (!cli_get(a, "keep") || !cli_get(a, "input")) {
        fprintf(stderr, "medtrust corpus filter: --keep and --input are "
                        "required\nTry 'medtrust corpus --help'.\n");
        return 1;
    }
    st = keep_read(&k, cli_get(a, "keep"), &err);
    if (st == MT_OK)
        st = filter_to(&k, a, counts, &err);
    for (i = 0; i < k.n; i++)
        mt_free(k.ids[i]);
    mt_free(k.ids);
    if (st != MT_OK)
        return cli_fail(&err, st);
    fprintf(stderr, "corpus filter: %zu documents kept, %zu dropped\n",
            counts[1], counts[0]);
    return 0;
}

static int corpus_run(struct cli_args *a)
{
    const char *sub = a->npos > 0 ? a->pos[0] : "";

    if (a->npos == 1 && strcmp(sub, "vote") == 0)
        return run_vote(a);
    if (a->npos == 1 && strcmp(sub, "filter") == 0)
        return run_filter(a);
    fprintf(stderr, "medtrust corpus: say 'vote' or 'filter'\n"
                    "Try 'medtrust corpus --help'.\n");
    return 1;
}

const struct cli_verb cli_verb_corpus = {
    "corpus",
    "keep the medical part of a corpus by LLM votes (MedWiki's recipe)",
    "vote --input ITEMS.jsonl --out VOTES.jsonl [--llm SPEC] [--votes 5] "
    "[--min-yes 4] [--prompt FILE] | filter --keep VOTES.jsonl --input "
    "DOCS.jsonl [--out KEPT.jsonl] [--label FIELD]",
    "vote asks the model --votes times (temperature 1.0, one call a vote,\n"
    "each with its own seed) whether each item is medical, as IryoNLP\n"
    "built MedWiki from BERTopic topics; a reply whose first word is \"yes\"\n"
    "is a yes vote. A reply whose first word is neither yes nor no is asked\n"
    "once more (\"Answer with one word: yes or no.\"); still neither, the\n"
    "vote is \"other\". Items with at least --min-yes yes votes get \"keep\":\n"
    "true. Every finished item is journaled in OUT.journal: --resume keeps\n"
    "them and asks only about the rest; --cache FILE makes a whole rerun\n"
    "free of model calls. OUT is written, in input order, when all are\n"
    "done. filter keeps the documents of --input whose --label field (or\n"
    "id) names an item voted \"keep\".",
    corpus_opts,
    corpus_run,
};
