/* llama.cpp chat backend (gguf:PATH[?lora=ADAPTER[:SCALE]&...]): the
 * model's own chat template, a seeded sampler chain, GBNF from a JSON
 * schema, n samples that share the prompt's KV cache (the prompt is decoded
 * once; each sample rewinds to it), and LoRA adapters loaded once per
 * handle and applied to its context. One context per handle, serialised
 * by a mutex. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "model/llm.h"

#ifdef MT_HAVE_LLAMA
#include "core/buf.h"
#include "model/gbnf.h"
#include "model/llama_rt.h"

#define LCHAT_MIN_CTX 256u
#define LCHAT_MAX_BATCH 2048u
#define SETTING "--llm/MEDTRUST_LLM"

#define LCHAT_MAX_LORA 8

struct lchat {
    struct mtx_llama_session ls;
    uint32_t n_ctx;
    /* LoRA adapters, loaded once for this handle and applied to its
     * context (llama_set_adapters_lora) with their scales */
    struct llama_adapter_lora *lora[LCHAT_MAX_LORA];
    float scale[LCHAT_MAX_LORA];
    size_t n_lora;
    char *name; /* "base.gguf+adapter.gguf[:SCALE]...", or NULL without
                   adapters: the model's name and so the cache's key */
};

static void lchat_free(void *self)
{
    struct lchat *c = self;
    size_t i;

    if (!c)
        return;
    /* the context refers to the adapters, and they to the model */
    if (c->ls.ctx)
        llama_free(c->ls.ctx);
    c->ls.ctx = NULL;
    for (i = 0; i < c->n_lora; i++)
        llama_adapter_lora_free(c->lora[i]);
    mtx_llama_session_close(&c->ls);
    mt_free(c->name);
    mt_free(c);
}

static const char *lchat_model(const void *self)
{
    const struct lchat *c = self;

    return c->name ? c->name : c->ls.name;
}

/* ==== Prompt ==== */

static enum mt_status apply_template(struct lchat *c,
                                     const struct mt_llm_message *m, size_t n,
                                     char **out, struct mt_error *err)
{
    const char *tmpl = llama_model_chat_template(c->ls.model, NULL);
    struct llama_chat_message *cm = mt_malloc(n * sizeof *cm);
    size_t cap = 1024;
    char *buf = NULL;
    int32_t r = 0;
    size_t i;

    for (i = 0; cm && i < n; i++) {
        cm[i].role = m[i].role;
        cm[i].content = m[i].content;
        cap += 2 * strlen(m[i].content) + 64;
    }
    while (cm && (buf = mt_realloc(buf, cap)) != NULL) {
        r = llama_chat_apply_template(tmpl, cm, n, true, buf, (int32_t)cap);
        if (r < 0 || (size_t)r < cap)
            break;
        cap = (size_t)r + 1;
    }
    mt_free(cm);
    if (!cm || !buf || r < 0) {
        mt_free(buf);
        return !cm || !buf ? mt_fail(err, MT_ENOMEM, "chat: out of memory")
                           : mt_fail(err, MT_EUNSUPPORTED,
                                     "gguf %s: its "
                                     "chat template is not one llama.cpp "
                                     "knows",
                                     c->ls.name);
    }
    buf[r] = '\0';
    *out = buf;
    return MT_OK;
}

/* ==== Sampling ==== */

/* A seeded sampler chain and, apart from it, the grammar. As llama.cpp's
 * common sampler does, the chain samples first and the grammar only checks
 * that token; the whole vocabulary goes through the grammar only when it
 * is rejected (matching 150k tokens against a grammar every step is
 * slow). */
struct samp {
    struct llama_sampler *chain;
    struct llama_sampler *grammar; /* NULL when unconstrained */
    llama_token_data *cand;        /* n_vocab, allocated on first need */
};

static void samp_free(struct samp *s)
{
    if (s->chain)
        llama_sampler_free(s->chain);
    if (s->grammar)
        llama_sampler_free(s->grammar);
    mt_free(s->cand);
    memset(s, 0, sizeof *s);
}

static int samp_init(struct lchat *c, const struct mt_chat_params *p,
                     const char *grammar, uint64_t seed, struct samp *s)
{
    struct llama_sampler_chain_params cp = llama_sampler_chain_default_params();

    memset(s, 0, sizeof *s);
    cp.no_perf = true;
    s->chain = llama_sampler_chain_init(cp);
    if (grammar)
        s->grammar = llama_sampler_init_grammar(c->ls.vocab, grammar, "root");
    if (!s->chain || (grammar && !s->grammar)) {
        samp_free(s);
        return -1;
    }
    if (p->temperature <= 0) {
        llama_sampler_chain_add(s->chain, llama_sampler_init_greedy());
        return 0;
    }
    if (p->top_p < 1)
        llama_sampler_chain_add(s->chain,
                                llama_sampler_init_top_p(p->top_p, 1));
    llama_sampler_chain_add(s->chain, llama_sampler_init_temp(p->temperature));
    llama_sampler_chain_add(s->chain, llama_sampler_init_dist((uint32_t)seed));
    return 0;
}

/* Samples the next token; -1 when out of memory. */
static llama_token samp_next(struct lchat *c, struct samp *s)
{
    llama_token t = llama_sampler_sample(s->chain, c->ls.ctx, -1);
    llama_token_data one = {t, 1.0f, 0.0f};
    llama_token_data_array arr = {&one, 1, -1, false};
    int32_t nv = llama_vocab_n_tokens(c->ls.vocab);
    const float *logits;
    int32_t i;

    if (!s->grammar)
        return t;
    llama_sampler_apply(s->grammar, &arr);
    if (one.logit > -INFINITY) {
        llama_sampler_accept(s->grammar, t);
        return t;
    }
    if (!s->cand && !(s->cand = mt_malloc((size_t)nv * sizeof *s->cand)))
        return -1;
    logits = llama_get_logits_ith(c->ls.ctx, -1);
    for (i = 0; i < nv; i++)
        s->cand[i] = (llama_token_data){i, logits[i], 0.0f};
    arr = (llama_token_data_array){s->cand, (size_t)nv, -1, false};
    llama_sampler_apply(s->grammar, &arr);
    llama_sampler_apply(s->chain, &arr);
    t = arr.data[arr.selected].id;
    llama_sampler_accept(s->grammar, t);
    return t;
}

/* Cuts the text at the first stop string; returns 1 when one was found.
 * Only the tail that the last piece (of 'added' bytes) can have completed
 * is searched, so the scan costs O(piece + stop) per token. */
static int cut_stop(struct mt_buf *b, size_t added,
                    const struct mt_chat_params *p)
{
    size_t i;

    for (i = 0; b->data && i < p->n_stop; i++) {
        size_t sl = strlen(p->stop[i]);
        size_t from = b->len > added + sl ? b->len - added - sl : 0;
        char *at = sl ? strstr(b->data + from, p->stop[i]) : NULL;
        if (at) {
            b->len = (size_t)(at - b->data);
            b->data[b->len] = '\0';
            return 1;
        }
    }
    return 0;
}

static enum mt_status append_piece(struct lchat *c, llama_token t,
                                   struct mt_buf *b)
{
    char piece[256];
    int32_t n =
        llama_token_to_piece(c->ls.vocab, t, piece, sizeof piece, 0, false);

    if (n < 0)
        return MT_ELIMIT;
    return mtx_buf_append(b, piece, (size_t)n);
}

/* ==== Streaming ==== */

/* End of the longest prefix of s[0..end) that holds only whole UTF-8
 * characters (a token's piece may end inside one). */
static size_t whole_chars(const char *s, size_t from, size_t end)
{
    size_t k = end;
    unsigned char c;
    size_t need;

    while (k > from && end - k < 3 && ((unsigned char)s[k - 1] & 0xc0) == 0x80)
        k--;
    if (k == from)
        return end;
    c = (unsigned char)s[k - 1];
    need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return k - 1 + need > end ? k - 1 : end;
}

/* Passes on (p->on_token) the text of completion i from *sent up to what
 * can no longer change: a stop string may still cut the last (longest
 * stop - 1) bytes. 'final': all of it. Returns nonzero when the caller
 * asked to stop. */
static int emit(const struct mt_chat_params *p, uint32_t i,
                const struct mt_buf *b, size_t *sent, int final)
{
    size_t end = b->len;
    size_t hold = 0;
    size_t k;

    if (!p->on_token)
        return 0;
    for (k = 0; !final && k < p->n_stop; k++)
        if (strlen(p->stop[k]) > hold + 1)
            hold = strlen(p->stop[k]) - 1;
    end = end > *sent + hold ? end - hold : *sent;
    end = final ? end : whole_chars(b->data, *sent, end);
    if (end <= *sent)
        return 0;
    k = *sent;
    *sent = end;
    return p->on_token(p->on_token_ctx, i, b->data + k, end - k);
}

/* One completion: rewind the KV cache to the prompt minus its last token,
 * decode that token again for fresh logits, then sample up to budget. */
static enum mt_status sample_one(struct lchat *c, const llama_token *prompt,
                                 int32_t np, const struct mt_chat_params *p,
                                 struct samp *sp, uint32_t budget, uint32_t i,
                                 struct mt_buf *out, uint64_t *ntok)
{
    llama_memory_t mem = llama_get_memory(c->ls.ctx);
    llama_token tok = prompt[np - 1];
    size_t before;
    size_t sent = 0;
    uint32_t k;

    llama_memory_seq_rm(mem, 0, np - 1, -1);
    for (k = 0; k < budget; k++) {
        if (llama_decode(c->ls.ctx, llama_batch_get_one(&tok, 1)) != 0)
            return MT_EINTERNAL;
        tok = samp_next(c, sp);
        if (tok < 0)
            return MT_ENOMEM;
        if (llama_vocab_is_eog(c->ls.vocab, tok))
            break;
        (*ntok)++;
        before = out->len;
        if (append_piece(c, tok, out) != MT_OK)
            return MT_ENOMEM;
        if (cut_stop(out, out->len - before, p))
            break;
        if (emit(p, i, out, &sent, 0) != 0)
            return MT_ECANCELED;
    }
    return emit(p, i, out, &sent, 1) != 0 ? MT_ECANCELED : MT_OK;
}

static enum mt_status prepare(struct lchat *c, const struct mt_llm_message *m,
                              size_t nm, llama_token **toks, int32_t *np,
                              struct mt_error *err)
{
    char *text = NULL;
    enum mt_status st = apply_template(c, m, nm, &text, err);

    if (st == MT_OK)
        st = mtx_llama_tokenize(c->ls.vocab, text, strlen(text), 1, toks, np,
                                err);
    mt_free(text);
    if (st != MT_OK)
        return st;
    if (*np < 1 || (uint32_t)*np >= c->n_ctx) {
        mt_free(*toks);
        *toks = NULL;
        return mt_fail(err, MT_ELIMIT,
                       "gguf %s: the prompt is %d tokens "
                       "but the context holds %u: shorten the input, or "
                       "raise the context (--ctx)",
                       c->ls.name, *np, c->n_ctx);
    }
    return MT_OK;
}

static enum mt_status run_samples(struct lchat *c, const llama_token *toks,
                                  int32_t np, const struct mt_chat_params *p,
                                  const char *grammar, struct mt_chat_result *r,
                                  struct mt_error *err)
{
    uint32_t budget = c->n_ctx - (uint32_t)np;
    enum mt_status st = MT_OK;
    uint32_t i;

    if (p->max_tokens < budget)
        budget = p->max_tokens;
    for (i = 0; st == MT_OK && i < p->n; i++) {
        struct mt_buf out = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
        struct samp sp;
        if (samp_init(c, p, grammar, p->seed + i, &sp) != 0)
            return mt_fail(err, MT_EINVAL,
                           "chat: the grammar does not "
                           "parse (check the JSON schema or GBNF)");
        st = sample_one(c, toks, np, p, &sp, budget, i, &out,
                        &r->completion_tokens);
        samp_free(&sp);
        if (st == MT_OK && mtx_buf_reserve(&out, 1) != MT_OK)
            st = MT_ENOMEM;
        r->texts[i] = st == MT_OK ? mtx_buf_take(&out) : NULL;
        mtx_buf_free(&out);
    }
    if (st == MT_ECANCELED)
        return mt_fail(err, st, "chat: stopped by the caller");
    if (st != MT_OK)
        return mt_fail(err, st, "gguf %s: generation failed (%s)", c->ls.name,
                       mt_status_str(st));
    return MT_OK;
}

/* Decodes toks[0..n) in batches of at most n_batch tokens (a context
 * longer than LCHAT_MAX_BATCH takes its prompt in several). */
static int decode_prompt(struct lchat *c, llama_token *toks, int32_t n)
{
    int32_t b = (int32_t)llama_n_batch(c->ls.ctx);
    int32_t at;

    for (at = 0; at < n; at += b) {
        int32_t k = n - at < b ? n - at : b;
        if (llama_decode(c->ls.ctx, llama_batch_get_one(toks + at, k)) != 0)
            return -1;
    }
    return 0;
}

static enum mt_status
lchat_locked(struct lchat *c, const struct mt_llm_message *m, size_t nm,
             const struct mt_chat_params *p, const char *grammar,
             struct mt_chat_result *r, struct mt_error *err)
{
    llama_token *toks = NULL;
    int32_t np = 0;
    enum mt_status st = prepare(c, m, nm, &toks, &np, err);

    if (st != MT_OK)
        return st;
    llama_memory_clear(llama_get_memory(c->ls.ctx), true);
    if (decode_prompt(c, toks, np - 1) != 0)
        st = mt_fail(err, MT_EINTERNAL,
                     "gguf %s: decoding the prompt "
                     "failed",
                     c->ls.name);
    r->prompt_tokens = (uint64_t)np;
    if (st == MT_OK)
        st = run_samples(c, toks, np, p, grammar, r, err);
    mt_free(toks);
    return st;
}

static enum mt_status lchat_chat(void *self, const struct mt_llm_message *m,
                                 size_t nm, const struct mt_chat_params *p,
                                 struct mt_chat_result *r, struct mt_error *err)
{
    struct lchat *c = self;
    char *grammar = NULL;
    enum mt_status st = mtx_chat_result_init(r, p->n);

    if (st != MT_OK)
        return mt_fail(err, st, "chat: out of memory");
    if (!p->grammar && p->json_schema)
        st = mtx_gbnf_from_schema(p->json_schema, &grammar, err);
    if (st != MT_OK)
        return st;
    pthread_mutex_lock(&c->ls.mu);
    st = lchat_locked(c, m, nm, p, p->grammar ? p->grammar : grammar, r, err);
    pthread_mutex_unlock(&c->ls.mu);
    mt_free(grammar);
    return st;
}

static uint32_t lchat_n_ctx(void *self)
{
    return ((const struct lchat *)self)->n_ctx;
}

/* The vocabulary's own count (llama_tokenize reads the vocabulary only,
 * so no lock); the estimate when tokenising fails. */
static uint32_t lchat_count(void *self, const char *s, size_t n,
                            enum mt_token_count *how)
{
    struct lchat *c = self;
    llama_token *t = NULL;
    int32_t nt = 0;

    if (mtx_llama_tokenize(c->ls.vocab, s, n, 0, &t, &nt, NULL) != MT_OK) {
        *how = MT_TOKENS_ESTIMATE;
        return mtx_llm_estimate_tokens(s, n);
    }
    mt_free(t);
    *how = MT_TOKENS_VOCAB;
    return nt > 0 ? (uint32_t)nt : 0;
}

static const struct mtx_model_ops lchat_ops = {
    .name = "gguf",
    .free = lchat_free,
    .model = lchat_model,
    .chat = lchat_chat,
    .n_ctx = lchat_n_ctx,
    .count = lchat_count,
};

/* The most tokens whose KV cache (f16 keys and values, every layer) fits
 * a quarter of the machine's memory; UINT32_MAX when unknown. */
static uint32_t memory_cap(const struct llama_model *m)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long psize = sysconf(_SC_PAGESIZE);
    int32_t head = llama_model_n_head(m);
    double kv_embd;
    double per_tok;
    double cap;

    if (pages <= 0 || psize <= 0 || head <= 0)
        return UINT32_MAX;
    kv_embd = (double)llama_model_n_embd(m) / head * llama_model_n_head_kv(m);
    per_tok = 2.0 * 2.0 * llama_model_n_layer(m) * kv_embd;
    if (per_tok <= 0)
        return UINT32_MAX;
    cap = (double)pages * (double)psize / 4.0 / per_tok;
    return cap >= UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
}

/* The context to open: the trained one, capped by --ctx and by memory,
 * at least LCHAT_MIN_CTX. */
static uint32_t pick_ctx(const struct lchat *c, const struct mt_llm_params *p)
{
    uint32_t train = (uint32_t)llama_model_n_ctx_train(c->ls.model);
    uint32_t mem = memory_cap(c->ls.model);
    uint32_t n = train ? train : 4096u;

    if (p->n_ctx && p->n_ctx < n)
        n = p->n_ctx;
    if (mem < n) {
        mt_log(MT_LOG_WARN,
               "gguf %s: a %u-token context would not fit a quarter of the "
               "memory; opening %u tokens (--ctx)",
               c->ls.name, n, mem);
        n = mem;
    }
    return n < LCHAT_MIN_CTX ? LCHAT_MIN_CTX : n;
}

/* ==== LoRA adapters ==== */

/* "gguf:BASE?lora=A[:SCALE]&lora=B[:SCALE]": the base path and the
 * adapters (--lora ADAPTER[:SCALE] adds them to the --llm spec). */
struct lora_spec {
    char *base;
    char *path[LCHAT_MAX_LORA];
    float scale[LCHAT_MAX_LORA];
    size_t n;
};

static void lora_spec_free(struct lora_spec *l)
{
    size_t i;

    mt_free(l->base);
    for (i = 0; i < l->n; i++)
        mt_free(l->path[i]);
    memset(l, 0, sizeof *l);
}

/* One "lora=PATH[:SCALE]" of n bytes: a SCALE is what follows the last
 * ':' when all of it reads as a finite number (default 1). */
static enum mt_status lora_item(const char *v, size_t n, struct lora_spec *l,
                                struct mt_error *err)
{
    const char *colon = NULL;
    char num[32];
    char *end = NULL;
    float sc = 1;
    size_t k;

    for (k = n; k > 0 && !colon; k--)
        if (v[k - 1] == ':')
            colon = v + k - 1;
    k = colon ? n - (size_t)(colon + 1 - v) : 0;
    if (colon && k > 0 && k < sizeof num) {
        memcpy(num, colon + 1, k);
        num[k] = '\0';
        sc = strtof(num, &end);
        if (*end != '\0' || !isfinite(sc))
            colon = NULL, sc = 1;
    } else {
        colon = NULL;
    }
    if (l->n == LCHAT_MAX_LORA)
        return mt_fail(err, MT_ELIMIT,
                       "gguf:%s: more than %d LoRA adapters (--lora)", l->base,
                       LCHAT_MAX_LORA);
    l->path[l->n] = mt_strndup(v, colon ? (size_t)(colon - v) : n);
    if (!l->path[l->n])
        return mt_fail(err, MT_ENOMEM, "out of memory");
    l->scale[l->n++] = sc;
    return MT_OK;
}

static enum mt_status lora_spec_parse(const char *arg, struct lora_spec *l,
                                      struct mt_error *err)
{
    const char *q = strchr(arg, '?');
    const char *p = q ? q + 1 : NULL;
    enum mt_status st = MT_OK;

    memset(l, 0, sizeof *l);
    l->base = q ? mt_strndup(arg, (size_t)(q - arg)) : mt_strdup(arg);
    if (!l->base)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    while (st == MT_OK && p && *p) {
        size_t n = strcspn(p, "&");
        if (n > 5 && strncmp(p, "lora=", 5) == 0)
            st = lora_item(p + 5, n - 5, l, err);
        else
            st = mt_fail(err, MT_EINVAL,
                         "gguf:%s: unknown option '%.*s': the one option "
                         "of a gguf: LLM is lora=ADAPTER.gguf[:SCALE] "
                         "(repeatable, joined by '&')",
                         arg, (int)n, p);
        p += n + (p[n] == '&');
    }
    return st;
}

/* Loads adapter i of l into c's model. */
static enum mt_status lora_load(struct lchat *c, const struct lora_spec *l,
                                size_t i, struct mt_error *err)
{
    FILE *f = fopen(l->path[i], "rb");
    struct llama_adapter_lora *a;

    if (!f)
        return mt_fail(err, MT_ENOTFOUND,
                       "gguf:%s: cannot open the LoRA adapter %s: fix the "
                       "path in --lora or ?lora=",
                       l->base, l->path[i]);
    fclose(f);
    a = llama_adapter_lora_init(c->ls.model, l->path[i]);
    if (!a)
        return mt_fail(err, MT_EPARSE,
                       "gguf:%s: the LoRA adapter %s does not load: it "
                       "must be a LoRA GGUF (general.type adapter, "
                       "adapter.type lora) made for this base model, its "
                       "architecture and shapes (llama.cpp's "
                       "convert_lora_to_gguf.py --base writes one); "
                       "llama.cpp's reason is in the log (warning)",
                       l->base, l->path[i]);
    c->lora[c->n_lora] = a;
    c->scale[c->n_lora++] = l->scale[i];
    if (llama_adapter_get_alora_n_invocation_tokens(a) > 0)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "gguf:%s: %s is an activated LoRA (aLoRA), which "
                       "medtrust does not apply: use a plain LoRA adapter",
                       l->base, l->path[i]);
    return MT_OK;
}

/* Loads every adapter and names the model "base+adapter[:scale]...". */
static enum mt_status lora_open(struct lchat *c, const struct lora_spec *l,
                                struct mt_error *err)
{
    struct mt_buf name = MT_BUF_INIT(64 * 1024);
    enum mt_status st = MT_OK;
    size_t i;

    if (l->n == 0)
        return MT_OK;
    st = mtx_buf_printf(&name, "%s", c->ls.name);
    for (i = 0; st == MT_OK && i < l->n; i++) {
        const char *slash = strrchr(l->path[i], '/');
        st = mtx_buf_printf(&name, "+%s", slash ? slash + 1 : l->path[i]);
        if (st == MT_OK && l->scale[i] != 1.0f)
            st = mtx_buf_printf(&name, ":%g", (double)l->scale[i]);
    }
    if (st != MT_OK) {
        mtx_buf_free(&name);
        return mt_fail(err, st, "out of memory");
    }
    c->name = mtx_buf_take(&name);
    mtx_buf_free(&name);
    for (i = 0; st == MT_OK && i < l->n; i++)
        st = lora_load(c, l, i, err);
    return st;
}

/* Applies the adapters to the context (after it is made). */
static enum mt_status lora_apply(struct lchat *c, struct mt_error *err)
{
    if (c->n_lora == 0)
        return MT_OK;
    if (llama_set_adapters_lora(c->ls.ctx, c->lora, c->n_lora, c->scale) != 0)
        return mt_fail(err, MT_EINTERNAL,
                       "gguf:%s: llama.cpp could not apply the LoRA "
                       "adapters to the context",
                       c->ls.name);
    return MT_OK;
}

enum mt_status mtx_llm_llama_open(const char *spec,
                                  const struct mt_llm_params *p,
                                  struct mt_llm **out, struct mt_error *err)
{
    struct llama_context_params cp = llama_context_default_params();
    struct lchat *c = mt_calloc(1, sizeof *c);
    struct lora_spec l;
    const char *path;
    enum mt_status st;

    if (!c)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = lora_spec_parse(spec, &l, err);
    path = l.base;
    if (st == MT_OK)
        st = mtx_llama_session_open(&c->ls, path, MT_LLAMA_CHAT, SETTING, err);
    if (st == MT_OK)
        st = lora_open(c, &l, err);
    if (st != MT_OK)
        goto fail;
    c->n_ctx = pick_ctx(c, p);
    cp.n_ctx = c->n_ctx;
    cp.n_batch = c->n_ctx < LCHAT_MAX_BATCH ? c->n_ctx : LCHAT_MAX_BATCH;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = mtx_llama_threads(p->threads);
    cp.no_perf = true;
    st = mtx_llama_session_context(&c->ls, path, cp, err);
    if (st == MT_OK)
        st = lora_apply(c, err);
    if (st != MT_OK)
        goto fail;
    c->n_ctx = llama_n_ctx(c->ls.ctx); /* llama.cpp may round it up */
    lora_spec_free(&l);
    return MTX_MODEL_TAKE(out, &lchat_ops, c, err);
fail:
    lora_spec_free(&l);
    lchat_free(c);
    return st;
}

#else /* !MT_HAVE_LLAMA */

enum mt_status mtx_llm_llama_open(const char *path,
                                  const struct mt_llm_params *p,
                                  struct mt_llm **out, struct mt_error *err)
{
    (void)p;
    (void)out;
    return mt_fail(err, MT_EUNSUPPORTED,
                   "gguf:%s: this medtrust was built "
                   "without llama.cpp (run scripts/bootstrap and rebuild)",
                   path);
}

#endif
