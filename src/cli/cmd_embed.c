/* medtrust embed: sentence vectors from the configured embedder, for
 * texts on the command line or a JSONL file, one line per text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/jsonl.h"
#include "medtrust/core.h"
#include "model/embed.h"

#define EMBED_BATCH 128 /* texts per embedder call: enough for every thread */

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
    {"dims", 'd', "N",
     "truncate vectors to N dimensions (Matryoshka), "
     "1..65536 (default: native)",
     0},
    {"threads", 't', "N",
     "threads for local models, 1..1024 (default: "
     "all CPUs)",
     0},
    {"timeout", 0, "SECONDS",
     "bound on each remote call, 1..86400 "
     "(default 120 or MEDTRUST_LLM_TIMEOUT)",
     0},
    {NULL, 0, NULL, NULL, 0},
};

static void print_vec(const char *text, const float *v, uint32_t d, int json)
{
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

/* Prints the failure of one item so a batch job can go on. */
static void print_error(const char *text, const struct mt_error *err, int json)
{
    json_t *o = json_pack("{s:s,s:s}", "text", text, "error", err->msg);
    char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    if (json && t)
        printf("%s\n", t);
    else
        fprintf(stderr, "medtrust embed: %.60s: %s\n", text, err->msg);
    mt_free(t);
    json_decref(o);
}

/* Embeds and prints texts[0..n). When the batch fails, each text is tried
 * alone so that only the failing ones are reported (and *failed set). */
static enum mt_status flush(struct mt_embedder *e, char *const *texts, size_t n,
                            int json, int *failed, struct mt_error *err)
{
    struct mt_str s[EMBED_BATCH];
    uint32_t d = mt_embedder_dims(e);
    float *v = mt_malloc((n ? n : 1) * d * sizeof *v);
    enum mt_status st;
    size_t i;

    if (!v)
        return mt_fail(err, MT_ENOMEM, "embed: out of memory");
    for (i = 0; i < n; i++)
        s[i] = mtx_str_from(texts[i]);
    st = mt_embedder_embed(e, s, n, v, err);
    for (i = 0; i < n; i++) {
        if (st == MT_OK) {
            print_vec(texts[i], v + i * d, d, json);
        } else if (mt_embedder_embed(e, s + i, 1, v, err) == MT_OK) {
            print_vec(texts[i], v, d, json);
        } else {
            print_error(texts[i], err, json);
            *failed = 1;
        }
    }
    mt_free(v);
    return MT_OK;
}

static enum mt_status embed_args(struct mt_embedder *e, char **pos, int n,
                                 int json, int *failed, struct mt_error *err)
{
    enum mt_status st = MT_OK;
    int i;

    for (i = 0; st == MT_OK && i < n; i += EMBED_BATCH) {
        int k = n - i < EMBED_BATCH ? n - i : EMBED_BATCH;
        st = flush(e, pos + i, (size_t)k, json, failed, err);
    }
    return st;
}

static void free_texts(char **t, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        mt_free(t[i]);
}

static enum mt_status embed_file(struct mt_embedder *e, const char *path,
                                 int json, int *failed, struct mt_error *err)
{
    struct mt_jsonl *r = NULL;
    char *texts[EMBED_BATCH];
    size_t n = 0;
    json_t *o = NULL;
    enum mt_status st = mtx_jsonl_open(path, NULL, &r, err);

    while (st == MT_OK && (st = mtx_jsonl_next(r, &o, err)) == MT_OK && o) {
        const char *t = json_string_value(json_object_get(o, "text"));
        if (!t) {
            st = mt_fail(err, MT_EPARSE, "%s:%zu: no \"text\" string", path,
                         mtx_jsonl_line(r));
            break;
        }
        texts[n] = mt_strdup(t);
        if (!texts[n])
            st = mt_fail(err, MT_ENOMEM, "embed: out of memory");
        else if (++n == EMBED_BATCH) {
            st = flush(e, texts, n, json, failed, err);
            free_texts(texts, n);
            n = 0;
        }
    }
    if (st == MT_OK && n)
        st = flush(e, texts, n, json, failed, err);
    free_texts(texts, n);
    mtx_jsonl_close(r);
    return st;
}

static int read_params(struct cli_args *a, struct mt_embedder_params *p)
{
    unsigned long v = 0;

    mt_embedder_default_params(p);
    if (cli_get_uint(a, "dims", 1, 65536, &v) < 0)
        return -1;
    p->dims = (uint32_t)v;
    v = 0;
    if (cli_get_uint(a, "threads", 1, 1024, &v) < 0)
        return -1;
    p->threads = (uint32_t)v;
    p->cache_path = cli_get(a, "cache");
    v = 0;
    if (cli_get_uint(a, "timeout", 1, 86400, &v) < 0)
        return -1;
    if (v)
        p->timeout_s = (double)v;
    else if (getenv("MEDTRUST_LLM_TIMEOUT"))
        p->timeout_s = atof(getenv("MEDTRUST_LLM_TIMEOUT"));
    return 0;
}

static int embed_run(struct cli_args *a)
{
    struct mt_embedder_params p;
    struct mt_embedder *e = NULL;
    struct mt_error err = {MT_OK, ""};
    const char *spec = cli_get(a, "embedder");
    const char *input = cli_get(a, "input");
    int json = cli_get(a, "json") != NULL;
    int failed = 0;
    enum mt_status st;

    mtx_jsonl_init_alloc();
    if (read_params(a, &p) < 0)
        return 1;
    if ((a->npos == 0) == (input == NULL)) {
        fprintf(stderr, "medtrust embed: give TEXT arguments or --input "
                        "(not both)\nTry 'medtrust embed --help'.\n");
        return 1;
    }
    /* MEDTRUST_EMBEDDER=none only means "index without vectors"; embedding
     * itself then uses the built-in default. */
    if (!spec)
        spec = getenv("MEDTRUST_EMBEDDER");
    if (spec && strcmp(spec, "none") == 0 && !cli_get(a, "embedder"))
        spec = NULL;
    st = mt_embedder_open(spec, &p, &e, &err);
    if (st == MT_OK && input)
        st = embed_file(e, input, json, &failed, &err);
    else if (st == MT_OK)
        st = embed_args(e, a->pos, a->npos, json, &failed, &err);
    mt_embedder_close(e);
    if (st != MT_OK)
        return cli_fail(&err, st);
    return failed ? 1 : 0; /* failed items were reported one by one */
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
