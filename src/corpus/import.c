/* mt_import: the format table, folder walking, per-file sources and the
 * run over every input file through one sink. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/jsonl.h"
#include "corpus/corpus_int.h"
#include "medtrust/core.h"

#define WALK_DEPTH_MAX 8

struct format {
    const char *name;
    mtx_import_fn run;
    const char *source; /* default source; NULL: from the file's name */
    const char *ext[3]; /* file name endings taken from a folder */
    int whole;          /* texts are chunks already */
};

static const struct format formats[] = {
    {"pubmed", mtx_import_pubmed, "pubmed", {".xml", ".xml.gz", NULL}, 0},
    {"pmc", mtx_import_pmc, "pmc", {".nxml", ".xml", NULL}, 0},
    {"medquad", mtx_import_medquad, "medquad", {".xml", NULL, NULL}, 0},
    {"pubmedqa", mtx_import_pubmedqa, "pubmedqa", {".json", NULL, NULL}, 0},
    {"medrag", mtx_import_medrag, NULL, {".jsonl", NULL, NULL}, 1},
    {"csv", mtx_import_csv, NULL, {".csv", NULL, NULL}, 0},
};

const char *const mt_import_formats[] = {"pubmed", "pmc", "medquad", "pubmedqa",
                                         "medrag", "csv", NULL};

void mt_import_default_params(struct mt_import_params *p)
{
    memset(p, 0, sizeof *p);
    p->batch_size = 1000;
}

/* ==== Input files ==== */

struct files {
    char **v;
    size_t n;
    size_t cap;
    uint64_t bytes;
};

static void files_free(struct files *f)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        mt_free(f->v[i]);
    mt_free(f->v);
}

static enum mt_status files_add(struct files *f, const char *path,
                                struct mt_error *err)
{
    struct stat sb;

    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        char **v = mt_realloc(f->v, cap * sizeof *v);

        if (!v)
            return mt_fail(err, MT_ENOMEM, "out of memory");
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n] = mt_strdup(path);
    if (!f->v[f->n])
        return mt_fail(err, MT_ENOMEM, "out of memory");
    f->n++;
    if (stat(path, &sb) == 0)
        f->bytes += (uint64_t)sb.st_size;
    return MT_OK;
}

static int ends_with(const char *s, const char *end)
{
    size_t n = strlen(s);
    size_t m = strlen(end);

    return n >= m && strcmp(s + n - m, end) == 0;
}

static int wanted(const struct format *fm, const char *name)
{
    size_t i;

    for (i = 0; i < 3 && fm->ext[i]; i++)
        if (ends_with(name, fm->ext[i]))
            return 1;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum mt_status walk(const struct format *fm, const char *dir, int depth,
                           struct files *f, struct mt_error *err);

static enum mt_status walk_entry(const struct format *fm, const char *dir,
                                 const char *name, int depth, struct files *f,
                                 struct mt_error *err)
{
    char path[4096];
    struct stat sb;

    if (name[0] == '.')
        return MT_OK;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return mt_fail(err, MT_ELIMIT, "%s/%s: path too long", dir, name);
    if (stat(path, &sb) != 0)
        return mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return walk(fm, path, depth + 1, f, err);
    return wanted(fm, name) ? files_add(f, path, err) : MT_OK;
}

/* Adds the format's files under 'dir', in name order within each folder. */
static enum mt_status walk(const struct format *fm, const char *dir, int depth,
                           struct files *f, struct mt_error *err)
{
    struct files names = {NULL, 0, 0, 0};
    struct dirent *e;
    DIR *d;
    enum mt_status st = MT_OK;
    size_t i;

    if (depth > WALK_DEPTH_MAX)
        return mt_fail(err, MT_ELIMIT, "%s: folders nested too deep", dir);
    d = opendir(dir);
    if (!d)
        return mt_fail(err, MT_EIO, "%s: %s", dir, strerror(errno));
    while (st == MT_OK && (e = readdir(d)) != NULL)
        st = files_add(&names, e->d_name, err);
    closedir(d);
    if (st == MT_OK && names.n)
        qsort(names.v, names.n, sizeof *names.v, by_name);
    for (i = 0; st == MT_OK && i < names.n; i++)
        st = walk_entry(fm, dir, names.v[i], depth, f, err);
    files_free(&names);
    return st;
}

static enum mt_status collect(const struct format *fm, const char *const *paths,
                              size_t n, struct files *f, struct mt_error *err)
{
    struct stat sb;
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < n; i++) {
        if (stat(paths[i], &sb) != 0)
            return mt_fail(err, MT_EIO, "%s: %s", paths[i], strerror(errno));
        if (S_ISDIR(sb.st_mode))
            st = walk(fm, paths[i], 0, f, err);
        else
            st = files_add(f, paths[i], err);
    }
    if (st == MT_OK && f->n == 0)
        st = mt_fail(err, MT_EINVAL, "no %s input files found", fm->name);
    return st;
}

/* ==== The run ==== */

/* The source of a file when the format has no fixed one: MedRAG keeps
 * each corpus in NAME/chunk/ as JSONL files, so NAME; otherwise the base name
 * without its extension. */
static void file_source(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    const char *chunk;
    char *dot;

    base = base ? base + 1 : path;
    chunk = strstr(path, "/chunk/");
    if (chunk && chunk + 7 == base) {
        const char *s = chunk;

        while (s > path && s[-1] != '/')
            s--;
        snprintf(out, n, "%.*s", (int)(chunk - s), s);
        if (*out)
            return;
    }
    snprintf(out, n, "%s", base);
    dot = strchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

/* The run's files with their sources (files are freed by the caller). */
static enum mt_status in_files(const struct format *fm, const struct files *f,
                               const struct mt_import_params *p,
                               struct mtx_in_file **out, struct mt_error *err)
{
    struct mtx_in_file *v = mt_calloc(f->n, sizeof *v);
    size_t i;

    if (!v)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (i = 0; i < f->n; i++) {
        v[i].path = f->v[i];
        if (p->source)
            snprintf(v[i].source, sizeof v[i].source, "%s", p->source);
        else if (fm->source)
            snprintf(v[i].source, sizeof v[i].source, "%s", fm->source);
        else
            file_source(f->v[i], v[i].source, sizeof v[i].source);
    }
    *out = v;
    return MT_OK;
}

static const struct format *find_format(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(formats[i].name, name) == 0)
            return &formats[i];
    return NULL;
}

enum mt_status mt_import(const char *format, const char *const *paths, size_t n,
                         const struct mt_import_params *params,
                         struct mt_import_result *res, struct mt_error *err)
{
    const struct format *fm = find_format(format ? format : "");
    struct mt_import_params p = *params;
    struct files f = {NULL, 0, 0, 0};
    struct mtx_in_file *in = NULL;
    struct mtx_out *out = NULL;
    struct mt_error local = {MT_OK, ""};
    enum mt_status st;

    /* The importers add context to messages (mt_error_prefix), which
     * needs an error to write to even when the caller wants none. */
    if (!err)
        err = &local;
    if (!fm)
        return mt_fail(err, MT_EINVAL,
                       "unknown format '%s' (pubmed, pmc, medquad, pubmedqa, "
                       "medrag, csv)",
                       format ? format : "");
    mtx_jsonl_init_alloc();
    p.no_chunk = p.no_chunk || fm->whole;
    st = collect(fm, paths, n, &f, err);
    if (st == MT_OK)
        st = in_files(fm, &f, &p, &in, err);
    if (st == MT_OK)
        st = mtx_out_open(&p, &out, err);
    if (st == MT_OK) {
        mtx_out_set_total(out, f.bytes);
        st = mtx_pipe_run(fm->run, in, f.n, &p, out, err);
    }
    if (out) {
        /* After a failure the first error stays in err. */
        struct mt_error after = {MT_OK, ""};
        enum mt_status closed =
            mtx_out_close(out, st == MT_OK, res, st == MT_OK ? err : &after);

        st = st == MT_OK ? closed : st;
    }
    mt_free(in);
    files_free(&f);
    return st;
}
