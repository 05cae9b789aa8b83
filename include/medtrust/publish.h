/* medtrust corpus publishing: how a store's corpus and index reach other
 * nodes. `mt_publish` writes a complete, self-checking snapshot folder
 * (PUB/snap-NNNNNN: store.db, index/, SNAPSHOT) and then names it in
 * PUB/CURRENT, replaced atomically; a node serving PUB (copied there by
 * rsync, object storage or a shared mount, in any file order) follows
 * CURRENT to the snapshot it names once every file SNAPSHOT lists is
 * there at its size, and keeps serving the one before until then. */
#ifndef MEDTRUST_PUBLISH_H
#define MEDTRUST_PUBLISH_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_PUBLISH_CURRENT "CURRENT"   /* PUB/CURRENT: "snap-NNNNNN\n" */
#define MT_PUBLISH_SNAPSHOT "SNAPSHOT" /* PUB/snap-N/SNAPSHOT: JSON */
#define MT_PUBLISH_NAME_MAX 32

struct mt_publish_params {
    uint32_t keep; /* snapshots kept in PUB, the new one included: the
                      older ones are removed (default 2, at least 1; a
                      node still reading a removed one keeps its open
                      files) */
};

void mt_publish_default_params(struct mt_publish_params *p);

struct mt_publish_result {
    char name[MT_PUBLISH_NAME_MAX]; /* the new snapshot, "snap-000003" */
    uint64_t files;                 /* in it, SNAPSHOT not counted */
    uint64_t bytes;
    uint32_t linked;  /* index files hard-linked (same file system),
                         not copied: segments are immutable */
    uint32_t removed; /* older snapshots removed */
};

/* Publishes the corpus store and search index in 'db_dir' into folder
 * 'pub_dir' (created when missing): index files named by the MANIFEST,
 * store.db through mt_store_backup (no accounts or runs), a SNAPSHOT
 * listing every file and its size, written last; the folder is renamed
 * into place, then CURRENT is replaced. One publisher at a time per
 * 'pub_dir' (a lock; a second fails with MT_EIO saying so). 'p' may be NULL for
 * the defaults; 'res' may be NULL. On failure CURRENT is unchanged. */
enum mt_status mt_publish(const char *db_dir, const char *pub_dir,
                          const struct mt_publish_params *p,
                          struct mt_publish_result *res, struct mt_error *err);

/* The folder that holds the corpus of 'dir': 'dir' itself when it has no
 * CURRENT, else the complete snapshot CURRENT names, written into buf (n
 * bytes). MT_ENOTFOUND when that snapshot is missing or incomplete (a
 * copy still arriving), MT_EPARSE when CURRENT or SNAPSHOT is malformed;
 * 'err' names the file. buf is unchanged on failure. */
enum mt_status mt_publish_resolve(const char *dir, char *buf, size_t n,
                                  struct mt_error *err);

/* MT_EINVAL, with 'err' saying what to run instead, when 'dir' is a
 * publish folder (it has CURRENT) or a snapshot (it has SNAPSHOT): nodes
 * serve their corpus as mt_publish wrote it, and a store or index written
 * there would never be searched (CURRENT wins) or would break the
 * snapshot's file list. Writers of a corpus (import, index) call it
 * before they open the store. MT_OK otherwise. Thread-safe. */
enum mt_status mt_publish_refuse_writes(const char *dir, struct mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
