/* The folder of libmedtrust.so when medtrust runs from it (core/selfpath.c).
 */
#ifndef MT_CORE_SELFPATH_H
#define MT_CORE_SELFPATH_H

#include <stddef.h>

/* Writes the folder of the shared library this code was loaded from into
 * buf (n bytes) and returns 0; -1 when medtrust is linked into the program
 * (look beside /proc/self/exe then) or the folder does not fit. */
int mtx_lib_dir(char *buf, size_t n);

#endif
