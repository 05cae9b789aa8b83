/* ONNX Runtime's C API, dlopened once per process: the headers are those
 * of libonnxruntime-dev 1.21 (API version 21), which any later library
 * serves through OrtGetApiBase()->GetApi(ORT_API_VERSION). One OrtEnv for
 * the process (kept to the end: ONNX Runtime's own threads may use it). */
#include "core/selfpath.h"
#include "medtrust/core.h"
#include "model/ort_rt.h"

#if MT_HAVE_ORT
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxruntime_c_api.h>

#define MAX_IO 16

static const OrtApi *api;
static const OrtApiBase *api_base;
static OrtEnv *env;
static const char *load_error;
static char load_msg[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

struct mtx_ort {
    OrtSession *sess;
    char *path;
    char *in[MAX_IO];
    ONNXTensorElementDataType in_type[MAX_IO];
    size_t nin;
    char *out[MAX_IO];
    size_t nout;
};

/* The folder to look in: libmedtrust.so's (its medtrust/ beside it when
 * installed, lib/medtrust in the build tree), else the program's. */
static int base_dir(char *dir, size_t n)
{
    ssize_t k;
    char *slash;

    if (mtx_lib_dir(dir, n) == 0)
        return 1;
    k = readlink("/proc/self/exe", dir, n - 1);
    dir[k > 0 ? k : 0] = '\0';
    slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    return 0;
}

/* dlopens the library: MEDTRUST_ONNXRUNTIME, else the copy beside the
 * program or libmedtrust.so (as the build tree and `make install` lay it
 * out; looked up by path because a dlopen from a sanitized build does not
 * see the program's run path), else the system loader's
 * libonnxruntime.so.1. */
static void *open_lib(void)
{
    static const char *const rel[2][2] = {
        {"/lib/medtrust/", "/../lib/medtrust/"}, /* beside the program */
        {"/medtrust/", "/lib/medtrust/"},        /* beside the library */
    };
    const char *env_lib = getenv("MEDTRUST_ONNXRUNTIME");
    char dir[4096], path[4200];
    int lib;
    size_t i;
    void *h;

    if (env_lib && *env_lib)
        return dlopen(env_lib, RTLD_NOW | RTLD_LOCAL);
    lib = base_dir(dir, sizeof dir);
    for (i = 0; dir[0] && i < 2; i++) {
        snprintf(path, sizeof path, "%s%slibonnxruntime.so.1", dir,
                 rel[lib][i]);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return dlopen("libonnxruntime.so.1", RTLD_NOW | RTLD_LOCAL);
}

static void load_once(void)
{
    void *h = open_lib();
    const OrtApiBase *(*base)(void) = NULL;
    void *sym;
    OrtStatus *s;

    if (!h) {
        snprintf(load_msg, sizeof load_msg, "%s", dlerror());
        load_error = load_msg;
        return;
    }
    sym = dlsym(h, "OrtGetApiBase");
    if (sym)
        memcpy(&base, &sym, sizeof base);
    api_base = base ? base() : NULL;
    api = api_base ? api_base->GetApi(ORT_API_VERSION) : NULL;
    if (!api) {
        snprintf(load_msg, sizeof load_msg,
                 "the library (version %s) does not serve C API version %d",
                 api_base ? api_base->GetVersionString() : "unknown",
                 ORT_API_VERSION);
        load_error = load_msg;
        return;
    }
    /* FATAL only: failures come back as statuses, and library code
     * prints nothing. */
    s = api->CreateEnv(ORT_LOGGING_LEVEL_FATAL, "medtrust", &env);
    if (s) {
        snprintf(load_msg, sizeof load_msg, "%s", api->GetErrorMessage(s));
        api->ReleaseStatus(s);
        load_error = load_msg;
        api = NULL;
    }
}

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer's hook: ONNX Runtime keeps a few process-lifetime
 * allocations (14 bytes at exit) that are not ours to free. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libonnxruntime.so\n";
}

const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}
#endif

static enum mt_status need_api(struct mt_error *err)
{
    pthread_once(&once, load_once);
    if (api)
        return MT_OK;
    return mt_fail(err, MT_EUNSUPPORTED,
                   "cannot load ONNX Runtime (%s): run `make bootstrap` "
                   "(it fetches the CPU library), or set MEDTRUST_ONNXRUNTIME "
                   "to a libonnxruntime.so of version 1.21 or newer",
                   load_error ? load_error : "unknown reason");
}

const char *mtx_ort_version(void)
{
    pthread_once(&once, load_once);
    return api ? api_base->GetVersionString() : NULL;
}

/* Turns an ONNX Runtime status into our error; NULL is success. */
static enum mt_status ort_fail(OrtStatus *s, struct mt_error *err,
                               const char *what, const char *path)
{
    enum mt_status st;

    if (!s)
        return MT_OK;
    st = mt_fail(err, MT_EMODEL, "%s: %s: %s", path, what,
                 api->GetErrorMessage(s));
    api->ReleaseStatus(s);
    return st;
}

/* Copies the session's input or output names (and input types). */
static enum mt_status read_names(struct mtx_ort *o, int inputs,
                                 struct mt_error *err)
{
    OrtAllocator *al = NULL;
    size_t n = 0, i;
    OrtStatus *s = api->GetAllocatorWithDefaultOptions(&al);

    if (!s)
        s = inputs ? api->SessionGetInputCount(o->sess, &n)
                   : api->SessionGetOutputCount(o->sess, &n);
    if (s)
        return ort_fail(s, err, "reading the graph", o->path);
    if (n > MAX_IO)
        return mt_fail(err, MT_EUNSUPPORTED, "%s: %zu graph %s (at most %d)",
                       o->path, n, inputs ? "inputs" : "outputs", MAX_IO);
    for (i = 0; i < n; i++) {
        char *name = NULL;
        s = inputs ? api->SessionGetInputName(o->sess, i, al, &name)
                   : api->SessionGetOutputName(o->sess, i, al, &name);
        if (s)
            return ort_fail(s, err, "reading the graph", o->path);
        (inputs ? o->in : o->out)[i] = mt_strdup(name);
        api->ReleaseStatus(api->AllocatorFree(al, name));
        if (!(inputs ? o->in : o->out)[i])
            return mt_fail(err, MT_ENOMEM, "out of memory");
        (*(inputs ? &o->nin : &o->nout))++;
    }
    return MT_OK;
}

static enum mt_status input_type(struct mtx_ort *o, size_t i,
                                 struct mt_error *err)
{
    OrtTypeInfo *ti = NULL;
    const OrtTensorTypeAndShapeInfo *tsi = NULL;
    OrtStatus *s = api->SessionGetInputTypeInfo(o->sess, i, &ti);

    if (!s)
        s = api->CastTypeInfoToTensorInfo(ti, &tsi);
    if (!s && tsi)
        s = api->GetTensorElementType(tsi, &o->in_type[i]);
    api->ReleaseTypeInfo(ti);
    if (s)
        return ort_fail(s, err, "reading the graph", o->path);
    if (o->in_type[i] != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 &&
        o->in_type[i] != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: input '%s' is not an int64 or int32 tensor",
                       o->path, o->in[i]);
    if (strcmp(o->in[i], "input_ids") != 0 &&
        strcmp(o->in[i], "attention_mask") != 0 &&
        strcmp(o->in[i], "token_type_ids") != 0)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: graph input '%s' is not one medtrust feeds "
                       "(input_ids, attention_mask, token_type_ids)",
                       o->path, o->in[i]);
    return MT_OK;
}

static enum mt_status make_session(struct mtx_ort *o, uint32_t threads,
                                   struct mt_error *err)
{
    OrtSessionOptions *so = NULL;
    OrtStatus *s = api->CreateSessionOptions(&so);

    if (!s && threads)
        s = api->SetIntraOpNumThreads(so, (int)threads);
    if (!s)
        s = api->SetInterOpNumThreads(so, 1);
    if (!s)
        s = api->CreateSession(env, o->path, so, &o->sess);
    api->ReleaseSessionOptions(so);
    return ort_fail(s, err, "ONNX Runtime cannot load the model", o->path);
}

enum mt_status mtx_ort_open(const char *path, uint32_t threads,
                            struct mtx_ort **out, struct mt_error *err)
{
    struct mtx_ort *o;
    enum mt_status st = need_api(err);
    size_t i;

    if (st != MT_OK)
        return st;
    o = mt_calloc(1, sizeof *o);
    if (!o || !(o->path = mt_strdup(path))) {
        mt_free(o);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    st = make_session(o, threads, err);
    if (st == MT_OK)
        st = read_names(o, 1, err);
    if (st == MT_OK)
        st = read_names(o, 0, err);
    for (i = 0; st == MT_OK && i < o->nin; i++)
        st = input_type(o, i, err);
    if (st == MT_OK && !mtx_ort_has_input(o, "input_ids"))
        st = mt_fail(err, MT_EUNSUPPORTED,
                     "%s: the graph has no input_ids "
                     "input",
                     path);
    if (st != MT_OK) {
        mtx_ort_close(o);
        return st;
    }
    *out = o;
    return MT_OK;
}

static long find(char *const *names, size_t n, const char *name)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return (long)i;
    return -1;
}

int mtx_ort_has_input(const struct mtx_ort *o, const char *name)
{
    return find(o->in, o->nin, name) >= 0;
}

int mtx_ort_has_output(const struct mtx_ort *o, const char *name)
{
    return find(o->out, o->nout, name) >= 0;
}

const char *mtx_ort_output_name(const struct mtx_ort *o, size_t i)
{
    return i < o->nout ? o->out[i] : NULL;
}

/* ==== Running ==== */

/* The tensor for input i over src (b x t int64), converted to int32 in
 * *tmp when the graph wants that. */
static OrtStatus *input_tensor(const struct mtx_ort *o, size_t i,
                               const OrtMemoryInfo *mi, const int64_t *src,
                               size_t b, size_t t, void **tmp, OrtValue **v)
{
    int64_t shape[2] = {(int64_t)b, (int64_t)t};
    size_t k, n = b * t;
    int32_t *d;

    if (o->in_type[i] == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
        return api->CreateTensorWithDataAsOrtValue(
            mi, (void *)(uintptr_t)src, n * sizeof *src, shape, 2,
            ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, v);
    d = mt_malloc(n * sizeof *d + 1);
    if (!d)
        return api->CreateStatus(ORT_FAIL, "out of memory");
    for (k = 0; k < n; k++)
        d[k] = (int32_t)src[k];
    *tmp = d;
    return api->CreateTensorWithDataAsOrtValue(
        mi, d, n * sizeof *d, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, v);
}

/* Copies the float output v into a new array. */
static enum mt_status take_output(const struct mtx_ort *o, OrtValue *v,
                                  float **out, int64_t dims[4], size_t *nd,
                                  struct mt_error *err)
{
    OrtTensorTypeAndShapeInfo *ti = NULL;
    ONNXTensorElementDataType ty = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    size_t n = 1, k;
    void *data = NULL;
    OrtStatus *s = api->GetTensorTypeAndShape(v, &ti);

    if (!s)
        s = api->GetTensorElementType(ti, &ty);
    if (!s)
        s = api->GetDimensionsCount(ti, nd);
    if (!s && *nd <= 4)
        s = api->GetDimensions(ti, dims, *nd);
    if (!s)
        s = api->GetTensorMutableData(v, &data);
    api->ReleaseTensorTypeAndShapeInfo(ti);
    if (s)
        return ort_fail(s, err, "reading the output", o->path);
    if (ty != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || *nd > 4 || *nd == 0)
        return mt_fail(err, MT_EUNSUPPORTED,
                       "%s: the output is not a float32 tensor of 1 to 4 "
                       "dimensions (export the model in fp32)",
                       o->path);
    for (k = 0; k < *nd; k++)
        n *= (size_t)(dims[k] > 0 ? dims[k] : 0);
    *out = mt_malloc(n * sizeof **out + 1);
    if (!*out)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    memcpy(*out, data, n * sizeof **out);
    return MT_OK;
}

/* Feeds the graph's inputs in its order. */
static enum mt_status feed(struct mtx_ort *o, const int64_t *const src[3],
                           size_t b, size_t t, OrtValue **vals, void **tmp,
                           struct mt_error *err)
{
    static const char *const names[3] = {"input_ids", "attention_mask",
                                         "token_type_ids"};
    OrtMemoryInfo *mi = NULL;
    OrtStatus *s =
        api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mi);
    size_t i, k;

    for (i = 0; !s && i < o->nin; i++) {
        for (k = 0; k < 2 && strcmp(o->in[i], names[k]) != 0; k++)
            ; /* input_type() admitted only these three names */
        s = input_tensor(o, i, mi, src[k], b, t, &tmp[i], &vals[i]);
    }
    api->ReleaseMemoryInfo(mi);
    return ort_fail(s, err, "preparing the inputs", o->path);
}

enum mt_status mtx_ort_run(struct mtx_ort *o, const int64_t *ids,
                           const int64_t *mask, const int64_t *types, size_t b,
                           size_t t, const char *output, float **out,
                           int64_t dims[4], size_t *ndims, struct mt_error *err)
{
    OrtValue *vals[MAX_IO] = {0}, *res = NULL;
    void *tmp[MAX_IO] = {0};
    int64_t *zeros = types ? NULL : mt_calloc(b * t + 1, sizeof *zeros);
    const int64_t *src[3] = {ids, mask, types ? types : zeros};
    const char *on = output ? output : o->out[0];
    enum mt_status st =
        zeros || types ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    size_t i;

    *out = NULL;
    if (st == MT_OK)
        st = feed(o, src, b, t, vals, tmp, err);
    if (st == MT_OK)
        st = ort_fail(api->Run(o->sess, NULL, (const char *const *)o->in,
                               (const OrtValue *const *)vals, o->nin, &on, 1,
                               &res),
                      err, "running the model", o->path);
    if (st == MT_OK)
        st = take_output(o, res, out, dims, ndims, err);
    api->ReleaseValue(res);
    for (i = 0; i < o->nin; i++) {
        api->ReleaseValue(vals[i]);
        mt_free(tmp[i]);
    }
    mt_free(zeros);
    return st;
}

void mtx_ort_close(struct mtx_ort *o)
{
    size_t i;

    if (!o)
        return;
    if (o->sess)
        api->ReleaseSession(o->sess);
    for (i = 0; i < o->nin; i++)
        mt_free(o->in[i]);
    for (i = 0; i < o->nout; i++)
        mt_free(o->out[i]);
    mt_free(o->path);
    mt_free(o);
}

#else /* built without the ONNX Runtime headers */

static enum mt_status no_ort(struct mt_error *err)
{
    return mt_fail(err, MT_EUNSUPPORTED,
                   "this medtrust was built without ONNX Runtime's headers: "
                   "run `make bootstrap` (it fetches them) and rebuild");
}

enum mt_status mtx_ort_open(const char *path, uint32_t threads,
                            struct mtx_ort **out, struct mt_error *err)
{
    (void)path;
    (void)threads;
    (void)out;
    return no_ort(err);
}

int mtx_ort_has_input(const struct mtx_ort *o, const char *name)
{
    (void)o;
    (void)name;
    return 0;
}

int mtx_ort_has_output(const struct mtx_ort *o, const char *name)
{
    (void)o;
    (void)name;
    return 0;
}

const char *mtx_ort_output_name(const struct mtx_ort *o, size_t i)
{
    (void)o;
    (void)i;
    return NULL;
}

enum mt_status mtx_ort_run(struct mtx_ort *o, const int64_t *ids,
                           const int64_t *mask, const int64_t *types, size_t b,
                           size_t t, const char *output, float **out,
                           int64_t dims[4], size_t *ndims, struct mt_error *err)
{
    (void)o, (void)ids, (void)mask, (void)types, (void)b, (void)t;
    (void)output, (void)out, (void)dims, (void)ndims;
    return no_ort(err);
}

const char *mtx_ort_version(void)
{
    return NULL;
}

void mtx_ort_close(struct mtx_ort *o)
{
    (void)o;
}

#endif
