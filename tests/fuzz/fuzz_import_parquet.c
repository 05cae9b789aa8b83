/* libFuzzer harness for the parquet importer (the Thrift footer, pages,
 * levels, dictionaries and codecs of parquet.c); see fuzz_import.h. Seeds:
 * tests/fuzz/import_parquet_seeds, small files written by
 * tests/fixtures/make_parquet.mjs (hyparquet-writer and parquet-wasm). */
#define FUZZ_FORMAT "parquet"
#define FUZZ_EXT ".parquet"
#include "fuzz_import.h"
