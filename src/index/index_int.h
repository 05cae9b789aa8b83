/* Private parts of the search index shared by build and search. */
#ifndef MT_INDEX_INT_H
#define MT_INDEX_INT_H

#include <stdint.h>

#include "index/manifest.h"
#include "medtrust/index.h"

/* Magic of the per-segment id file: chunk ids and source ids by local doc
 * number. */
#define MT_IDS_MAGIC "MTIDS\0\0\1"
#define MT_IDS_VERSION 1u

/* Writes "STORE_DIR/index" into buf. */
void mt_index_dir(const char *store_dir, char *buf, size_t n);

/* Writes "INDEX_DIR/NAME.EXT" into buf. */
void mt_index_seg_path(const char *index_dir, const char *name,
                       const char *ext, char *buf, size_t n);

#endif
