/* medtrust embed: sentence vectors from the configured embedder, for
 * texts on the command line or a JSONL file, one line per text: its
 * options and lines; the batching is model/embed_texts.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/embed_texts.h"

/* The sink's user: --json, and whether a text failed (exit status 1). */
struct fails {
    int json;
    int failed;
};

static const struct cli_opt embed_opts[] = {
    {"cache", 0, "FILE",
     "SQLite call cache: texts embedded before cost nothing (default off)", 0},
    {"embedder", 'e', "SPEC",
     "use-lite (default), gguf:PATH, onnx:DIR[?pooling=cls|mean|max] or "
     "openai:BASE_URL#MODEL (or MEDTRUST_EMBEDDER)",
     0},
    {"input", 'i', "FILE",
     "JSONL with a \"text\" field a line; - for "
     "stdin",
     0},
    {"json", 'j', NULL, "print {\"text\",\"vector\":[...]} a line", 0},
    CLI_PARAM_KEY("dims", 'd', &mt_embedder_param_table),
    CLI_PARAM_KEY("threads", 't', &mt_embedder_param_table),
    CLI_PARAM("timeout", &mt_llm_param_table),
    {NULL, 0, NULL, NULL, 0},
};

/* The sink's on_vec: a text's vector, one line. */
static void print_vec(void *user, const char *text, const float *v, uint32_t d)
{
    int json = ((const struct fails *)user)->json;
    uint32_t k;

    if (json) {
        json_t *s = json_string(text);
        char *t = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        printf("{\"text\":%s,\"vector\":[", t ? t : "\"\"");
        mt_free(t);
        json_decref(s);
    }
    for (k = 0; k < d; k++)
        printf("%s%.7g", k ? (json ? "," : " ") : "", (double)v[k]);
    printf(json ? "]}\n" : "\n");
}

/* The sink's on_fail: prints the failure of one item so a batch job can
 * go on. */
static void print_error(void *user, const char *text,
                        const struct mt_error *err)
{
    struct fails *f = user;
    json_t *o = json_pack("{s:s,s:s}", "text", text, "error", err->msg);
    char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    f->failed = 1;
    if (f->json && t)
        printf("%s\n", t);
    else
        fprintf(stderr, "medtrust embed: %.60s: %s\n", text, err->msg);
    mt_free(t);
    json_decref(o);
}

static int read_params(struct cli_args *a, struct mt_embedder_params *p)
{
    struct mt_llm_params lp; /* --timeout, as every model call has it */

    mt_embedder_default_params(p);
    if (cli_params_read(a, &mt_embedder_param_table, p) < 0)
        return -1;
    p->cache_path = cli_get(a, "cache");
    mt_llm_default_params(&lp);
    if (cli_params_read(a, &mt_llm_param_table, &lp) < 0)
        return -1;
    p->timeout_s = lp.timeout_s;
    return 0;
}

static int embed_run(struct cli_args *a)
{
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    struct mt_error err = {MT_OK, ""};
    const char *input = cli_get(a, "input");
    int json = cli_get(a, "json") != NULL;
    struct fails f = {json, 0};
    const struct mtx_embed_sink sink = {print_vec, print_error, &f};
    enum mt_status st;

    mtx_jsonl_init_alloc();
    if (read_params(a, &p) < 0)
        return 1;
    if ((a->npos == 0) == (input == NULL)) {
        fprintf(stderr, "medtrust embed: give TEXT arguments or --input "
                        "(not both)\nTry 'medtrust embed --help'.\n");
        return 1;
    }
    st = mt_embedder_open(mtx_embed_spec(cli_get(a, "embedder")), &p, &e, &err);
    if (st == MT_OK && input)
        st = mtx_embed_jsonl(e, input, &sink, &err);
    else if (st == MT_OK)
        st = mtx_embed_texts(e, (const char *const *)a->pos, (size_t)a->npos,
                             &sink, &err);
    mt_embedder_close(e);
    if (st != MT_OK)
        return cli_fail(&err, st);
    return f.failed ? 1 : 0; /* failed items were reported one by one */
}

const struct cli_verb cli_verb_embed = {
    "embed",
    "print sentence vectors for texts",
    "[--embedder SPEC] [--json] TEXT... | --input FILE.jsonl",
    "Each text gets one output line: its vector as space-separated numbers,\n"
    "or with --json one {\"text\",\"vector\":[...]} object (or\n"
    "{\"text\",\"error\"} for a text that failed; the others go on, and\n"
    "the exit status is then 1). Vectors are\n"
    "unit length. The embedder is use-lite (built in) unless --embedder or\n"
    "MEDTRUST_EMBEDDER names gguf:PATH, onnx:DIR (an ONNX export folder)\n"
    "or openai:BASE_URL#MODEL (key from\n"
    "MEDTRUST_API_KEY or OPENAI_API_KEY).",
    embed_opts,
    embed_run,
};
