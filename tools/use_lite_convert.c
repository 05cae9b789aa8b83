/* use_lite_convert: writes medtrust's use-lite weight file from the npm
 * package's TF.js files. Run by the build (mk/use_lite.mk):
 *   use_lite_convert [--int8] third_party/use-lite/dist OUT.mtw */
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "use_lite_conv.h"

int main(int argc, char **argv)
{
    struct mt_error err;
    int int8 = argc > 1 && strcmp(argv[1], "--int8") == 0;
    enum mt_status st;

    if (argc != 3 + int8) {
        fprintf(stderr, "usage: %s [--int8] MODEL_DIR OUT.mtw\n", argv[0]);
        return 1;
    }
    mt_error_clear(&err);
    st = mt_ul_convert(argv[1 + int8], argv[2 + int8], int8, &err);
    if (st != MT_OK) {
        fprintf(stderr, "use_lite_convert: %s\n", err.msg);
        return mt_status_exit_code(st);
    }
    return 0;
}
