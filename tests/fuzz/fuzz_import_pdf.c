/* libFuzzer harness for the pdf importer at the file level: any bytes as
 * a .pdf through Poppler and pdf.c (lines, reading order, edges, title);
 * see fuzz_import.h. Poppler itself is not instrumented, so coverage
 * guides the mutations through our code only; libFuzzer's -timeout bounds
 * each file. Seeds: the PDFs tests/fixtures/make_pdf draws
 * (tests/integration/test_fuzz.sh). */
#define FUZZ_FORMAT "pdf"
#define FUZZ_EXT ".pdf"
#include "fuzz_import.h"
