/* libFuzzer harness for the JSONL reader (src/core/jsonl.c): any bytes are
 * read object by object, or refused with MT_EPARSE/MT_ELIMIT naming the
 * file and line, or (skip_bad) skipped and counted; never a crash, a leak
 * or a read past the line buffer. The first byte picks skip_bad and a
 * small max_line (so over-long lines are reached); the rest is the file,
 * written to a temporary file since the reader reads paths. Built by
 * `make fuzz` (mk/fuzz.mk); tests/integration/test_fuzz.sh seeds it with
 * JSONL lines of the corpora's shape. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mt_jsonl_params p = mtx_jsonl_default_params();
    struct mt_error err = {MT_OK, ""};
    struct mt_jsonl *r = NULL;
    enum mt_status st;
    json_t *o = NULL;
    const char *path;
    size_t objs = 0;

    if (size < 1)
        return 0;
    p.skip_bad = data[0] & 1;
    if (data[0] & 2)
        p.max_line = 64;
    path = fuzz_write_temp("/tmp/mt-fuzz-jsonl-XXXXXX", data + 1, size - 1);
    st = mtx_jsonl_open(path, &p, &r, &err);
    if (st != MT_OK)
        abort(); /* a file that exists opens */
    do {
        st = mtx_jsonl_next(r, &o, &err);
        if (st == MT_OK && o) {
            if (!json_is_object(o) || mtx_jsonl_line(r) < 1)
                __builtin_trap();
            objs++;
        }
    } while (st == MT_OK && o);
    if (st != MT_OK && mtx_jsonl_next(r, &o, NULL) != st)
        __builtin_trap(); /* an error is sticky */
    if (st != MT_OK && (p.skip_bad || strncmp(err.msg, path, strlen(path))))
        __builtin_trap(); /* skip_bad never fails; errors name the file */
    mtx_jsonl_close(r);
    if (st != MT_OK && st != MT_EPARSE && st != MT_ELIMIT)
        __builtin_trap();
    (void)objs;
    return 0;
}
