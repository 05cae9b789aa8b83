/* libFuzzer harness for reading model replies (src/llmcall/reply.c) and
 * the repair loop (src/llmcall/llmcall.c): the input is up to two model
 * replies cut at the first NUL byte. The first is read as every caller
 * reads one (the JSON object in the whole text, a code fence or the
 * first balanced {...}; every member through each typed getter); when it
 * is unusable the loop repeats the call with the reply echoed as the
 * assistant's turn (cut at a character boundary) and the "fix" message
 * naming why, and the second reply is read the same way. Then each agent schema
 * is bound to the reply's lines as sentences (mtx_reply_schema_for) and must
 * stay JSON. Never a crash, a leak or a read past the text. Built by `make
 * fuzz` (mk/fuzz.mk); tests/integration/test_fuzz.sh seeds it with replies of
 * the agents' shapes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "llmcall/llmcall.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const prompts[] = {
    "react",        "eval",         "reflect",       "parser",   "single",
    "guard_detect", "guard_locate", "guard_correct", "qa_judge", "none"};

struct replies {
    const char *text[2];
};

/* Every typed getter on every member, as the agents' checks read them. */
static void read_members(json_t *o)
{
    const char *key;
    json_t *v;
    volatile long l = 0;
    volatile double d = 0;
    long lv;
    double dv;
    int b;

    json_object_foreach(o, key, v)
    {
        if (mtx_reply_int(o, key, -1, 1000, &lv) == 0)
            l += lv;
        if (mtx_reply_bool(o, key, &b) == 0)
            l += b;
        if (mtx_reply_conf(o, key, &dv) == 0) {
            if (!(dv >= 0 && dv <= 1))
                __builtin_trap();
            d += dv;
        }
        if (mtx_reply_str(o, key) && !json_is_string(v))
            __builtin_trap();
    }
    (void)l;
    (void)d;
}

/* The second request: the first reply echoed as the assistant's turn (a
 * prefix of at most MTX_REPAIR_ECHO_MAX bytes), then the fix message. */
static void check_repair(const struct replies *r,
                         const struct mt_llm_message *m, size_t nm)
{
    const char *echo;
    size_t n;

    if (nm != 3 || strcmp(m[1].role, "assistant") != 0 ||
        strcmp(m[2].role, "user") != 0 ||
        !strstr(m[2].content, "could not be used"))
        __builtin_trap();
    echo = m[1].content;
    n = strlen(echo);
    if (n > MTX_REPAIR_ECHO_MAX || strncmp(echo, r->text[0], n) != 0)
        __builtin_trap();
}

static const char *bad_reply(void *user)
{
    const struct replies *r = user;

    return r->text[0];
}

static enum mtx_outcome attempt(void *user, const struct mt_llm_message *m,
                                size_t nm, int k, char *why, size_t wn)
{
    struct replies *r = user;
    json_t *o;

    if (k == 1)
        check_repair(r, m, nm);
    o = mtx_reply_extract(r->text[k], why, wn);
    if (!o) {
        if (!why[0] || strlen(why) >= wn)
            __builtin_trap(); /* a bad reply always says why */
        return MTX_OUTCOME_BAD_REPLY;
    }
    read_members(o);
    json_decref(o);
    return MTX_OUTCOME_OK;
}

/* Binds each schema to the reply's lines as the note's sentences. */
static void bind_schemas(const char *text)
{
    struct mt_str sents[16];
    size_t n = 0;
    size_t i;
    const char *p = text;

    while (*p && n < 16) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        sents[n++] = (struct mt_str){p, len};
        p += len + (e != NULL);
    }
    for (i = 0; i < sizeof prompts / sizeof *prompts; i++) {
        char *s = mtx_reply_schema_for(prompts[i], sents, n);
        json_t *j;
        if (!s) {
            if (mtx_reply_schema(prompts[i]))
                __builtin_trap(); /* a known prompt has a schema */
            continue;
        }
        j = json_loads(s, 0, NULL);
        if (!json_is_object(j))
            __builtin_trap(); /* the bound schema is still JSON */
        json_decref(j);
        mt_free(s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct mt_llm_message msgs[] = {{"system", "[agent:fuzz]"}};
    char *copy = mt_malloc(size + 2);
    struct replies r = {{NULL, NULL}};
    struct mtx_llmcall c = {.msgs = msgs,
                            .nmsgs = 1,
                            .attempt = attempt,
                            .user = &r,
                            .bad_reply = bad_reply};
    enum mtx_outcome last;
    char why[300];
    size_t first;

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = copy[size + 1] = '\0';
    first = strlen(copy);
    r.text[0] = copy;
    r.text[1] = copy + first + (first < size);
    if (mtx_llmcall_run(&c, &last, why, sizeof why) != MT_OK)
        __builtin_trap();
    if (last == MTX_OUTCOME_FAILED)
        __builtin_trap();
    bind_schemas(copy);
    mt_free(copy);
    return 0;
}
