/* UTF-8 validation and decoding, and NFKC normalisation with case folding
 * (through utf8proc) for the text layer. */
#ifndef MT_TEXT_UTF8_H
#define MT_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that p[0..n) is well-formed UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF, no truncated sequence). Returns
 * MT_OK, or MT_EPARSE with the offset of the first bad byte in
 * *bad_offset (may be NULL). Thread-safe. */
enum mt_status mtx_utf8_validate(const char *p, size_t n, size_t *bad_offset);

/* mtx_utf8_step's answer when the n bytes are a well-formed start of a
 * sequence that they cut short (n == 0 included): read more, then ask
 * again. */
#define MTX_UTF8_SHORT (-1)

/* The one UTF-8 decoder (RFC 3629, Unicode Table 3-7: no overlong forms,
 * no surrogates, nothing above U+10FFFF), for readers that must tell a
 * sequence cut short by the end of what they hold from an ill-formed one
 * (the XML scanner's window). Returns the bytes of the well-formed
 * sequence at p (1..4) and sets *cp; 0 when the bytes at p are
 * ill-formed; MTX_UTF8_SHORT when p[0..n) is a well-formed prefix that n
 * cuts short. *cp is set only on a length. Thread-safe. */
int mtx_utf8_step(const char *p, size_t n, int32_t *cp);

/* Decodes the code point at p (n > 0 bytes available). Returns the bytes
 * it spans (1..4) and sets *cp; an ill-formed sequence yields *cp = -1 and
 * a length of 1, so callers can skip one bad byte and resynchronise (a
 * sequence cut short by n is ill-formed here). Returns 0 only when
 * n == 0. mtx_utf8_step's answers folded into one. Thread-safe. */
size_t mtx_utf8_decode(const char *p, size_t n, int32_t *cp);

/* Counts code points in p[0..n); each ill-formed byte counts as one.
 * Thread-safe. */
size_t mtx_utf8_count(const char *p, size_t n);

/* Length of the longest prefix of p[0..n) that is at most max bytes and
 * does not split a UTF-8 sequence (for truncating text for display). */
size_t mtx_utf8_cut(const char *p, size_t n, size_t max);

/* Writes cp as UTF-8 into out (room for 4 bytes); returns the length, or
 * 0 when cp is not a Unicode scalar value. */
size_t mtx_utf8_encode(int32_t cp, char out[4]);

/* Reusable scratch memory for mtx_text_fold_into(): zero-initialise it,
 * release with mtx_fold_scratch_free(). Not shareable between threads. */
struct mt_fold_scratch {
    int32_t *cp;
    size_t cap; /* in code points */
};

/* Folds p[0..n) (well-formed UTF-8) like mtx_text_fold(), into memory owned
 * by 's': on MT_OK *out points at *out_n bytes (NUL-terminated) valid until
 * the next call with 's'. Allocates only when 's' must grow. Returns
 * MT_ENOMEM, or MT_EPARSE when the input is not valid UTF-8. */
enum mt_status mtx_text_fold_into(const char *p, size_t n,
                                  struct mt_fold_scratch *s, const char **out,
                                  size_t *out_n);

/* Frees the scratch memory; 's' may be NULL. */
void mtx_fold_scratch_free(struct mt_fold_scratch *s);

/* NFKC-normalises and case-folds p[0..n) (utf8proc: COMPOSE | COMPAT |
 * CASEFOLD | STABLE), so "\xef\xac\x81" (the fi ligature) becomes "fi" and
 * "Stra\xc3\x9f" "strass". On MT_OK *out is a NUL-terminated string of
 * *out_n bytes that the caller frees with mt_free. Invalid UTF-8 yields
 * MT_EPARSE with the byte offset in 'err'; out of memory MT_ENOMEM. On
 * failure *out is left unchanged. Thread-safe. */
enum mt_status mtx_text_fold(const char *p, size_t n, char **out, size_t *out_n,
                             struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
