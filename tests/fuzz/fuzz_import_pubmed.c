/* libFuzzer harness for the pubmed importer; see fuzz_import.h. */
#define FUZZ_FORMAT "pubmed"
#define FUZZ_EXT ".xml"
#include "fuzz_import.h"
