/* The one redaction of secrets in text that shows a model spec or URL
 * (medtrust models, /v1/models, logs, traces, reports, error messages).
 * Names: mtx_ (cross-file internals, docs/architecture.md). */
#ifndef MT_CORE_REDACT_H
#define MT_CORE_REDACT_H

#include <stddef.h>

/* What a hidden secret reads as. */
#define MTX_REDACTED "***"

/* Copies 'in' to out[0..cap) (always terminated when cap > 0) with every
 * URL's secrets replaced by "***": the user info of each URL
 * (scheme://USER:PASSWORD@host, with or without a path; every URL of a
 * pool "openai:URL1,URL2#MODEL"), and the value of each key-like query
 * parameter (api_key=, key=, token=, access_token=, secret=, password=,
 * sig=, ...). Text without "://" is copied as it is. Returns the length
 * the redacted text has (as snprintf, so >= cap means it was cut).
 * Thread-safe. */
size_t mtx_redact(const char *in, char *out, size_t cap);

/* The redacted text of 'in' in a new string the caller frees with mt_free;
 * NULL for NULL or when out of memory. */
char *mtx_redact_dup(const char *in);

/* Redacts the terminated text in s[0..cap) where it lies (cut at cap). */
void mtx_redact_inplace(char *s, size_t cap);

#endif
