/* Search analyzers: text in, normalised index terms out. Each corpus
 * stores the name of the analyzer it was indexed with ("english",
 * "arabic", "cjk", "simple") so queries are analysed the same way. */
#ifndef MT_TEXT_ANALYZER_H
#define MT_TEXT_ANALYZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "medtrust/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest token, in input bytes; longer letter/digit runs are dropped
 * (they are junk such as base64 or run-together tables, as Lucene does). */
#define MT_ANALYZER_MAX_TOKEN 255

struct mt_analyzer;

/* Receives one token: 'tok' holds 'n' bytes of folded UTF-8 (also
 * NUL-terminated), valid only during the call. 'position' counts tokens
 * from 0; a dropped stop word still takes its position, so phrase
 * distances stay true. Return MT_OK to go on; any other status stops
 * mtx_analyzer_run(), which returns it. */
typedef enum mt_status (*mt_token_fn)(const char *tok, size_t n,
                                      uint32_t position, void *user);

/* Creates the analyzer called 'name':
 *   "english": NFKC + case fold, split on Unicode letters/digits, drop the
 *              Lucene English stop words, Snowball English stemmer;
 *   "arabic":  fold, split, drop common Arabic stop words, Snowball Arabic;
 *   "cjk":     Han/Hiragana/Katakana runs become overlapping bigrams (a
 *              one-character run its unigram); other runs fold as words;
 *   "simple":  fold and split only.
 * On MT_OK *out owns the analyzer (free with mtx_analyzer_free). An unknown
 * name gives MT_EINVAL listing the valid names; MT_ENOMEM when out of
 * memory (the Snowball stemmer allocates with plain malloc, outside fault
 * injection). An analyzer holds scratch and stemmer state: use one per
 * thread. */
enum mt_status mtx_analyzer_new(const char *name, struct mt_analyzer **out,
                                struct mt_error *err);

/* Returns the analyzer's name (static storage, e.g. "english"). */
const char *mtx_analyzer_name(const struct mt_analyzer *a);

/* Analyses text[0..n) and calls fn once per token in order. Ill-formed
 * UTF-8 never fails the call: each bad byte acts as a separator and is
 * skipped, since queries may be junk. Returns MT_OK, MT_ENOMEM, or the
 * first non-OK status fn returned. Not thread-safe on one analyzer. */
enum mt_status mtx_analyzer_run(struct mt_analyzer *a, const char *text,
                                size_t n, mt_token_fn fn, void *user,
                                struct mt_error *err);

/* One collected token; p is NUL-terminated and lives in the arena. */
struct mt_token {
    const char *p;
    size_t n;
    uint32_t position;
};

/* Convenience: runs the analyzer and collects every token. On MT_OK
 * *out is an array of *count tokens allocated, with their text, from
 * 'arena' (released with the arena). On failure *out and *count are left
 * unchanged (memory already taken from the arena stays there). */
enum mt_status mtx_analyzer_collect(struct mt_analyzer *a, const char *text,
                                    size_t n, struct mt_arena *arena,
                                    struct mt_token **out, size_t *count,
                                    struct mt_error *err);

/* Frees the analyzer; NULL is allowed. */
void mtx_analyzer_free(struct mt_analyzer *a);

#ifdef __cplusplus
}
#endif
#endif
