/* libFuzzer harness for the evaluation's readers (src/eval): a MEDIQA-CORR
 * reference CSV (mt_eval_ref_load_mem), a submission, read as the
 * official script reads it (mt_eval_sub_parse), and a per-pair score file
 * (mt_eval_scores_load, from a temporary file). Byte 0 picks the reader;
 * the rest is the file. Any bytes are read, or refused with a message
 * naming the file, never a crash, a leak or a read past a buffer; what
 * is read is walked as `medtrust score` walks it. Built by `make fuzz`
 * (mk/fuzz.mk); tests/integration/test_fuzz.sh seeds it with MEDEC rows,
 * a submission and score files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "medtrust/eval.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum mt_status read_ref(const char *d, size_t n, struct mt_error *err)
{
    struct mt_eval_ref *r = NULL;
    enum mt_status st = mt_eval_ref_load_mem("fuzz.csv", d, n, &r, err);
    size_t i;

    for (i = 0; st == MT_OK && i < mt_eval_ref_count(r); i++) {
        const struct mt_eval_note *note = mt_eval_ref_note(r, i);
        if (!note)
            __builtin_trap();
    }
    if (st == MT_OK && mt_eval_ref_note(r, mt_eval_ref_count(r)))
        __builtin_trap();
    if (st == MT_OK)
        (void)mt_eval_ref_has_keywords(r);
    mt_eval_ref_free(r);
    return st;
}

static enum mt_status read_sub(const char *d, size_t n, struct mt_error *err)
{
    struct mt_eval_sub *s = NULL;
    enum mt_status st = mt_eval_sub_parse("fuzz.txt", d, n, &s, err);
    size_t i;

    for (i = 0; st == MT_OK && i < mt_eval_sub_count(s); i++) {
        const struct mt_eval_pred *p = mt_eval_sub_pred(s, i);
        if (!p || !p->id || !p->correction || !*p->correction ||
            mt_eval_sub_find(s, p->id) < 0)
            __builtin_trap(); /* a prediction is whole and findable */
    }
    for (i = 0; st == MT_OK && i < mt_eval_sub_ndiag(s); i++)
        if (strncmp(mt_eval_sub_diag(s, i), "fuzz.txt", 8) != 0)
            __builtin_trap(); /* every note names the file */
    mt_eval_sub_free(s);
    return st;
}

static enum mt_status read_scores(const char *d, size_t n, struct mt_error *err)
{
    struct mt_eval_scores *sc = NULL;
    const char *path = fuzz_write_temp("/tmp/mt-fuzz-eval-XXXXXX", d, n);
    enum mt_status st = mt_eval_scores_load(path, &sc, err);
    double v;

    if (st == MT_OK)
        (void)mt_eval_scores_get(sc, "ms-val-0", &v);
    mt_eval_scores_free(sc);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mt_error err = {MT_OK, ""};
    const char *d = (const char *)data + 1;
    enum mt_status st;

    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        st = read_ref(d, size - 1, &err);
        break;
    case 1:
        st = read_sub(d, size - 1, &err);
        break;
    default:
        st = read_scores(d, size - 1, &err);
        break;
    }
    if (st == MT_ENOMEM || st == MT_EINTERNAL ||
        (st != MT_OK && !strstr(err.msg, "fuzz"))) {
        fprintf(stderr, "refused with %s: %s\n", mt_status_str(st), err.msg);
        __builtin_trap(); /* bad bytes are named, never "out of memory" */
    }
    return 0;
}
