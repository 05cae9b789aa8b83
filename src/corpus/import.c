/* mt_import: the format table, folder walking, per-file sources and the
 * run over every input file through one sink. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The format table, once: NAME, reader, default source (NULL: from the
 * file's name), the file name endings taken from a folder, and whether
 * texts are chunks already. It yields formats[] and mt_import_formats[]. */
#define IMPORT_FORMATS(X)                                                      \
    X("pubmed", mtx_import_pubmed, "pubmed", ".xml", ".xml.gz", 0)             \
    X("pmc", mtx_import_pmc, "pmc", ".nxml", ".xml", 0)                        \
    X("medquad", mtx_import_medquad, "medquad", ".xml", NULL, 0)               \
    X("pubmedqa", mtx_import_pubmedqa, "pubmedqa", ".json", NULL, 0)           \
    X("medrag", mtx_import_medrag, NULL, ".jsonl", NULL, 1)                    \
    X("csv", mtx_import_csv, NULL, ".csv", NULL, 0)                            \
    X("parquet", mtx_import_parquet, NULL, ".parquet", NULL, 0)                \
    X("pdf", mtx_import_pdf, "pdf", ".pdf", ".PDF", 0)

#define FORMAT_ROW(name, run, source, ext1, ext2, whole)                       \
    {name, run, source, {ext1, ext2, NULL}, whole},
static const struct format formats[] = {IMPORT_FORMATS(FORMAT_ROW)};
#undef FORMAT_ROW

#define FORMAT_NAME(name, run, source, ext1, ext2, whole) name,
const char *const mt_import_formats[] = {IMPORT_FORMATS(FORMAT_NAME) NULL};
#undef FORMAT_NAME

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

/* A walk over the folders given: what it finds and what it skipped. */
struct walk {
    const struct format *fm;
    const struct mt_import_params *p;
    struct files *f;
    char root[PATH_MAX];           /* the real path of the folder given */
    dev_t dev[WALK_DEPTH_MAX + 2]; /* the folders open above, for loops */
    ino_t ino[WALK_DEPTH_MAX + 2];
    uint64_t bad_files;
    uint64_t links_skipped;
    struct mt_error first; /* the first input skipped for an error */
};

/* An input that cannot be read, met before any parsing (err says why):
 * named and counted, or under --strict the error. A link out of the
 * folder ('link') is skipped by rule, not for an error: never fatal. */
static enum mt_status skip(struct walk *w, int link, struct mt_error *err)
{
    enum mt_status st = err->status;

    if (!link && (w->p->strict || !mtx_input_error(st)))
        return st;
    if (!link && w->first.status == MT_OK)
        w->first = *err;
    if (link)
        w->links_skipped++;
    else
        w->bad_files++;
    if (w->p->on_skip)
        w->p->on_skip(err->msg, w->p->skip_user);
    err->status = MT_OK;
    err->msg[0] = '\0';
    return MT_OK;
}

static enum mt_status walk(struct walk *w, const char *dir, int depth,
                           struct mt_error *err);

/* Is the real path 'real' inside the folder given? */
static int inside(const struct walk *w, const char *real)
{
    size_t n = strlen(w->root);

    if (strcmp(w->root, "/") == 0)
        return 1;
    return strncmp(real, w->root, n) == 0 && (!real[n] || real[n] == '/');
}

/* A symbolic link at 'path': *follow is 1 when it stays in the folder (or
 * --follow-symlinks, as find -L), else it is skipped and named. */
static enum mt_status link_rule(struct walk *w, const char *path, int *follow,
                                struct mt_error *err)
{
    char real[PATH_MAX];

    *follow = 0;
    if (!realpath(path, real)) {
        mt_fail(err, MT_EIO, "%s: a symbolic link that leads nowhere: %s", path,
                strerror(errno));
        return skip(w, 0, err);
    }
    if (w->p->follow_symlinks || inside(w, real)) {
        *follow = 1;
        return MT_OK;
    }
    mt_fail(err, MT_EINVAL,
            "%s: a symbolic link to %s, outside %s: not followed "
            "(--follow-symlinks follows it)",
            path, real, w->root);
    return skip(w, 1, err);
}

/* Has folder sb been entered above (a loop of links)? Records it at
 * 'depth' when not. */
static int seen(struct walk *w, const struct stat *sb, int depth)
{
    int i;

    for (i = 0; i < depth; i++)
        if (w->dev[i] == sb->st_dev && w->ino[i] == sb->st_ino)
            return 1;
    w->dev[depth] = sb->st_dev;
    w->ino[depth] = sb->st_ino;
    return 0;
}

static enum mt_status walk_entry(struct walk *w, const char *dir,
                                 const char *name, int depth,
                                 struct mt_error *err)
{
    char path[4096];
    struct stat sb;
    int follow = 1;
    enum mt_status st;

    if (name[0] == '.')
        return MT_OK;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >=
        sizeof path) {
        mt_fail(err, MT_ELIMIT, "%s/%s: path too long", dir, name);
        return skip(w, 0, err);
    }
    if (lstat(path, &sb) != 0) {
        mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
        return skip(w, 0, err);
    }
    st = S_ISLNK(sb.st_mode) ? link_rule(w, path, &follow, err) : MT_OK;
    if (st != MT_OK || !follow)
        return st;
    if (stat(path, &sb) != 0) {
        mt_fail(err, MT_EIO, "%s: %s", path, strerror(errno));
        return skip(w, 0, err);
    }
    if (S_ISDIR(sb.st_mode) && depth + 1 <= WALK_DEPTH_MAX &&
        seen(w, &sb, depth + 1)) {
        mt_fail(err, MT_EPARSE, "%s: a loop of symbolic links", path);
        return skip(w, 0, err);
    }
    if (S_ISDIR(sb.st_mode))
        return walk(w, path, depth + 1, err);
    return wanted(w->fm, name) ? files_add(w->f, path, err) : MT_OK;
}

/* Adds the format's files under 'dir', in name order within each folder. */
static enum mt_status walk(struct walk *w, const char *dir, int depth,
                           struct mt_error *err)
{
    struct files names = {NULL, 0, 0, 0};
    struct dirent *e;
    DIR *d;
    enum mt_status st = MT_OK;
    size_t i;

    if (depth > WALK_DEPTH_MAX) {
        mt_fail(err, MT_ELIMIT, "%s: folders nested too deep (more than %d)",
                dir, WALK_DEPTH_MAX);
        return skip(w, 0, err);
    }
    d = opendir(dir);
    if (!d) {
        mt_fail(err, MT_EIO, "%s: %s", dir, strerror(errno));
        return skip(w, 0, err);
    }
    while (st == MT_OK && (e = readdir(d)) != NULL)
        st = files_add(&names, e->d_name, err);
    closedir(d);
    if (st == MT_OK && names.n)
        qsort(names.v, names.n, sizeof *names.v, by_name);
    for (i = 0; st == MT_OK && i < names.n; i++)
        st = walk_entry(w, dir, names.v[i], depth, err);
    files_free(&names);
    return st;
}

/* A folder given: walked with links kept inside it. */
static enum mt_status walk_top(struct walk *w, const char *dir,
                               const struct stat *sb, struct mt_error *err)
{
    if (!realpath(dir, w->root))
        snprintf(w->root, sizeof w->root, "%s", dir);
    seen(w, sb, 0);
    return walk(w, dir, 0, err);
}

/* No input could be read at all: the import's error is the first
 * input's (so it names its file), with how many more there were. */
static enum mt_status nothing_read(const struct mt_error *first,
                                   uint64_t skipped, struct mt_error *err)
{
    char more[96] = "";

    if (skipped > 1)
        snprintf(more, sizeof more, " (and %llu more inputs skipped)",
                 (unsigned long long)(skipped - 1));
    return mt_fail(err, first->status, "nothing could be read: %s%s",
                   first->msg, more);
}

static enum mt_status collect(struct walk *w, const char *const *paths,
                              size_t n, struct mt_error *err)
{
    struct stat sb;
    enum mt_status st = MT_OK;
    size_t i;

    for (i = 0; st == MT_OK && i < n; i++) {
        if (stat(paths[i], &sb) != 0) {
            mt_fail(err, MT_EIO, "%s: %s", paths[i], strerror(errno));
            st = skip(w, 0, err);
        } else if (S_ISDIR(sb.st_mode)) {
            st = walk_top(w, paths[i], &sb, err);
        } else {
            st = files_add(w->f, paths[i], err);
        }
    }
    if (st == MT_OK && w->f->n == 0 && w->bad_files)
        st = nothing_read(&w->first, w->bad_files, err);
    else if (st == MT_OK && w->f->n == 0)
        st = mt_fail(err, MT_EINVAL, "no %s input files found", w->fm->name);
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

/* Ends the run: commits and renames the outputs when it went well and
 * something could be read (a run whose every file was skipped fails, and
 * leaves no output), with the walk's skips added to the counts. */
static enum mt_status finish(struct mtx_out *out, enum mt_status st,
                             const struct walk *w, struct mt_import_result *res,
                             struct mt_error *err)
{
    const struct mt_import_result *r = mtx_out_result(out);
    struct mt_error after = {MT_OK, ""};
    enum mt_status closed;

    if (st == MT_OK && r->bad_files && !r->files && !r->resumed && !r->records)
        st = nothing_read(w->first.status != MT_OK ? &w->first
                                                   : mtx_out_first(out),
                          r->bad_files + w->bad_files, err);
    /* After a failure the first error stays in err. */
    closed = mtx_out_close(out, st == MT_OK, res, st == MT_OK ? err : &after);
    if (res) {
        res->bad_files += w->bad_files;
        res->links_skipped += w->links_skipped;
    }
    return st == MT_OK ? closed : st;
}

enum mt_status mt_import(const char *format, const char *const *paths, size_t n,
                         const struct mt_import_params *params,
                         struct mt_import_result *res, struct mt_error *err)
{
    const struct format *fm = find_format(format ? format : "");
    struct mt_import_params p = *params;
    struct files f = {NULL, 0, 0, 0};
    struct walk w;
    struct mtx_in_file *in = NULL;
    struct mtx_out *out = NULL;
    struct mt_error local = {MT_OK, ""};
    enum mt_status st;

    /* The importers add context to messages (mt_error_prefix), which
     * needs an error to write to even when the caller wants none. */
    if (!err)
        err = &local;
    /* the CLI's bounds for every caller (a library's, Python's) */
    st = mt_param_check(&mt_import_param_table, params, 0, err);
    if (st != MT_OK)
        return st;
    if (!fm)
        return mt_fail(err, MT_EINVAL,
                       "unknown format '%s' (pubmed, pmc, medquad, pubmedqa, "
                       "medrag, csv, parquet, pdf)",
                       format ? format : "");
    mtx_jsonl_init_alloc();
    p.no_chunk = p.no_chunk || fm->whole;
    memset(&w, 0, sizeof w);
    w.fm = fm;
    w.p = &p;
    w.f = &f;
    st = collect(&w, paths, n, err);
    if (st == MT_OK)
        st = in_files(fm, &f, &p, &in, err);
    if (st == MT_OK)
        st = mtx_out_open(&p, &out, err);
    if (st == MT_OK) {
        mtx_out_set_total(out, f.bytes);
        st = mtx_pipe_run(fm->run, in, f.n, &p, out, err);
    }
    if (out)
        st = finish(out, st, &w, res, err);
    mt_free(in);
    files_free(&f);
    return st;
}
