/* libFuzzer harness for the jieba segmenter (src/text/segment_zh*.c) and
 * rouge-chinese's split over its output (mtx_kpcs_rouge1_zh). Byte 0 picks
 * what the rest is: 0 the text of a dict.txt, 1 of an hmm.txt (each loaded
 * beside a fixed small other), else a text cut with a small fixed
 * dictionary and HMM and scored against a fixed reference. Any bytes are
 * loaded or refused with a message naming the file and line, and any text
 * is cut into non-empty tokens that cover it in order; never a crash, a
 * leak or a read past a buffer. Seeds: tests/fuzz/jieba_seeds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_int.h"
#include "medtrust/core.h"
#include "text/segment_zh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char dict[] = "北京 10 ns\n清华大学 5 nt\n在 20 p\n大学 30 n\n"
                           "AT&T 3 nz\n";
static const char hmm[] = "start B -0.26\nstart S -1.46\nstart E -3.14e+100\n"
                          "trans B E -0.51\ntrans B M -0.91\ntrans E S -0.8\n"
                          "trans E B -0.58\ntrans M E -0.33\ntrans M M -1.2\n"
                          "trans S S -0.66\ntrans S B -0.72\n"
                          "emit B 4e00 -3.6\nemit B 6211 -9.0\nemit E 5728 -4\n"
                          "emit M 4e01 -8\nemit S 6211 -3.0\n";

/* Loads the pair, either side possibly the fuzzer's bytes (copied). */
static struct mtx_jieba *load(const char *d, size_t dn, const char *h,
                              size_t hn, int must)
{
    char *hc = malloc(hn + 1);
    char *dm = mt_malloc(dn + 1); /* the handle takes an mt_malloc'd dict */
    struct mtx_jieba *j = NULL;
    struct mt_error err = {0};
    enum mt_status st;

    memcpy(hc, h, hn);
    hc[hn] = '\0';
    memcpy(dm, d, dn);
    dm[dn] = '\0';
    st = mtx_jieba_load(dm, dn, hc, "dict.txt", "hmm.txt", &j, &err);
    if (st != MT_OK &&
        (must || strncmp(err.msg, "out of", 6) == 0 ||
         (!strstr(err.msg, "dict.txt") && !strstr(err.msg, "hmm.txt"))))
        __builtin_trap(); /* the fixed pair loads; a refusal names a file */
    free(hc);
    return j;
}

static void cut(const struct mtx_jieba *j, const char *s, size_t n)
{
    struct mt_str *t = NULL;
    size_t nt = 0, at = 0;
    char *z = malloc(n + 1);
    double f = -1;
    enum mt_status st;

    if (mtx_jieba_cut(j, s, n, &t, &nt) != MT_OK)
        __builtin_trap();
    for (size_t k = 0; k < nt; k++) {
        if (t[k].p != s + at || t[k].n == 0)
            __builtin_trap();
        at += t[k].n;
    }
    if (at != n)
        __builtin_trap();
    mt_free(t);
    memcpy(z, s, n);
    z[n] = '\0';
    st = mtx_kpcs_rouge1_zh(j, z, "北京清华大学。在", &f);
    if (!(st == MT_EINVAL || (st == MT_OK && f >= 0 && f <= 1)))
        __builtin_trap();
    free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data + 1;
    size_t n = size ? size - 1 : 0;
    struct mtx_jieba *j;

    if (size == 0)
        return 0;
    if (data[0] == 0)
        j = load(d, n, hmm, sizeof hmm - 1, 0);
    else if (data[0] == 1)
        j = load(dict, sizeof dict - 1, d, n, 0);
    else
        j = load(dict, sizeof dict - 1, hmm, sizeof hmm - 1, 1);
    if (j && data[0] > 1)
        cut(j, d, n);
    mtx_jieba_close(j);
    return 0;
}
