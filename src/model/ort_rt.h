/* ONNX Runtime through its C API, loaded at run time (dlopen): the
 * library MEDTRUST_ONNXRUNTIME names, else libonnxruntime.so.1 found
 * beside the binary (lib/medtrust, where the build copies the one
 * scripts/bootstrap fetched) or by the system's loader. Sessions run
 * transformer encoders: int64 input_ids, attention_mask and, when the
 * graph has it, token_type_ids, in, one float output out. Names: mtx_
 * (cross-file internals, docs/architecture.md). */
#ifndef MT_MODEL_ORT_RT_H
#define MT_MODEL_ORT_RT_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

struct mtx_ort;

/* Opens an inference session on the model file 'path' with 'threads'
 * intra-op threads (0 = ONNX Runtime's default, all cores). Fails naming
 * the file and ONNX Runtime's reason, or saying how to get the library.
 * On success *out owns the session (mtx_ort_close). */
enum mt_status mtx_ort_open(const char *path, uint32_t threads,
                            struct mtx_ort **out, struct mt_error *err);

/* 1 when the graph has an input of that name. */
int mtx_ort_has_input(const struct mtx_ort *o, const char *name);

/* 1 when the graph has an output of that name. */
int mtx_ort_has_output(const struct mtx_ort *o, const char *name);

/* The name of output i (NULL past the last). */
const char *mtx_ort_output_name(const struct mtx_ort *o, size_t i);

/* Runs one batch of b rows of t tokens (row-major int64 arrays; types
 * may be NULL and is then zeros when the graph takes token_type_ids).
 * 'output' names the output to read (NULL: the first). On success *out is
 * a new float array (mt_free) of dims[0..*ndims) elements (ndims <= 4).
 * Thread-safe (ONNX Runtime sessions are). */
enum mt_status mtx_ort_run(struct mtx_ort *o, const int64_t *ids,
                           const int64_t *mask, const int64_t *types, size_t b,
                           size_t t, const char *output, float **out,
                           int64_t dims[4], size_t *ndims,
                           struct mt_error *err);

/* ONNX Runtime's version string, or NULL when it cannot be loaded. */
const char *mtx_ort_version(void);

void mtx_ort_close(struct mtx_ort *o);

#endif
