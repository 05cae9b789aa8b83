/* libFuzzer harness for the CSV reader (src/core/csv.c): any bytes are
 * read record by record or refused with MT_EPARSE/MT_ELIMIT naming the
 * input, never a crash, a leak or a read past a field. The first byte
 * picks the delimiter and whether the record and field limits are small
 * (so the refusals are reached too); the rest is the file. Built by
 * `make fuzz` (mk/fuzz.mk); tests/integration/test_fuzz.sh seeds it with
 * the CSV samples it writes. */
#include <stdint.h>
#include <string.h>

#include "core/csv.h"
#include "medtrust/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads every field of the current record as a caller would. */
static size_t touch_fields(const struct mt_csv *c)
{
    size_t n = mtx_csv_nfields(c);
    size_t i;
    size_t sum = 0;

    for (i = 0; i <= n; i++) { /* one past the end: the empty slice */
        struct mt_str f = mtx_csv_field(c, i);
        if (f.n > 0)
            sum += (unsigned char)f.p[f.n - 1];
        if (i == n && f.n != 0)
            __builtin_trap();
    }
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char delims[] = {',', '\t', ';', '|'};
    struct mt_csv_params p;
    struct mt_error err = {MT_OK, ""};
    struct mt_csv *c = NULL;
    enum mt_status st;
    volatile size_t sink = 0;
    int got = 1;

    if (size < 1)
        return 0;
    mtx_csv_default_params(&p);
    p.delim = delims[data[0] & 3];
    if (data[0] & 4) {
        p.max_record = 64;
        p.max_fields = 4;
    }
    st = mtx_csv_open_mem("fuzz.csv", (const char *)data + 1, size - 1, &p, &c,
                          &err);
    if (st != MT_OK)
        __builtin_trap(); /* opening memory cannot fail */
    while (st == MT_OK && got) {
        st = mtx_csv_next(c, &got, &err);
        if (st == MT_OK && got) {
            sink += touch_fields(c) + mtx_csv_line(c);
            sink += (size_t)mtx_csv_find(c, "id");
        }
    }
    mtx_csv_close(c);
    (void)sink;
    if (st != MT_OK && st != MT_EPARSE && st != MT_ELIMIT)
        __builtin_trap();
    if (st != MT_OK && strncmp(err.msg, "fuzz.csv:", 9) != 0)
        __builtin_trap(); /* every refusal names the file and line */
    return 0;
}
