/* Files for the harnesses whose reader takes a path (fuzz_eval.c,
 * fuzz_jsonl.c, fuzz_import.h): each input is written to a file, and the
 * temporary ones are removed when the fuzzer exits. Any failure to write
 * aborts: it is the machine's fault, never the reader's. */
#ifndef MT_FUZZ_FILE_H
#define MT_FUZZ_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_temp[96];

static inline void fuzz_temp_remove(void)
{
    unlink(fuzz_temp);
}

/* Writes the SIZE bytes of DATA to PATH, replacing what it held. */
static inline void fuzz_write_file(const char *path, const void *data,
                                   size_t size)
{
    FILE *f = fopen(path, "wb");
    size_t put;

    if (!f)
        abort();
    put = fwrite(data, 1, size, f);
    if (fclose(f) != 0 || put != size)
        abort();
}

/* Writes DATA to this process's temporary file, made on first use from
 * TEMPLATE ("/tmp/mt-fuzz-NAME-XXXXXX") and removed at exit; returns its
 * path. */
static inline const char *fuzz_write_temp(const char *tmpl, const void *data,
                                          size_t size)
{
    if (!fuzz_temp[0]) {
        int fd;
        snprintf(fuzz_temp, sizeof fuzz_temp, "%s", tmpl);
        fd = mkstemp(fuzz_temp);
        if (fd < 0)
            abort();
        close(fd);
        atexit(fuzz_temp_remove);
    }
    fuzz_write_file(fuzz_temp, data, size);
    return fuzz_temp;
}

#endif
