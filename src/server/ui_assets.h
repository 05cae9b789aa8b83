/* The web UI's files, embedded at build time by tools/embed_ui.sh (rule in
 * mk/server.mk) into $(BUILD)/gen/ui_assets.c. */
#ifndef MT_SERVER_UI_ASSETS_H
#define MT_SERVER_UI_ASSETS_H

#include <stddef.h>

struct mt_ui_asset {
    const char *path; /* "/index.html": '/' and the name under ui/ */
    const char *type; /* Content-Type */
    const unsigned char *data;
    size_t len;
};

/* mtx_ui_asset_count entries, then one all-zero sentinel. */
extern const struct mt_ui_asset mtx_ui_assets[];
extern const size_t mtx_ui_asset_count;

#endif
