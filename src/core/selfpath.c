/* Where medtrust's code was loaded from, so data files (USE-lite weights,
 * llama.cpp's CPU backends) are found beside libmedtrust.so as they are
 * found beside the medtrust binary: a Python program's executable is
 * python3, which says nothing about where medtrust is installed. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/selfpath.h"
#include "medtrust/core.h"

/* An address inside this object (a function's would need a cast ISO C
 * forbids). */
static const char anchor = 0;

int mtx_lib_dir(char *buf, size_t n)
{
    Dl_info info;
    const char *slash;

    memset(&info, 0, sizeof info);
    if (n == 0 || !dladdr(&anchor, &info) || !info.dli_fname)
        return -1;
    /* Linked into the program, dladdr names the program itself (as argv[0]
     * had it, or ""); only a shared object's name is a path to trust. */
    if (!strstr(info.dli_fname, ".so"))
        return -1;
    slash = strrchr(info.dli_fname, '/');
    if (!slash)
        return -1;
    if ((size_t)(slash - info.dli_fname) >= n)
        return -1;
    snprintf(buf, n, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
    return 0;
}

static char *in_rels(const char *dir, const char *const *rels, size_t n)
{
    char path[PATH_MAX + 64];

    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, rels[i]);
        if (access(path, R_OK) == 0)
            return mt_strdup(path);
    }
    return NULL;
}

static int exe_dir(char *buf, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    char *slash;

    if (len <= 0)
        return -1;
    buf[len] = '\0';
    slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

char *mtx_self_find(const char *const *rels, size_t n)
{
    char dir[PATH_MAX];
    char *found = NULL;

    if (exe_dir(dir, sizeof dir) == 0)
        found = in_rels(dir, rels, n);
    if (!found && mtx_lib_dir(dir, sizeof dir) == 0)
        found = in_rels(dir, rels, n);
    return found;
}
