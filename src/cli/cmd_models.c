/* medtrust models: lists the configured LLMs (default and per role),
 * embedder, reranker and NLI model, and checks that each one loads (an
 * LLM answers a one-token chat): its options and lines; the list and the
 * checks are model/probe.c's. */
#include <stdio.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/jsonl.h"
#include "core/redact.h"
#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/probe.h"

static const struct cli_opt models_opts[] = {
    {"llm", 'l', "SPEC",
     "openai:BASE_URL#MODEL or gguf:PATH (default "
     "MEDTRUST_LLM)",
     0},
    CLI_LORA_OPT,
    {"embedder", 'e', "SPEC",
     "embedder (default MEDTRUST_EMBEDDER, else "
     "use-lite)",
     0},
    {"query-embedder", 0, "SPEC",
     "an asymmetric retriever's query embedder (as `index "
     "--query-embedder` records it), checked when given",
     0},
    {"reranker", 'r', "SPEC", "reranker (default MEDTRUST_RERANKER)", 0},
    {"nli", 'n', "SPEC",
     "NLI classifier: gguf:PATH, onnx:DIR, llm, llm:SPEC or "
     "minicheck:SPEC (default MEDTRUST_NLI)",
     0},
    CLI_PARAM("timeout", &mt_llm_param_table),
    CLI_PARAM("ctx", &mt_llm_param_table),
    {"no-check", 0, NULL, "list only; do not load anything", 0},
    {"json", 'j', NULL, "print one JSON object per model", 0},
    {NULL, 0, NULL, NULL, 0},
};

struct check_ctx {
    struct mt_llm_params lp; /* --timeout and --ctx */
    int json;
    int no_check;
    int failed;
};

static void report(struct check_ctx *c, const char *kind, const char *raw,
                   enum mt_status st, const char *detail)
{
    char spec[1024];
    const char *status = c->no_check   ? "unchecked"
                         : st == MT_OK ? "ok"
                                       : "failed";
    json_t *o;
    char *t;

    if (st != MT_OK && !c->no_check)
        c->failed = 1;
    mtx_redact(raw, spec, sizeof spec); /* never print a key or password */
    if (!c->json) {
        printf("%-14s %-40s %s%s%s\n", kind, spec, status,
               detail[0] ? ": " : "", detail);
        return;
    }
    o = json_pack("{s:s,s:s,s:s,s:s}", "kind", kind, "spec", spec, "status",
                  status, "detail", detail);
    t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (t)
        printf("%s\n", t);
    mt_free(t);
    json_decref(o);
}

/* mtx_models_each's callback: one configured model checked (unless
 * --no-check) and its line printed. */
static void check_one(void *user, const char *kind, const char *spec)
{
    struct check_ctx *c = user;
    struct mt_error err = {MT_OK, ""};
    char detail[MT_ERROR_MSG_MAX + 64] = "";
    enum mt_status st = MT_OK;

    if (!spec || !*spec) {
        report(c, kind, "-", MT_OK, "not configured");
        return;
    }
    if (!c->no_check)
        st = mtx_model_probe(kind, spec, &c->lp, detail, sizeof detail, &err);
    if (st != MT_OK)
        snprintf(detail, sizeof detail, "%s",
                 err.msg[0] ? err.msg : mt_status_str(st));
    report(c, kind, spec, st, detail);
}

static int models_run(struct cli_args *a)
{
    struct check_ctx c = {{0}, 0, 0, 0};
    struct mtx_model_specs given;

    mtx_jsonl_init_alloc();
    mt_llm_default_params(&c.lp);
    if (cli_params_read(a, &mt_llm_param_table, &c.lp) < 0)
        return 1;
    c.json = cli_get(a, "json") != NULL;
    c.no_check = cli_get(a, "no-check") != NULL;
    given.llm = cli_get(a, "llm");
    given.embedder = cli_get(a, "embedder");
    given.query_embedder = cli_get(a, "query-embedder");
    given.reranker = cli_get(a, "reranker");
    given.nli = cli_get(a, "nli");
    mtx_models_each(&given, check_one, &c);
    return c.failed ? 1 : 0;
}

const struct cli_verb cli_verb_models = {
    "models",
    "list the configured models and check that they load",
    "[--llm SPEC] [--embedder SPEC] [--reranker SPEC] [--nli SPEC]",
    "Lists the LLM (--llm or MEDTRUST_LLM), each per-role override\n"
    "(MEDTRUST_LLM_<ROLE>, e.g. MEDTRUST_LLM_EVAL), the embedder, the\n"
    "reranker and the NLI model, and checks each: local models are loaded,\n"
    "and an LLM must answer a one-token chat; an openai: or azure: LLM's\n"
    "line ends with the server profile its endpoint got (llama-server,\n"
    "vllm, ollama, lm-studio, openai, azure, deepseek or\n"
    "openai-compatible: auth, URL, token-limit field, temperature,\n"
    "structured-output dialect, reasoning field) and what told it (GET\n"
    "/props, GET /v1/models, the Server header, its first reply or a\n"
    "refusal). Exit status 1 when any\n"
    "check fails. Specs: openai:BASE_URL#MODEL (key from MEDTRUST_API_KEY or\n"
    "OPENAI_API_KEY), azure:https://RESOURCE.openai.azure.com#DEPLOYMENT\n"
    "(or .../openai/v1#DEPLOYMENT; key from AZURE_OPENAI_API_KEY),\n"
    "gguf:PATH, onnx:DIR (an ONNX export folder: embedder, reranker or NLI;\n"
    "an NLI line says how its id2label maps onto SUPPORT, CONTRADICT and\n"
    "NO_EVIDENCE), and use-lite for the embedder.",
    models_opts,
    models_run,
};
