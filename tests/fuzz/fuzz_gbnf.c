/* libFuzzer harness for JSON Schema -> GBNF (src/model/gbnf.c): any text
 * is converted or refused with MT_EPARSE, MT_EUNSUPPORTED or MT_ELIMIT
 * and a message, never a crash, a leak, a stack overflow or an unbounded
 * grammar. A grammar made has a root rule and every line is a rule
 * ("NAME ::= ..."), every rule it names defined, as llama.cpp's grammar
 * parser requires. Built by `make fuzz` (mk/fuzz.mk);
 * tests/integration/test_fuzz.sh seeds it with the agents' schemas:
 *   FUZZ_GBNF_SEED=CORPUS_DIR build/fuzz/fuzzers/fuzz_gbnf -runs=0 CORPUS_DIR
 * writes each agent reply's schema there (LLVMFuzzerInitialize). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmcall/reply.h"
#include "medtrust/core.h"
#include "model/gbnf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* 1 when rule NAME (n bytes) is defined: a line starts "NAME ::= ". */
static int defined(const char *g, const char *name, size_t n)
{
    const char *p = g;

    for (; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && strncmp(p + n, " ::= ", 5) == 0)
            return 1;
    return 0;
}

/* Every line is a rule and every rule named outside strings, character
 * classes and comments is defined. */
static void check_grammar(const char *g)
{
    const char *p = g;

    if (!defined(g, "root", 4))
        __builtin_trap();
    while (*p) {
        const char *eol = strchr(p, '\n');
        const char *q = strstr(p, " ::= ");
        if (!eol)
            eol = p + strlen(p);
        if (!q || q > eol)
            __builtin_trap();
        for (q += 5; q < eol; q++) {
            if (*q == '"' || *q == '[') { /* skip a literal or class */
                char close = *q == '"' ? '"' : ']';
                for (q++; q < eol && *q != close; q++)
                    q += *q == '\\';
            } else if (isalpha((unsigned char)*q)) {
                const char *s = q;
                while (q < eol && (isalnum((unsigned char)*q) || *q == '-'))
                    q++;
                if (!defined(g, s, (size_t)(q - s)))
                    __builtin_trap();
                q--;
            }
        }
        p = *eol ? eol + 1 : eol;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *schema = mt_malloc(size + 1);
    struct mt_error err = {MT_OK, ""};
    char *g = NULL;
    enum mt_status st;

    if (!schema)
        return 0;
    memcpy(schema, data, size);
    schema[size] = '\0';
    st = mtx_gbnf_from_schema(schema, &g, &err);
    if (st == MT_OK) {
        check_grammar(g);
        mt_free(g);
    } else if (g || !err.msg[0] ||
               (st != MT_EPARSE && st != MT_EUNSUPPORTED && st != MT_ELIMIT)) {
        __builtin_trap();
    }
    mt_free(schema);
    return 0;
}

/* With FUZZ_GBNF_SEED naming a folder, writes the agents' schemas there. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const prompts[] = {
        "react",        "eval",         "reflect",       "parser",  "single",
        "guard_detect", "guard_locate", "guard_correct", "qa_judge"};
    const char *dir = getenv("FUZZ_GBNF_SEED");
    size_t i;

    (void)argc;
    (void)argv;
    for (i = 0; dir && i < sizeof prompts / sizeof *prompts; i++) {
        const char *s = mtx_reply_schema(prompts[i]);
        char path[512];
        FILE *f;
        snprintf(path, sizeof path, "%s/%s.json", dir, prompts[i]);
        f = s ? fopen(path, "w") : NULL;
        if (f) {
            fputs(s, f);
            fclose(f);
        }
    }
    return 0;
}
