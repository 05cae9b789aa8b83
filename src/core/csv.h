/* RFC 4180 CSV reader: quoted fields with embedded newlines, doubled
 * quotes, CRLF or LF line ends, an optional UTF-8 BOM. A malformed file is
 * rejected with its name, line and column. Fields are slices into the
 * reader's record buffer, valid until the next mtx_csv_next() call. */
#ifndef MT_CORE_CSV_H
#define MT_CORE_CSV_H

#include <stddef.h>

#include "core/buf.h"
#include "medtrust/status.h"

struct mt_csv;

struct mt_csv_params {
    char delim;        /* field separator, default ',' */
    size_t max_record; /* bytes in one record, default 64 MiB */
    size_t max_fields; /* fields in one record, default 4096 */
};

void mtx_csv_default_params(struct mt_csv_params *p);

/* Opens 'path' for reading. 'params' may be NULL for defaults. On success
 * *out owns a reader (free with mtx_csv_close). */
enum mt_status mtx_csv_open(const char *path,
                            const struct mt_csv_params *params,
                            struct mt_csv **out, struct mt_error *err);

/* Reads from a memory buffer (borrowed; must outlive the reader). 'name'
 * is used in error messages. */
enum mt_status mtx_csv_open_mem(const char *name, const char *data, size_t n,
                                const struct mt_csv_params *params,
                                struct mt_csv **out, struct mt_error *err);

/* Reads the next record. Sets *got to 1 when a record was read, 0 at end of
 * input. On a malformed record returns MT_EPARSE with "FILE:LINE:COL: why"
 * in err. */
enum mt_status mtx_csv_next(struct mt_csv *c, int *got, struct mt_error *err);

/* Number of fields in the current record. */
size_t mtx_csv_nfields(const struct mt_csv *c);

/* Field i of the current record (empty slice when i is out of range). */
struct mt_str mtx_csv_field(const struct mt_csv *c, size_t i);

/* 1-based line number where the current record starts. */
size_t mtx_csv_line(const struct mt_csv *c);

/* Index of the column named 'name' in the current record (typically the
 * header, read with the first mtx_csv_next), or -1 when absent. */
long mtx_csv_find(const struct mt_csv *c, const char *name);

void mtx_csv_close(struct mt_csv *c);

/* Appends the field p[0..n) to b as RFC 4180 writes it: between double
 * quotes, each quote doubled, when it holds a comma, quote, CR or LF; as
 * it is otherwise. Returns MT_OK or the buffer's MT_ENOMEM. The one CSV
 * field writer (what this reader reads back). */
enum mt_status mtx_csv_put_field(struct mt_buf *b, const char *p, size_t n);

#endif
