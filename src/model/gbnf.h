/* JSON Schema -> GBNF (llama.cpp grammar) for the subset agents use:
 * object/properties/required, string (maxLength), number, integer,
 * boolean, null, enum, const, array/items, and type lists. */
#ifndef MT_MODEL_GBNF_H
#define MT_MODEL_GBNF_H

#include "medtrust/status.h"

/* Converts the JSON Schema text 'schema' into a grammar whose start rule is
 * "root". Every declared property is emitted, in declaration order (so
 * optional ones are always present); JSON is written on one line. On
 * success *out is the grammar (mt_free); MT_EPARSE for a schema that is not
 * JSON, MT_EUNSUPPORTED naming the keyword for what the subset lacks. */
enum mt_status mtx_gbnf_from_schema(const char *schema, char **out,
                                    struct mt_error *err);

#endif
