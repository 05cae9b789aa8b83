/* Retriever internals that other layers' tests reach (names: mtx_, see
 * docs/architecture.md). */
#ifndef MT_RETRIEVE_RETRIEVE_INT_H
#define MT_RETRIEVE_RETRIEVE_INT_H

#include <stddef.h>

#include "core/buf.h"

/* Appends chunk b to text a, dropping the longest prefix of b that a
 * already ends with (the chunker's overlap, up to 2000 bytes). */
enum mt_status mtx_retrieve_join_overlap(struct mt_buf *a, const char *b,
                                         size_t n);

#endif
