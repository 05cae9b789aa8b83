/* medtrust import: corpora in the formats users have them (PubMed XML,
 * PMC JATS, MedQuAD, PubMedQA, MedRAG chunks, CSV, Parquet, PDF) into a store
 * or into corpus JSONL. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "core/progress.h"
#include "medtrust/corpus.h"
#include "medtrust/index.h"
#include "medtrust/publish.h"
#include "medtrust/store.h"

static const struct cli_opt import_opts[] = {
    {"db", 'd', "DIR", "store directory, created if missing", 0},
    {"jsonl", 'o', "FILE",
     "write corpus JSONL ({\"id\",\"title\",\"text\",...metadata}) instead "
     "of a store; the file appears only when the import succeeds",
     0},
    {"queries", 'q', "FILE",
     "medquad, pubmedqa: also write the questions, {\"id\",\"query\","
     "\"relevant\":[doc id],...} a line",
     0},
    {"source", 's', "NAME",
     "source name (default: the format's name; medrag: the corpus folder "
     "above chunk/; csv, parquet: the file's base name)",
     0},
    CLI_PARAM("no-chunk", &mt_import_param_table),
    {"id-col", 0, "NAME",
     "csv, parquet: the column holding the id (required; parquet: strings "
     "or integers)",
     0},
    {"text-col", 0, "NAME",
     "csv, parquet: the column holding the text (required)", 0},
    {"title-col", 0, "NAME", "csv, parquet: the column holding the title", 0},
    {"meta-col", 0, "NAME",
     "parquet: a column copied into each document's metadata under its "
     "name (strings, integers, floats, booleans; nulls left out); may be "
     "given more than once",
     1},
    {"source-col", 0, "NAME",
     "parquet: a column naming each row's source (as --source names one "
     "for a file; a null or empty value: the file's source), for datasets "
     "that mix sources, such as the guidelines'",
     0},
    {"exclude-source", 0, "NAME",
     "parquet with --source-col: leave out the rows of source NAME "
     "(counted as skipped); may be given more than once",
     1},
    CLI_PARAM_KEY("batch", 'b', &mt_import_param_table),
    CLI_PARAM_KEY("threads", 't', &mt_import_param_table),
    {"analyzer", 'a', "NAME",
     "analyzer for a new store: english, arabic, cjk, simple (default "
     "english)",
     0},
    CLI_PARAM("chunk-size", &mt_store_param_table),
    CLI_PARAM("chunk-overlap", &mt_store_param_table),
    CLI_PARAM("strict", &mt_import_param_table),
    CLI_PARAM("follow-symlinks", &mt_import_param_table),
    {"no-index", 0, NULL,
     "--db: do not bring the search index up to date at the end (for a "
     "bulk load in many steps; let the last step index, or run 'medtrust "
     "index --db DIR')",
     0},
    {"embedder", 'e', "SPEC",
     "--db: the embedder of the search index update, as 'medtrust index "
     "--embedder' (default: the index's own; for a new index "
     "$MEDTRUST_EMBEDDER, else use-lite)",
     0},
    {"json", 'j', NULL, "print the result as one JSON object", 0},
    {"no-progress", 0, NULL, "do not show a progress bar", 0},
    {NULL, 0, NULL, NULL, 0},
};

#define SKIPS_LISTED 1000 /* skipped inputs named in --json */

/* What the import skipped, for --json (the CLI is single-threaded; the
 * library calls on_skip on this thread). */
static json_t *o_skips;
static uint64_t o_skips_more;

/* Each skipped file, record or link: a warning now, a line of --json. */
static void on_skip(const char *what, void *user)
{
    (void)user;
    fprintf(stderr, "medtrust: warning: %s (skipped)\n", what);
    if (o_skips && json_array_size(o_skips) < SKIPS_LISTED)
        json_array_append_new(o_skips, json_string(what));
    else
        o_skips_more++;
}

static void on_progress(uint64_t done, uint64_t total, void *user)
{
    mtx_progress_set_total(user, total / 1024);
    mtx_progress_update(user, done / 1024);
}

static int read_opts(struct cli_args *a, struct mt_import_params *p)
{
    mt_import_default_params(p);
    if (cli_params_read(a, &mt_import_param_table, p) < 0)
        return -1;
    p->jsonl_out = cli_get(a, "jsonl");
    p->queries_out = cli_get(a, "queries");
    p->source = cli_get(a, "source");
    p->id_col = cli_get(a, "id-col");
    p->text_col = cli_get(a, "text-col");
    p->title_col = cli_get(a, "title-col");
    p->meta_cols = cli_get_all(a, "meta-col", &p->n_meta_cols);
    p->source_col = cli_get(a, "source-col");
    p->exclude_sources =
        cli_get_all(a, "exclude-source", &p->n_exclude_sources);
    p->on_skip = on_skip;
    if (!cli_get(a, "db") == !p->jsonl_out) {
        fprintf(stderr, "medtrust import: give exactly one of --db DIR and "
                        "--jsonl FILE\nTry 'medtrust import --help'.\n");
        return -1;
    }
    if (a->npos < 2) {
        fprintf(stderr, "medtrust import: give a FORMAT and at least one "
                        "FILE or folder\nTry 'medtrust import --help'.\n");
        return -1;
    }
    return 0;
}

static uint64_t skipped_any(const struct mt_import_result *r)
{
    return r->bad_files + r->bad_records + r->links_skipped;
}

/* The search index update of an import into a store: NULL when there was
 * none (--jsonl, --no-index). */
struct index_done {
    int ran;
    struct mt_index_build_result br;
};

static void print_json(const char *format, const struct mt_import_result *r,
                       double rate, const struct index_done *ix)
{
    json_t *o = json_pack(
        "{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "format", format,
        "files", (json_int_t)r->files, "resumed", (json_int_t)r->resumed,
        "records", (json_int_t)r->records, "documents",
        (json_int_t)r->documents, "unchanged", (json_int_t)r->unchanged,
        "chunks", (json_int_t)r->chunks, "skipped", (json_int_t)r->skipped,
        "deleted", (json_int_t)r->deleted, "delete_missing",
        (json_int_t)r->delete_missing, "queries", (json_int_t)r->queries,
        "records_per_s", rate);

    if (!o)
        return;
    json_object_set_new(o, "bad_files", json_integer((json_int_t)r->bad_files));
    json_object_set_new(o, "bad_records",
                        json_integer((json_int_t)r->bad_records));
    json_object_set_new(o, "links_skipped",
                        json_integer((json_int_t)r->links_skipped));
    json_object_set_new(o, "skips",
                        o_skips ? json_incref(o_skips) : json_array());
    json_object_set_new(o, "skips_not_listed",
                        json_integer((json_int_t)o_skips_more));
    json_object_set_new(o, "index",
                        ix && ix->ran
                            ? json_pack("{s:I,s:I,s:b}", "chunks_added",
                                        (json_int_t)ix->br.chunks_added,
                                        "segments", (json_int_t)ix->br.segments,
                                        "rebuilt", ix->br.merged)
                            : json_null());
    json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(o);
}

static void print_result(const char *format, const struct mt_import_result *r,
                         double secs)
{
    double rate = secs > 0 ? (double)r->records / secs : 0.0;

    printf("%s: %llu files, %llu records: %llu documents written, %llu "
           "chunks, %llu unchanged, %llu skipped without text, %llu deleted "
           "(%llu not found); %llu queries; %.0f records/s\n",
           format, (unsigned long long)r->files, (unsigned long long)r->records,
           (unsigned long long)r->documents, (unsigned long long)r->chunks,
           (unsigned long long)r->unchanged, (unsigned long long)r->skipped,
           (unsigned long long)r->deleted,
           (unsigned long long)r->delete_missing,
           (unsigned long long)r->queries, rate);
    if (r->resumed)
        printf("%llu files were already imported whole and were skipped\n",
               (unsigned long long)r->resumed);
    if (skipped_any(r))
        printf("could not be read and skipped: %llu files, %llu records; "
               "%llu symbolic links out of a folder not followed (each is "
               "named above; what was read is written; exit status 1)\n",
               (unsigned long long)r->bad_files,
               (unsigned long long)r->bad_records,
               (unsigned long long)r->links_skipped);
}

static enum mt_status run_import(struct cli_args *a, struct mt_import_params *p,
                                 struct mt_import_result *r, double *secs,
                                 struct mt_error *err)
{
    struct mt_progress_params pp = mtx_progress_default_params();
    struct mt_progress *bar = NULL;
    double t0;
    enum mt_status st;

    pp.label = "import (KiB read)";
    pp.quiet = cli_get(a, "no-progress") != NULL;
    st = mtx_progress_new(&pp, &bar);
    if (st != MT_OK)
        return mt_fail(err, st, "out of memory");
    p->progress = on_progress;
    p->progress_user = bar;
    t0 = mtx_clock_now();
    st = mt_import(a->pos[0], (const char *const *)(a->pos + 1),
                   (size_t)(a->npos - 1), p, r, err);
    *secs = mtx_clock_now() - t0;
    if (st == MT_OK)
        mtx_progress_finish(bar);
    mtx_progress_free(bar);
    return st;
}

/* After an import into a store: the search index brought up to date,
 * unless --no-index. */
static enum mt_status update_index(struct cli_args *a, struct mt_store *s,
                                   struct index_done *ix, struct mt_error *err)
{
    int json = cli_get(a, "json") != NULL;

    if (!s)
        return MT_OK;
    if (cli_get(a, "no-index")) {
        if (!json)
            printf("search index not updated (--no-index): the last step "
                   "of the load indexes, or run 'medtrust index --db %s'\n",
                   cli_get(a, "db"));
        return MT_OK;
    }
    ix->ran = 1;
    if (cli_index_update(s, cli_get(a, "embedder"),
                         cli_get(a, "no-progress") != NULL, json, &ix->br,
                         err) == MT_OK)
        return MT_OK;
    return mt_error_prefix(err,
                           "the import is committed, but the search index "
                           "was not updated (fix this, then run 'medtrust "
                           "index --db %s')",
                           cli_get(a, "db"));
}

static int import_run(struct cli_args *a)
{
    struct mt_import_params p;
    struct mt_store_params sp;
    struct mt_import_result r;
    struct mt_error err = {MT_OK, ""};
    struct mt_store *s = NULL;
    struct index_done ix;
    double secs = 0;
    int json = cli_get(a, "json") != NULL;
    enum mt_status st = MT_OK;

    if (read_opts(a, &p) < 0 || cli_store_params_read(a, &sp) < 0)
        return 1;
    memset(&r, 0, sizeof r);
    memset(&ix, 0, sizeof ix);
    o_skips = json_array();
    if (cli_get(a, "db"))
        st = mt_publish_refuse_writes(cli_get(a, "db"), &err);
    if (st == MT_OK && cli_get(a, "db"))
        st = mt_store_open(cli_get(a, "db"), &sp, &s, &err);
    p.store = s;
    if (st == MT_OK)
        st = run_import(a, &p, &r, &secs, &err);
    if (st == MT_OK && !json)
        print_result(a->pos[0], &r, secs);
    if (st == MT_OK)
        st = update_index(a, s, &ix, &err);
    if (st == MT_OK && json)
        print_json(a->pos[0], &r, secs > 0 ? (double)r.records / secs : 0.0,
                   &ix);
    mt_store_close(s);
    json_decref(o_skips);
    o_skips = NULL;
    if (st != MT_OK)
        return cli_fail(&err, st);
    return skipped_any(&r) ? 1 : 0;
}

const struct cli_verb cli_verb_import = {
    "import",
    "import PubMed, PMC, MedQuAD, PubMedQA, MedRAG, CSV, Parquet or PDF "
    "corpora",
    "FORMAT (--db DIR | --jsonl FILE) [OPTIONS] FILE|FOLDER...",
    "FORMAT is one of:\n"
    "  pubmed    NLM baseline/update files (*.xml, *.xml.gz): id = PMID,\n"
    "            text = the abstract (labelled sections as 'LABEL: text'),\n"
    "            metadata year, journal, authors, mesh, publication_types,\n"
    "            doi. Records without an abstract are skipped and counted;\n"
    "            DeleteCitation deletes; a later record of a PMID replaces\n"
    "            the earlier, so give update files in their order.\n"
    "  pmc       PMC OA JATS (*.nxml, or a folder): full text by section,\n"
    "            metadata journal, year, pmid, pmcid, doi, license.\n"
    "  medquad   the MedQuAD repository folder: one document per answered\n"
    "            question (id mq-<SHA-1 prefix of the answer, white space\n"
    "            folded>, as in the prepared corpus), metadata\n"
    "            source, url, focus, qtype; --queries writes the questions.\n"
    "            <Document>, NINDS's <doc> and <DiseaseFile> roots.\n"
    "  pubmedqa  ori_pqal.json and same-shape sets: one document per PMID\n"
    "            (contexts as 'LABEL: text'), metadata year, mesh, label;\n"
    "            --queries writes the questions.\n"
    "  medrag    MedRAG chunk JSONL {id,title,content,contents}: one chunk\n"
    "            per line, as is.\n"
    "  csv       any CSV with a header: --id-col, --text-col [--title-col];\n"
    "            other columns become metadata.\n"
    "  parquet   Parquet tables (Hugging Face datasets, pandas/pyarrow;\n"
    "            *.parquet, or a folder): --id-col, --text-col\n"
    "            [--title-col] [--meta-col ...] name flat columns; one\n"
    "            document a row, read a row group at a time; --no-chunk for\n"
    "            pre-chunked datasets (MedWiki); --source-col for mixed\n"
    "            sources. Pages v1 and v2, PLAIN, dictionary, DELTA_* and\n"
    "            BYTE_STREAM_SPLIT values, SNAPPY, GZIP, ZSTD or none;\n"
    "            nested columns are refused by name.\n"
    "  pdf       born-digital PDFs (*.pdf, or a folder) through Poppler:\n"
    "            one document a page (id FILE#pN, metadata page, pages,\n"
    "            file), in reading order (columns left to right), words\n"
    "            hyphenated at line ends joined, headers and footers\n"
    "            repeated on most pages dropped; title from the document\n"
    "            info, else the first large line. A PDF without text (a\n"
    "            scan) is skipped and named: no OCR.\n"
    "Inputs stream (memory does not grow with their size); .gz is read\n"
    "for the XML and JSON formats. Files are parsed in parallel and written\n"
    "in the order given, one after another. A store is written in "
    "transactional\n"
    "batches; each file read whole is recorded, so a rerun after a crash\n"
    "skips those files and resumes with the first unfinished one.\n"
    "A file or record that cannot be read (malformed, a truncated .gz,\n"
    "refused as hostile, unreadable) is skipped with a warning naming\n"
    "FILE:LINE and why, and counted; the rest is imported, what a file\n"
    "held before its error included (the file is read again by a rerun).\n"
    "Exit status 1 when anything was skipped, 0 when nothing was; when\n"
    "nothing at all could be read, or under --strict at the first such\n"
    "error, the import fails: the batch in flight is rolled back and no\n"
    "--jsonl or --queries file appears. Folders are walked without\n"
    "following symbolic links out of them (--follow-symlinks). With --db\n"
    "the search index is brought up to date at the end, as 'medtrust\n"
    "index --db DIR' does (--no-index leaves it).",
    import_opts,
    import_run,
};
