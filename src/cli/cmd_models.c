/* medtrust models: lists the configured LLMs (default and per role),
 * embedder, reranker and NLI model, and checks that each one loads (an
 * LLM answers a one-token chat). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/jsonl.h"
#include "core/redact.h"
#include "medtrust/core.h"
#include "medtrust/model.h"
#include "model/embed.h"
#include "model/llm.h"
#include "model/nli.h"
#include "model/rerank.h"

extern char **environ;

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
    {"timeout", 0, "SECONDS",
     "bound on each check, 1..86400 (default 120 "
     "or MEDTRUST_LLM_TIMEOUT)",
     0},
    {"ctx", 0, "N",
     "the LLM's context in tokens, 256..10000000 (caps a gguf: model's "
     "trained context; an openai: server's context when it cannot say)",
     0},
    {"no-check", 0, NULL, "list only; do not load anything", 0},
    {"json", 'j', NULL, "print one JSON object per model", 0},
    {NULL, 0, NULL, NULL, 0},
};

struct check_ctx {
    double timeout;
    uint32_t n_ctx;
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

/* "context N tokens" and where it came from, or that it is unknown. */
static void context_detail(struct mt_llm *l, char *buf, size_t n)
{
    uint32_t c = mt_llm_n_ctx(l);
    int gguf = strcmp(mt_llm_backend(l), "gguf") == 0;

    if (c)
        snprintf(buf, n, "context %u tokens%s", (unsigned)c,
                 gguf ? "" : " (a slot's, or --ctx)");
    else
        snprintf(buf, n,
                 "context unknown (the server does not say: set "
                 "--ctx, or it is read from its first "
                 "context-length error)");
}

static enum mt_status check_llm(const char *spec, const struct check_ctx *c,
                                char *detail, size_t n, struct mt_error *err)
{
    char cx[160];
    static const struct mt_llm_message ping[] = {{"user", "ping"}};
    struct mt_llm_params p;
    struct mt_chat_params cp;
    struct mt_chat_result r;
    struct mt_llm *l = NULL;
    enum mt_status st;

    mt_llm_default_params(&p);
    p.timeout_s = c->timeout;
    p.max_retries = 1;
    p.n_ctx = c->n_ctx;
    mt_chat_default_params(&cp);
    cp.max_tokens = 1;
    st = mt_llm_open(spec, &p, &l, err);
    if (st == MT_OK)
        st = mt_llm_chat(l, ping, 1, &cp, &r, err);
    if (st == MT_ELIMIT && strstr(err->msg, "on reasoning")) {
        /* a reasoning model thinks past a 1-token ping: it answered */
        st = MT_OK;
        memset(&r, 0, sizeof r);
    }
    if (st == MT_OK) {
        const char *prof = mt_llm_profile(l);
        context_detail(l, cx, sizeof cx);
        snprintf(detail, n, "%s model %s, %s, answered in %.2f s%s%s",
                 mt_llm_backend(l), mt_llm_model(l), cx, r.seconds,
                 prof ? "; server profile: " : "", prof ? prof : "");
        mt_chat_result_free(&r);
    }
    mt_llm_close(l);
    return st;
}

static enum mt_status check_other(const char *kind, const char *spec,
                                  double timeout, char *detail, size_t n,
                                  struct mt_error *err)
{
    struct mt_embedder_params ep;
    struct mt_reranker_params rp;
    struct mt_embedder *e = NULL;
    struct mt_reranker *r = NULL;
    struct mt_nli *nli = NULL;
    enum mt_status st;

    mt_embedder_default_params(&ep);
    mt_reranker_default_params(&rp);
    ep.timeout_s = rp.timeout_s = timeout;
    if (strncmp(kind, "embedder", 8) == 0 ||
        strcmp(kind, "query-embedder") == 0) {
        st = mt_embedder_open(spec, &ep, &e, err);
        if (st == MT_OK)
            snprintf(detail, n, "%u dimensions", mt_embedder_dims(e));
    } else if (strcmp(kind, "reranker") == 0) {
        st = mt_reranker_open(spec, &rp, &r, err);
    } else {
        st = mt_nli_open(spec, &rp, &nli, err);
        if (st == MT_OK && mt_nli_describe(nli))
            snprintf(detail, n, "%s", mt_nli_describe(nli));
    }
    mt_embedder_close(e);
    mt_reranker_close(r);
    mt_nli_close(nli);
    return st;
}

static void check_one(struct check_ctx *c, const char *kind, const char *spec)
{
    struct mt_error err = {MT_OK, ""};
    char detail[MT_ERROR_MSG_MAX + 64] = "";
    enum mt_status st = MT_OK;

    if (!spec || !*spec) {
        report(c, kind, "-", MT_OK, "not configured");
        return;
    }
    if (!c->no_check && strncmp(kind, "llm", 3) == 0)
        st = check_llm(spec, c, detail, sizeof detail, &err);
    else if (!c->no_check)
        st = check_other(kind, spec, c->timeout, detail, sizeof detail, &err);
    if (st != MT_OK)
        snprintf(detail, sizeof detail, "%s",
                 err.msg[0] ? err.msg : mt_status_str(st));
    report(c, kind, spec, st, detail);
}

/* Every MEDTRUST_LLM_<ROLE>=SPEC in the environment (a ROLE of up to 37
 * characters). */
static void check_roles(struct check_ctx *c)
{
    char role[38], kind[64];
    const char *spec;
    char **e;

    for (e = environ; *e; e++) {
        if (!(spec = mtx_llm_env_role(*e, role, sizeof role)))
            continue;
        snprintf(kind, sizeof kind, "llm[%s]", role);
        check_one(c, kind, spec);
    }
}

static const char *opt_or_env(struct cli_args *a, const char *opt,
                              const char *env, const char *dflt)
{
    const char *v = cli_get(a, opt);

    if (!v)
        v = getenv(env);
    return v && *v ? v : dflt;
}

static int models_run(struct cli_args *a)
{
    struct check_ctx c = {MT_LLM_DEFAULT_TIMEOUT_S, 0, 0, 0, 0};
    const char *emb;
    unsigned long t = 0;
    unsigned long cx = 0;

    mtx_jsonl_init_alloc();
    if (cli_get_uint(a, "timeout", 1, 86400, &t) < 0 ||
        cli_get_uint(a, "ctx", 256, 10000000, &cx) < 0)
        return 1;
    c.n_ctx = (uint32_t)cx;
    if (t)
        c.timeout = (double)t;
    else if (getenv("MEDTRUST_LLM_TIMEOUT"))
        c.timeout = atof(getenv("MEDTRUST_LLM_TIMEOUT"));
    c.json = cli_get(a, "json") != NULL;
    c.no_check = cli_get(a, "no-check") != NULL;
    check_one(&c, "llm", opt_or_env(a, "llm", "MEDTRUST_LLM", NULL));
    check_roles(&c);
    emb = opt_or_env(a, "embedder", "MEDTRUST_EMBEDDER", "use-lite");
    /* "none" means an index without vectors: no embedder to check */
    check_one(&c, "embedder", strcmp(emb, "none") == 0 ? NULL : emb);
    if (cli_get(a, "query-embedder"))
        check_one(&c, "query-embedder", cli_get(a, "query-embedder"));
    check_one(&c, "reranker",
              opt_or_env(a, "reranker", "MEDTRUST_RERANKER", NULL));
    check_one(&c, "nli", opt_or_env(a, "nli", "MEDTRUST_NLI", NULL));
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
