/* medtrust corpus vote|filter: IryoNLP's MedWiki recipe as a tool. vote
 * asks an LLM, --votes times at temperature 1.0, whether each item (a
 * BERTopic topic's top words, or a document) is medical and keeps the
 * items with at least --min-yes yes votes; filter then keeps the
 * documents whose label passed. Votes go through the call cache and a
 * journal, so a rerun costs no model calls and --resume skips finished
 * items, as mediqa does. The run and the filter are the batch layer's
 * (batch/vote.h); this file reads the options and prints the summary. */
#include <stdio.h>
#include <string.h>

#include "batch/vote.h"
#include "cli/cli.h"
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

/* ==== vote (batch/vote.h) ==== */

static int vote_opts(struct cli_args *a, struct mtx_vote_params *p,
                     struct mt_llm_params *lp)
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
    mtx_vote_default_params(p);
    p->input = cli_get(a, "input");
    p->out = cli_get(a, "out");
    p->prompt = cli_get(a, "prompt");
    p->votes = (unsigned)v;
    p->min_yes = (unsigned)m;
    p->resume = cli_get(a, "resume") != NULL;
    return cli_rows_params_read(a, "vote", (unsigned)j, &p->rows, lp);
}

static int run_vote(struct cli_args *a)
{
    struct mtx_vote_params p;
    struct mtx_vote_stats s;
    struct mt_llm_params lp;
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    if (vote_opts(a, &p, &lp) < 0)
        return 1;
    st = mtx_vote_run(&p, &s, &err);
    if (st == MT_OK)
        fprintf(stderr,
                "corpus vote: %zu items, %zu kept, %zu failed (run "
                "again with --resume to retry them)\n",
                s.items, s.kept, s.failed);
    if (st == MT_OK && s.failed)
        st = mt_fail(&err, MT_EIO, "%zu items could not be voted on", s.failed);
    return st == MT_OK ? 0 : cli_fail(&err, st);
}

/* ==== filter ==== */

static int run_filter(struct cli_args *a)
{
    struct mt_error err = {MT_OK, ""};
    size_t counts[2] = {0, 0};
    enum mt_status st;

    if (!cli_get(a, "keep") || !cli_get(a, "input")) {
        fprintf(stderr, "medtrust corpus filter: --keep and --input are "
                        "required\nTry 'medtrust corpus --help'.\n");
        return 1;
    }
    st = mtx_vote_filter(cli_get(a, "keep"), cli_get(a, "input"),
                         cli_get(a, "label"), cli_get(a, "out"), counts, &err);
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
