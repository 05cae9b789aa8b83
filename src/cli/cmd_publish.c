/* medtrust publish: a store's corpus and search index as a snapshot that
 * other nodes pick up (include/medtrust/publish.h). */
#include <stdio.h>

#include <jansson.h>

#include "cli/cli.h"
#include "medtrust/core.h"
#include "medtrust/publish.h"

static const struct cli_opt publish_opts[] = {
    {"db", 'd', "DIR", "store to publish, with its search index (required)", 0},
    {"to", 't', "DIR",
     "publish folder, created if missing (required): DIR/snap-NNNNNN and "
     "DIR/CURRENT naming it",
     0},
    {"keep", 0, "N", "snapshots kept, the new one included, 1..1000 (2)", 0},
    {"json", 'j', NULL, "print the result as one JSON object", 0},
    {NULL, 0, NULL, NULL, 0},
};

static void print_result(const struct mt_publish_result *r, const char *to,
                         int json)
{
    json_t *o;

    if (!json) {
        printf("published %s/%s: %llu files, %.1f MB (%u index files "
               "linked), %u older snapshot%s removed\n",
               to, r->name, (unsigned long long)r->files,
               (double)r->bytes / 1e6, r->linked, r->removed,
               r->removed == 1 ? "" : "s");
        return;
    }
    o = json_pack("{s:s,s:s,s:I,s:I,s:i,s:i}", "folder", to, "snapshot",
                  r->name, "files", (json_int_t)r->files, "bytes",
                  (json_int_t)r->bytes, "linked", (int)r->linked, "removed",
                  (int)r->removed);
    json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(o);
}

static int publish_run(struct cli_args *a)
{
    struct mt_publish_params p;
    struct mt_publish_result r;
    struct mt_error err = {MT_OK, ""};
    unsigned long keep = 0;
    enum mt_status st;

    if (!cli_get(a, "db") || !cli_get(a, "to")) {
        fprintf(stderr, "medtrust publish: --db and --to are required\n");
        return 1;
    }
    mt_publish_default_params(&p);
    if (cli_get_uint(a, "keep", 1, 1000, &keep) != 0)
        return 1;
    if (keep)
        p.keep = (uint32_t)keep;
    st = mt_publish(cli_get(a, "db"), cli_get(a, "to"), &p, &r, &err);
    if (st != MT_OK)
        return cli_fail(&err, st);
    print_result(&r, cli_get(a, "to"), cli_get(a, "json") != NULL);
    return 0;
}

const struct cli_verb cli_verb_publish = {
    "publish",
    "publish a store and its index as a snapshot other nodes pick up",
    "--db DIR --to PUBDIR [--keep N] [--json]",
    "Writes PUBDIR/snap-NNNNNN (store.db copied through SQLite's backup "
    "API with no accounts or runs, the index's segment files, and "
    "SNAPSHOT listing every file and its size, written last), then "
    "replaces PUBDIR/CURRENT. Copy PUBDIR to each node in any order "
    "(rsync -a, object storage, a shared mount): 'medtrust serve --db "
    "PUBDIR' searches the snapshot CURRENT names, and switches to a new one "
    "without a restart once all its files have arrived. The store may be "
    "written and indexed while it is published.",
    publish_opts,
    publish_run,
};
