/* JSON string literals written straight into a buffer, byte for byte as
 * jansson's compact dump writes them, for code that emits JSON text
 * without building json_t objects (the importers' metadata). */
#ifndef MT_TEXT_JSON_STR_H
#define MT_TEXT_JSON_STR_H

#include <stddef.h>

#include "core/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Appends s[0..n) to b as a quoted JSON string, escaped as jansson's
 * json_dumps() without JSON_ENSURE_ASCII or JSON_ESCAPE_SLASH escapes it:
 * '"' and '\\' with a backslash, \b \f \n \r \t by name, the other
 * control characters below U+0020 as \u00XX (upper-case hex), all else
 * (DEL, non-ASCII) as it is. Like jansson, refuses s unless it is
 * well-formed UTF-8 (MT_EPARSE); a NUL byte is escaped (\u0000). On
 * failure b is as it was. Returns MT_ENOMEM or MT_ELIMIT from the buffer.
 * Thread-safe. */
enum mt_status mtx_json_str(struct mt_buf *b, const char *s, size_t n);

/* The same without the quotes, for a string written in parts (escaping a
 * concatenation is concatenating the escapes of its well-formed parts). */
enum mt_status mtx_json_str_body(struct mt_buf *b, const char *s, size_t n);

#ifdef __cplusplus
}
#endif

#endif
