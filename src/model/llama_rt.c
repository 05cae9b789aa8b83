/* llama.cpp runtime shared by the gguf chat, embedding, rerank and
 * classifier backends. llama.cpp logs go to mt_log at debug level, so the
 * library never prints. */
#ifdef MT_HAVE_LLAMA
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pool.h"
#include "core/selfpath.h"
#include "medtrust/core.h"
#include "model/llama_rt.h"

#ifndef MT_LLAMA_LIB_DIR
#define MT_LLAMA_LIB_DIR "third_party/llama-linux-x64/bins/linux-x64"
#endif

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void on_log(enum ggml_log_level level, const char *text, void *user)
{
    size_t n = strlen(text);

    (void)user;
    if (n && text[n - 1] == '\n')
        n--;
    if (n == 0)
        return;
    mt_log(level == GGML_LOG_LEVEL_ERROR ? MT_LOG_WARN : MT_LOG_DEBUG,
           "llama.cpp: %.*s", (int)n, text);
}

static char lib_dir[4096 + 64];

/* libmedtrust.so's own: medtrust/ beside an installed PREFIX/lib/
 * libmedtrust.so, lib/medtrust/ beside the build tree's. 0 when found. */
static int beside_library(void)
{
    static const char *const rels[] = {"medtrust", "lib/medtrust"};
    char dir[4096];
    char probe[4096 + 64];
    size_t i;

    if (mtx_lib_dir(dir, sizeof dir) != 0)
        return -1;
    for (i = 0; i < sizeof rels / sizeof rels[0]; i++) {
        snprintf(probe, sizeof probe, "%s/%s/libggml-base.so", dir, rels[i]);
        if (access(probe, R_OK) == 0) {
            snprintf(lib_dir, sizeof lib_dir, "%s/%s", dir, rels[i]);
            return 0;
        }
    }
    return -1;
}

/* Where the CPU backends (libggml-cpu-*.so) are: $MEDTRUST_LLAMA_LIB, else
 * ../lib/medtrust beside the executable when `make install` put them
 * there, else lib/medtrust beside it (the build tree's copy, mk/model.mk),
 * else beside libmedtrust.so when a program loaded that, else the
 * third_party folder the library was built from. */
static void find_lib_dir(void)
{
    const char *env = getenv("MEDTRUST_LLAMA_LIB");
    char exe[4096];
    char probe[4096 + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;

    snprintf(lib_dir, sizeof lib_dir, "%s",
             env && *env ? env : MT_LLAMA_LIB_DIR);
    if ((env && *env) || n <= 0)
        return;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(probe, sizeof probe, "%s/../lib/medtrust/libggml-base.so", exe);
    if (access(probe, R_OK) == 0) {
        snprintf(lib_dir, sizeof lib_dir, "%s/../lib/medtrust", exe);
        return;
    }
    snprintf(probe, sizeof probe, "%s/lib/medtrust/libggml-base.so", exe);
    if (access(probe, R_OK) == 0) {
        snprintf(lib_dir, sizeof lib_dir, "%s/lib/medtrust", exe);
        return;
    }
    beside_library();
}

static void do_init(void)
{
    llama_log_set(on_log, NULL);
    find_lib_dir();
    mt_log(MT_LOG_DEBUG, "llama.cpp backends from %s", lib_dir);
    ggml_backend_load_all_from_path(lib_dir);
    llama_backend_init();
}

/* Loads backends from MEDTRUST_LLAMA_LIB or the build's bundle folder and
 * initialises llama.cpp once per process. Thread-safe. */
static enum mt_status llama_init(struct mt_error *err)
{
    pthread_once(&init_once, do_init);
    if (ggml_backend_dev_count() == 0)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "llama.cpp found no CPU backend in %s: set "
                       "MEDTRUST_LLAMA_LIB to the folder of libggml-cpu-*.so",
                       lib_dir);
    return MT_OK;
}

enum mt_status mtx_llama_session_open(struct mtx_llama_session *s,
                                      const char *path, enum mt_llama_role role,
                                      const char *setting, struct mt_error *err)
{
    const char *slash = strrchr(path, '/');
    enum mt_status st;

    pthread_mutex_init(&s->mu, NULL);
    s->name = mt_strdup(slash ? slash + 1 : path);
    if (!s->name)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    st = mtx_llama_load(path, role, setting, &s->model, err);
    if (st == MT_OK)
        s->vocab = llama_model_get_vocab(s->model);
    return st;
}

enum mt_status mtx_llama_session_context(struct mtx_llama_session *s,
                                         const char *path,
                                         struct llama_context_params cp,
                                         struct mt_error *err)
{
    s->ctx = llama_init_from_model(s->model, cp);
    if (!s->ctx)
        return mt_fail(err, MT_ENOMEM,
                       "gguf:%s: cannot create a context of %u tokens", path,
                       cp.n_ctx);
    return MT_OK;
}

void mtx_llama_session_close(struct mtx_llama_session *s)
{
    if (s->ctx)
        llama_free(s->ctx);
    if (s->model)
        mtx_llama_release(s->model);
    pthread_mutex_destroy(&s->mu);
    mt_free(s->name);
    memset(s, 0, sizeof *s);
}

int32_t mtx_llama_threads(uint32_t threads)
{
    return threads ? (int32_t)threads : (int32_t)mtx_online_cpus();
}

/* ==== Loading ==== */

static enum mt_status check_file(const char *path, const char *setting,
                                 struct mt_error *err)
{
    char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    size_t got;

    if (!f)
        return mt_fail(err, MT_ENOTFOUND,
                       "gguf:%s: cannot open the model "
                       "file: fix the path in %s",
                       path, setting);
    got = fread(magic, 1, 4, f);
    fclose(f);
    if (got != 4 || memcmp(magic, "GGUF", 4) != 0)
        return mt_fail(err, MT_EPARSE,
                       "gguf:%s: not a GGUF model file: "
                       "give a .gguf model in %s",
                       path, setting);
    return MT_OK;
}

static const char *role_text(enum mt_llama_role r)
{
    static const char *const t[] = {
        "a chat (generative) model", "an embedding model",
        "a reranker (cross-encoder)", "a sequence classifier",
        "a token encoder (a GGUF that declares a pooling type, e.g. BERT)"};
    return t[r];
}

/* Reads the pooling type the GGUF declares (-1 when none). */
static int model_pooling(const struct llama_model *m)
{
    char arch[64];
    char key[96];
    char val[32];

    if (llama_model_meta_val_str(m, "general.architecture", arch, sizeof arch) <
        0)
        return -1;
    snprintf(key, sizeof key, "%s.pooling_type", arch);
    if (llama_model_meta_val_str(m, key, val, sizeof val) < 0)
        return -1;
    return atoi(val);
}

static int role_fits(const struct llama_model *m, enum mt_llama_role role)
{
    int pool = model_pooling(m);
    int encoder_only =
        !llama_model_has_decoder(m) || (pool >= 0 && role == MT_LLAMA_CHAT);

    switch (role) {
    case MT_LLAMA_CHAT:
        return !encoder_only && llama_model_chat_template(m, NULL) != NULL;
    case MT_LLAMA_EMBED:
        return pool >= 0 && pool != LLAMA_POOLING_TYPE_RANK;
    case MT_LLAMA_RANK:
        return pool == LLAMA_POOLING_TYPE_RANK && llama_model_n_cls_out(m) == 1;
    case MT_LLAMA_CLASSIFY:
        return pool == LLAMA_POOLING_TYPE_RANK && llama_model_n_cls_out(m) > 1;
    case MT_LLAMA_TOKENS: /* hidden states under any head */
        return pool >= 0;
    }
    return 0;
}

/* ==== Shared models ====
 * A model file opened by several handles (roles, embedder and reranker
 * on one file) is loaded once; llama.cpp models are read-only after
 * loading and may serve many contexts. */

struct shared {
    struct shared *next;
    struct llama_model *model;
    char *path;
    unsigned refs;
};

static struct shared *loaded;
static pthread_mutex_t loaded_mu = PTHREAD_MUTEX_INITIALIZER;

static struct llama_model *acquire(const char *path)
{
    struct llama_model_params mp = llama_model_default_params();
    struct shared *s;

    for (s = loaded; s; s = s->next)
        if (strcmp(s->path, path) == 0) {
            s->refs++;
            return s->model;
        }
    s = mt_calloc(1, sizeof *s);
    if (!s || !(s->path = mt_strdup(path))) {
        mt_free(s);
        return NULL;
    }
    mp.n_gpu_layers = 0;
    s->model = llama_model_load_from_file(path, mp);
    if (!s->model) {
        mt_free(s->path);
        mt_free(s);
        return NULL;
    }
    s->refs = 1;
    s->next = loaded;
    loaded = s;
    return s->model;
}

void mtx_llama_release(struct llama_model *m)
{
    struct shared **pp;
    struct shared *s;

    pthread_mutex_lock(&loaded_mu);
    for (pp = &loaded; (s = *pp) != NULL; pp = &s->next) {
        if (s->model != m)
            continue;
        if (--s->refs == 0) {
            *pp = s->next;
            llama_model_free(s->model);
            mt_free(s->path);
            mt_free(s);
        }
        break;
    }
    pthread_mutex_unlock(&loaded_mu);
}

enum mt_status mtx_llama_load(const char *path, enum mt_llama_role role,
                              const char *setting, struct llama_model **out,
                              struct mt_error *err)
{
    struct llama_model *m;
    char arch[64] = "unknown";
    enum mt_status st = llama_init(err);

    if (st == MT_OK)
        st = check_file(path, setting, err);
    if (st != MT_OK)
        return st;
    pthread_mutex_lock(&loaded_mu);
    m = acquire(path);
    pthread_mutex_unlock(&loaded_mu);
    if (!m)
        return mt_fail(err, MT_EPARSE,
                       "gguf:%s: llama.cpp cannot load this "
                       "model (unsupported architecture, damaged file or out "
                       "of memory; run with --verbose for details): fix %s",
                       path, setting);
    if (!role_fits(m, role)) {
        llama_model_meta_val_str(m, "general.architecture", arch, sizeof arch);
        mtx_llama_release(m);
        return mt_fail(err, MT_EINVAL,
                       "gguf:%s: this %s model is not %s: "
                       "give %s in %s",
                       path, arch, role_text(role), role_text(role), setting);
    }
    *out = m;
    return MT_OK;
}

/* ==== Tokens ==== */

enum mt_status mtx_llama_tokenize(const struct llama_vocab *v, const char *text,
                                  size_t n, int special, llama_token **out,
                                  int32_t *n_out, struct mt_error *err)
{
    int32_t cap = (int32_t)(n < 1 << 28 ? n : 1 << 28) + 8;
    llama_token *t = mt_malloc((size_t)cap * sizeof *t);
    int32_t k;

    if (!t)
        return mt_fail(err, MT_ENOMEM, "tokenize: out of memory");
    k = llama_tokenize(v, text, (int32_t)n, t, cap, special != 0, true);
    if (k < 0) {
        mt_free(t);
        return mt_fail(err, MT_ELIMIT,
                       "tokenize: text of %zu bytes is too "
                       "long",
                       n);
    }
    *out = t;
    *n_out = k;
    return MT_OK;
}
#endif
