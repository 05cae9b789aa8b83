/* libFuzzer harness for the csv importer; see fuzz_import.h. */
#define FUZZ_FORMAT "csv"
#define FUZZ_EXT ".csv"
#include "fuzz_import.h"
