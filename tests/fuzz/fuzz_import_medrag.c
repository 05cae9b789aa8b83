/* libFuzzer harness for the medrag importer; see fuzz_import.h. */
#define FUZZ_FORMAT "medrag"
#define FUZZ_EXT ".jsonl"
#include "fuzz_import.h"
