/* jieba's data files for Chinese KPCS: where they are (an option, the
 * environment, the install, the source tree) and reading them into the
 * text layer's segmenter (src/text/segment_zh*.c, which does no I/O). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/file.h"
#include "core/selfpath.h"
#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/segment_zh.h"

#ifndef MT_JIEBA_DATADIR
#define MT_JIEBA_DATADIR "/usr/local/share/medtrust/jieba"
#endif

#define DATA_MAX ((size_t)64 << 20) /* dict.txt is 5 MB */

/* ==== Finding the folder ==== */

/* dir, when it holds a readable dict.txt: a copy of it. */
static char *try_dir(const char *dir)
{
    char path[PATH_MAX + 64];

    snprintf(path, sizeof path, "%s/" MTX_JIEBA_DICT, dir);
    if (access(path, R_OK) != 0)
        return NULL;
    path[strlen(path) - strlen("/" MTX_JIEBA_DICT)] = '\0';
    return mt_strdup(path);
}

/* Beside the program or libmedtrust.so: PREFIX/{bin,lib}/../share, or the
 * source tree's third_party from its build folders. */
static const char *const rels[] = {"../share/medtrust/jieba/" MTX_JIEBA_DICT,
                                   "third_party/jieba/" MTX_JIEBA_DICT,
                                   "../third_party/jieba/" MTX_JIEBA_DICT,
                                   "../../third_party/jieba/" MTX_JIEBA_DICT};

static char *search(void)
{
    char *found = mtx_self_find(rels, sizeof rels / sizeof rels[0]);

    if (found) /* the folder, not its dict.txt */
        found[strlen(found) - strlen("/" MTX_JIEBA_DICT)] = '\0';
    if (!found)
        found = try_dir(MT_JIEBA_DATADIR);
    if (!found)
        found = try_dir("third_party/jieba");
    return found;
}

char *mtx_ev_jieba_find(const char *given, struct mt_error *err)
{
    const char *env = getenv("MEDTRUST_JIEBA_DIR");
    const char *dir = given && *given ? given : env && *env ? env : NULL;
    char *found;

    if (dir) {
        found = try_dir(dir);
        if (!found)
            mt_fail(err, MT_ENOTFOUND,
                    "%s (%s) holds no readable " MTX_JIEBA_DICT ": point it "
                    "at the folder scripts/bootstrap makes (third_party/"
                    "jieba) or `make install` installs (share/medtrust/"
                    "jieba)",
                    dir,
                    given && *given ? "--jieba-dict" : "MEDTRUST_JIEBA_DIR");
        return found;
    }
    found = search();
    if (!found)
        mt_fail(err, MT_ENOTFOUND,
                "jieba's dictionary (" MTX_JIEBA_DICT ", " MTX_JIEBA_HMM
                ") not found: Chinese KPCS segments words as jieba does. "
                "Run scripts/bootstrap (it extracts them into third_party/"
                "jieba), then `make install`, or give --jieba-dict DIR "
                "(MEDTRUST_JIEBA_DIR)");
    return found;
}

/* ==== Reading ==== */

static enum mt_status read_one(const char *dir, const char *name, char *path,
                               size_t n, struct mt_buf *b, struct mt_error *err)
{
    enum mt_status st;

    snprintf(path, n, "%s/%s", dir, name);
    st = mtx_file_read_all(path, b, err);
    if (st == MT_OK)
        st = mtx_buf_reserve(b, 1); /* a NUL even for an empty file */
    if (st != MT_OK)
        mtx_buf_free(b);
    return st == MT_ENOMEM ? mt_fail(err, st, "out of memory") : st;
}

enum mt_status mtx_ev_jieba_open(const char *dir, struct mtx_jieba **out,
                                 struct mt_error *err)
{
    char dpath[PATH_MAX], hpath[PATH_MAX];
    struct mt_buf d = MT_BUF_INIT(DATA_MAX);
    struct mt_buf h = MT_BUF_INIT(DATA_MAX);
    enum mt_status st;

    *out = NULL;
    st = read_one(dir, MTX_JIEBA_DICT, dpath, sizeof dpath, &d, err);
    if (st != MT_OK)
        return st;
    st = read_one(dir, MTX_JIEBA_HMM, hpath, sizeof hpath, &h, err);
    if (st != MT_OK) {
        mtx_buf_free(&d);
        return st;
    }
    st = mtx_jieba_load(d.data, d.len, h.data, dpath, hpath, out, err);
    mtx_buf_free(&h);
    return st;
}
