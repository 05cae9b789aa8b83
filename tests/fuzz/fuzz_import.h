/* Shared body of the importer harnesses (fuzz_import_*.c): the input is
 * one file of format FUZZ_FORMAT, imported through the public mt_import
 * into a JSONL output (and a queries file), as `medtrust import` does.
 * Any bytes are imported or refused with a message naming the file,
 * never a crash, a leak, a hang or a read past a buffer. A PubMed input
 * that starts with gzip's magic is named .xml.gz, so the gzip reader is
 * fuzzed too. Built by `make fuzz` (mk/fuzz.mk); seeds: the format
 * samples (tests/integration/test_fuzz.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "medtrust/corpus.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static const char *const meta_cols[] = {"year", "n64", "score", "f32", "flag"};

static void remove_dir(void)
{
    rmdir(dir);
}

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/mt-fuzz-import-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    atexit(remove_dir);
}

/* Writes the input to DIR/in.EXT; returns the path (static). */
static const char *write_input(const uint8_t *data, size_t size,
                               const char *ext)
{
    static char path[96];

    snprintf(path, sizeof path, "%s/in%s", dir, ext);
    fuzz_write_file(path, data, size);
    return path;
}

static const char *input_ext(const uint8_t *data, size_t size)
{
    if (strcmp(FUZZ_FORMAT, "pubmed") == 0 && size >= 2 && data[0] == 0x1f &&
        data[1] == 0x8b)
        return ".xml.gz";
    return FUZZ_EXT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mt_import_params p;
    struct mt_import_result res;
    struct mt_error err = {MT_OK, ""};
    char out[96], queries[96];
    const char *path;
    enum mt_status st;

    if (!dir[0])
        make_dir();
    path = write_input(data, size, input_ext(data, size));
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    snprintf(queries, sizeof queries, "%s/queries.jsonl", dir);
    mt_import_default_params(&p);
    p.jsonl_out = out;
    p.queries_out = queries;
    p.threads = 1;
    p.id_col = "id";
    p.text_col = "text";
    p.title_col = "title";
    p.meta_cols = meta_cols; /* parquet: numbers and booleans too */
    p.n_meta_cols = sizeof meta_cols / sizeof meta_cols[0];
    memset(&res, 0, sizeof res);
    st = mt_import(FUZZ_FORMAT, &path, 1, &p, &res, &err);
    if (st == MT_ENOMEM || st == MT_EINTERNAL ||
        (st != MT_OK && !strstr(err.msg, "/in."))) {
        /* every refusal names the file, and bad bytes are not a lack of
         * memory or a bug */
        fprintf(stderr, "refused with %s: %s\n", mt_status_str(st), err.msg);
        __builtin_trap();
    }
    unlink(out);
    unlink(queries);
    unlink(path);
    return 0;
}
