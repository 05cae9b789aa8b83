/* libFuzzer harness for the medquad importer; see fuzz_import.h. */
#define FUZZ_FORMAT "medquad"
#define FUZZ_EXT ".xml"
#include "fuzz_import.h"
