/* Parsing of the agent options shared by `check` and `mediqa`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/agent_opts.h"

/* The numeric settings, from mt_agent_param_table (CLI_PARAM rows). */
static int read_numbers(const struct cli_args *a, struct mt_agent_params *p)
{
    if (cli_params_read(a, &mt_agent_param_table, p) < 0 ||
        cli_llm_params_read(a, &p->llm) < 0)
        return -1;
    p->grammar = cli_get(a, "no-grammar") == NULL;
    if (p->rerank_k > p->retrieve_k) {
        fprintf(stderr, "medtrust: --rerank-k must not exceed "
                        "--retrieve-k\n");
        return -1;
    }
    return 0;
}

/* --few-shot, --examples: one of them; only single reads them. */
static int read_examples(const struct cli_args *a, struct mt_agent_params *p)
{
    p->few_shot_path = cli_get(a, "few-shot");
    p->examples_path = cli_get(a, "examples");
    if (p->few_shot_path && p->examples_path) {
        fprintf(stderr, "medtrust: --few-shot (fixed examples) and "
                        "--examples (the nearest ones) exclude each other\n");
        return -1;
    }
    return 0;
}

/* The role a ROLE=VALUE setting names (its length in *n), or -1. */
static int role_of(const char *s, size_t *n)
{
    static const char *const names[MT_AGENT_ROLE_COUNT] = {
        "react", "eval", "reflect", "parser", "guard", "single"};
    int i;

    *n = strcspn(s, "=");
    for (i = 0; i < MT_AGENT_ROLE_COUNT; i++)
        if (strlen(names[i]) == *n && strncmp(s, names[i], *n) == 0)
            return i;
    return -1;
}

/* --role-temperature ROLE=X and --role-max-tokens ROLE=N, repeatable. */
static int read_roles(const struct cli_args *a, struct mt_agent_params *p)
{
    static const char *const opt[2] = {"role-temperature", "role-max-tokens"};
    size_t i, k, n, cnt;

    for (k = 0; k < 2; k++) {
        const char **v = cli_get_all(a, opt[k], &cnt);

        for (i = 0; i < cnt; i++) {
            int r = role_of(v[i], &n);
            char *end = NULL;
            double x = r >= 0 && v[i][n] ? strtod(v[i] + n + 1, &end) : -1;

            if (r < 0 || !end || *end || end == v[i] + n + 1 || x < 0 ||
                (k == 0 && x > 2) ||
                (k == 1 && (x < 1 || x > 1e6 || x != (double)(long)x))) {
                fprintf(stderr,
                        "medtrust: --%s takes ROLE=%s with ROLE one of "
                        "react, eval, reflect, parser, guard, single, not "
                        "'%s'\n",
                        opt[k], k ? "N (1..1000000)" : "X (0..2)", v[i]);
                return -1;
            }
            if (k == 0)
                p->role_temperature[r] = (float)x;
            else
                p->role_max_tokens[r] = (uint32_t)x;
        }
    }
    return 0;
}

/* --on-exhausted no-error|last-answer. */
static int read_exhausted(const struct cli_args *a, struct mt_agent_params *p)
{
    const char *v = cli_get(a, "on-exhausted");

    if (!v || strcmp(v, "no-error") == 0)
        return 0;
    if (strcmp(v, "last-answer") == 0) {
        p->on_exhausted = MT_EXHAUSTED_LAST_ANSWER;
        return 0;
    }
    fprintf(stderr,
            "medtrust: --on-exhausted must be no-error or last-answer, not "
            "'%s'\n",
            v);
    return -1;
}

int agent_opts_read(const struct cli_args *a, struct mt_agent_params *p)
{
    const char *s = cli_get(a, "strategy");

    mt_agent_default_params(p);
    if (s && mt_strategy_parse(s, &p->strategy) != MT_OK) {
        char names[128];

        fprintf(stderr, "medtrust: --strategy must be %s, not '%s'\n",
                mt_strategy_list(names, sizeof names), s);
        return -1;
    }
    p->db_dir = cli_get(a, "db");
    p->llm_spec = cli_get(a, "llm");
    p->prompts_dir = cli_get(a, "prompts");
    p->reranker_spec = cli_get(a, "reranker");
    p->embedder_spec = cli_get(a, "embedder");
    if (cli_get_search_mode(a, "search-mode", &p->search_mode) < 0 ||
        read_examples(a, p) < 0)
        return -1;
    if (read_exhausted(a, p) < 0 || read_roles(a, p) < 0)
        return -1;
    p->no_retrieval = cli_get(a, "no-retrieval") != NULL;
    p->sources = cli_get_all(a, "source", &p->n_sources);
    if (p->n_sources > MT_AGENT_MAX_SOURCES) {
        fprintf(stderr, "medtrust: at most %d --source options\n",
                MT_AGENT_MAX_SOURCES);
        return -1;
    }
    if (p->no_retrieval && p->db_dir) {
        fprintf(stderr, "medtrust: --no-retrieval and --db exclude each "
                        "other\n");
        return -1;
    }
    return read_numbers(a, p);
}
