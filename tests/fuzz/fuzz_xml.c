/* libFuzzer harness for the importers' XML scanner (src/corpus/xml.c):
 * any bytes are read or refused with MT_EPARSE/MT_ELIMIT and a message,
 * never a crash, a leak or a read past the window, with text captured as
 * the importers capture it. Built by `make fuzz` (mk/fuzz.mk); run from
 * the repository root on a folder of XML seeds:
 *   build/fuzz/fuzzers/fuzz_xml -max_len=65536 CORPUS_DIR
 * tests/integration/test_fuzz.sh seeds it with the format samples. */
#include <stdint.h>
#include <string.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
    struct mt_buf text;
    size_t elements;
};

static enum mt_status fz_start(struct mt_xml *x, const char *name,
                               const char **attrs, void *user)
{
    struct fz *f = user;
    size_t i;

    for (i = 0; attrs[i]; i += 2)
        if (!attrs[i + 1] || !*attrs[i])
            return MT_EINTERNAL; /* a name without a value: a scanner bug */
    f->elements += *name != '\0';
    mtx_buf_reset(&f->text);
    mtx_xml_capture(x, &f->text);
    (void)mtx_xml_at(x, "a/b");
    return MT_OK;
}

static enum mt_status fz_end(struct mt_xml *x, const char *name, void *user)
{
    (void)user;
    (void)name;
    mtx_xml_capture(x, NULL);
    return MT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct mt_xml_fns fns = {fz_start, fz_end};
    struct fz f = {MT_BUF_INIT(1 << 20), 0};
    struct mt_error err = {MT_OK, ""};
    enum mt_status st;

    st =
        mtx_xml_parse_mem("fuzz.xml", (const char *)data, size, &fns, &f, &err);
    mtx_buf_free(&f.text);
    if (st != MT_OK && st != MT_EPARSE && st != MT_ELIMIT)
        __builtin_trap();
    if (st != MT_OK && strncmp(err.msg, "fuzz.xml:", 9) != 0)
        __builtin_trap(); /* every refusal names the file and line */
    return 0;
}
