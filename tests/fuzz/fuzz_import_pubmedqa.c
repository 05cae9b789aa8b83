/* libFuzzer harness for the pubmedqa importer; see fuzz_import.h. */
#define FUZZ_FORMAT "pubmedqa"
#define FUZZ_EXT ".json"
#include "fuzz_import.h"
