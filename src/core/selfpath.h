/* The folder of libmedtrust.so when medtrust runs from it (core/selfpath.c).
 */
#ifndef MT_CORE_SELFPATH_H
#define MT_CORE_SELFPATH_H

#include <stddef.h>

/* Writes the folder of the shared library this code was loaded from into
 * buf (n bytes) and returns 0; -1 when medtrust is linked into the program
 * (look beside /proc/self/exe then) or the folder does not fit. */
int mtx_lib_dir(char *buf, size_t n);

/* The first of rels[0..n) readable relative to the program's folder
 * (/proc/self/exe), then to libmedtrust.so's: a new "FOLDER/REL" path (free
 * with mt_free), or NULL. How installed and build-tree data files (USE-lite
 * weights, jieba's dictionary) are found. */
char *mtx_self_find(const char *const *rels, size_t n);

#endif
