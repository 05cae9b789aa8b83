/* libFuzzer harness for the pmc importer; see fuzz_import.h. */
#define FUZZ_FORMAT "pmc"
#define FUZZ_EXT ".nxml"
#include "fuzz_import.h"
