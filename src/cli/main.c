/* medtrust command: dispatches on the verb table. */
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("medtrust %s\n", mt_version());
        return 0;
    }
    return 0;
}
