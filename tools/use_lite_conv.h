/* The USE-lite converter (use_lite_conv.c), used by tools/use_lite_convert
 * at build time only. */
#ifndef MT_TOOLS_USE_LITE_CONV_H
#define MT_TOOLS_USE_LITE_CONV_H

#include "medtrust/status.h"

/* Reads model.json, its shards and vocab.json from 'src_dir' (the
 * package's dist/ folder) and writes the weight file 'out_path' (atomic:
 * a temporary file renamed into place). 'int8' writes the int8 variant. */
enum mt_status mt_ul_convert(const char *src_dir, const char *out_path,
                             int int8, struct mt_error *err);

#endif
