/* Unit tests for the settings tables (include/medtrust/params.h): every
 * public table is sound (each descriptor names an option or a request
 * member, has help and a metavariable (a 0|1 flag has none), bounds in
 * order, a default within them or said in words, a server cap only below
 * the CLI's and only on a request member, and no two descriptors on one
 * member or one name). */
#include "check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "medtrust/check.h"
#include "medtrust/corpus.h"
#include "medtrust/index.h"
#include "medtrust/model.h"
#include "medtrust/params.h"
#include "medtrust/qa.h"
#include "medtrust/retrieve.h"
#include "medtrust/server.h"
#include "medtrust/store.h"
#include "medtrust/verify.h"
#include "tmpdir.h"

static void check_names_unique(const struct mt_param_table *t, size_t i)
{
    const struct mt_param *d = &t->params[i];
    size_t j;

    for (j = 0; j < i; j++) {
        const struct mt_param *e = &t->params[j];

        CHECK(e->offset != d->offset);
        CHECK(!d->option || !e->option || strcmp(d->option, e->option) != 0);
        CHECK(!d->field || !e->field || strcmp(d->field, e->field) != 0);
    }
}

/* The defaults pass mt_param_check, a def_text's value (0: "the
 * index's", "any") included: what an entry point refuses, nothing that
 * works with the defaults. */
static void check_defaults_pass(const struct mt_param_table *t)
{
    union {
        long double align;
        unsigned char b[4096];
    } p;

    CHECK(t->size <= sizeof p.b);
    t->defaults(p.b);
    CHECK_OK(mt_param_check(t, p.b, 0, NULL));
}

static void check_table(const struct mt_param_table *t)
{
    size_t i;

    CHECK(t->name && t->n > 0 && t->defaults && t->size > 0);
    for (i = 0; i < t->n; i++) {
        const struct mt_param *d = &t->params[i];
        double def = mt_param_default(t, d);

        CHECK(d->option || d->field);
        CHECK(d->help && d->lo <= d->hi);
        /* a flag (no metavariable) is an integer 0..1 */
        CHECK(d->arg || (mt_param_is_integer(d) && d->lo == 0 && d->hi == 1));
        CHECK(d->offset < t->size);
        CHECK(d->def_text || mt_param_valid(d, def, 0));
        /* --help shows at most 63 bytes of it (src/cli/opts.c) */
        CHECK(!d->def_text || strlen(d->def_text) < 64);
        CHECK(d->server_hi == 0 || (d->server_hi < d->hi && d->field));
        CHECK(!d->field || d->def_text || mt_param_valid(d, def, 1));
        CHECK(!d->option || mt_param_find(t, d->option, 0) == d);
        CHECK(!d->field || mt_param_find(t, d->field, 1) == d);
        check_names_unique(t, i);
    }
    check_defaults_pass(t);
}

static void test_agent_table(void **state)
{
    (void)state;
    check_table(&mt_agent_param_table);
    CHECK(mt_agent_param_table.size == sizeof(struct mt_agent_params));
}

static void test_qa_table(void **state)
{
    (void)state;
    check_table(&mt_qa_param_table);
    CHECK(mt_qa_param_table.size == sizeof(struct mt_qa_params));
}

/* The search table: its defaults are mt_search_default_params' and what
 * it writes lands in the member it names. */
static void test_search_table(void **state)
{
    const struct mt_param_table *t = &mt_search_param_table;
    struct mt_search_params p;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_search_params));
    mt_search_default_params(&p);
    CHECK(mt_param_default(t, mt_param_find(t, "k", 1)) == p.k);
    CHECK(mt_param_default(t, mt_param_find(t, "w_lex", 1)) == 0.7);
    mt_param_set(mt_param_find(t, "retrieve", 1), &p, 77);
    CHECK(p.retrieve_k == 77);
    mt_param_set(mt_param_find(t, "fusion-depth", 0), &p, 10);
    CHECK(p.fusion_depth == 10);
    CHECK(mt_param_max(mt_param_find(t, "k", 1), 1) <
          mt_param_max(mt_param_find(t, "k", 1), 0));
}

/* The verifier's table: its defaults are mt_verify_default_params'. */
static void test_verify_table(void **state)
{
    const struct mt_param_table *t = &mt_verify_param_table;
    struct mt_verify_params p;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_verify_params));
    mt_verify_default_params(NULL, &p);
    CHECK(mt_param_default(t, mt_param_find(t, "k", 1)) == p.k);
    CHECK(mt_param_default(t, mt_param_find(t, "max-text", 0)) ==
          (double)p.max_text_bytes);
    mt_param_set(mt_param_find(t, "support_min", 1), &p, 0.25);
    CHECK(p.support_min == 0.25f);
}

/* The model call's table: its defaults are mt_llm_default_params', and it
 * names no request member (the server's models are set at start). */
static void test_llm_table(void **state)
{
    const struct mt_param_table *t = &mt_llm_param_table;
    struct mt_llm_params p;
    size_t i;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_llm_params));
    for (i = 0; i < t->n; i++)
        CHECK(t->params[i].field == NULL && t->params[i].option);
    mt_llm_default_params(&p);
    CHECK(mt_param_default(t, mt_param_find(t, "retries", 0)) == p.max_retries);
    mt_param_set(mt_param_find(t, "timeout", 0), &p, 2.5);
    CHECK(p.timeout_s == 2.5);
}

/* The store's table: its defaults are mt_store_default_params'. */
static void test_store_table(void **state)
{
    const struct mt_param_table *t = &mt_store_param_table;
    struct mt_store_params p;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_store_params));
    mt_store_default_params(&p);
    CHECK(mt_param_default(t, mt_param_find(t, "chunk-size", 0)) ==
          p.chunk_size);
    mt_param_set(mt_param_find(t, "chunk-overlap", 0), &p, 7);
    CHECK(p.chunk_overlap == 7);
}

/* The server's table: its defaults are mt_server_default_params', it
 * names no request member (a server's settings are fixed at start), and
 * what it writes lands in the member it names. */
static void test_server_table(void **state)
{
    const struct mt_param_table *t = &mt_server_param_table;
    struct mt_server_params p;
    size_t i;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_server_params));
    for (i = 0; i < t->n; i++)
        CHECK(t->params[i].field == NULL && t->params[i].option);
    mt_server_default_params(&p);
    CHECK(mt_param_default(t, mt_param_find(t, "max-body", 0)) ==
          (double)p.max_body);
    CHECK(mt_param_default(t, mt_param_find(t, "grace", 0)) == 30);
    CHECK(mt_param_default(t, mt_param_find(t, "secure-cookies", 0)) == 0);
    mt_param_set(mt_param_find(t, "replay-max", 0), &p, 8192);
    CHECK(p.replay_max == 8192);
    mt_param_set(mt_param_find(t, "rate-limit", 0), &p, 0.5);
    CHECK(p.rate_per_s == 0.5);
    mt_param_set(mt_param_find(t, "test-routes", 0), &p, 1);
    CHECK(p.test_routes == 1 && p.secure_cookies == 0);
    CHECK(mt_param_find(t, "login-lock", 0)->lo == 1);
}

/* mt_server_start checks its settings against the table for every
 * caller (issue 33): the defaults pass; one member past its bounds is
 * refused naming it, its value and serve's bounds, before anything
 * starts (no store is opened: db_dir is NULL here). */
static void test_server_start_checks_table(void **state)
{
    const struct mt_param_table *t = &mt_server_param_table;
    struct mt_server_params p;
    struct mt_server *srv = (struct mt_server *)&p;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    mt_server_default_params(&p);
    CHECK_OK(mt_param_check(t, &p, 0, NULL));
    p.llm_jobs = 257; /* worker --serve-jobs --jobs took up to 512 */
    assert_int_equal(mt_server_start(&p, &srv, &err), MT_EINVAL);
    assert_ptr_equal(srv, (struct mt_server *)&p);
    assert_string_equal(err.msg,
                        "mt_server_params: llm-jobs is 257, not in 0..256");
    p.llm_jobs = 256;
    CHECK_OK(mt_param_check(t, &p, 0, NULL));
    p.max_body = 1023;
    assert_int_equal(mt_param_check(t, &p, 0, &err), MT_EINVAL);
    assert_string_equal(err.msg, "mt_server_params: max-body is 1023, not in "
                                 "1024..1073741824");
    p.max_body = (size_t)8 << 20;
    p.login_lock_s = 0.5;
    assert_int_equal(mt_param_check(t, &p, 0, &err), MT_EINVAL);
    assert_string_equal(err.msg,
                        "mt_server_params: login-lock is 0.5, not in 1..3600");
}

/* The importer's table: its defaults are mt_import_default_params' (the
 * threads' default, 0, is said in words), and it names no request
 * member. */
static void test_import_table(void **state)
{
    const struct mt_param_table *t = &mt_import_param_table;
    struct mt_import_params p;
    size_t i;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_import_params));
    for (i = 0; i < t->n; i++)
        CHECK(t->params[i].field == NULL && t->params[i].option);
    mt_import_default_params(&p);
    CHECK(mt_param_default(t, mt_param_find(t, "batch", 0)) == p.batch_size);
    CHECK(mt_param_find(t, "threads", 0)->def_text != NULL);
    mt_param_set(mt_param_find(t, "threads", 0), &p, 3);
    mt_param_set(mt_param_find(t, "follow-symlinks", 0), &p, 1);
    CHECK(p.threads == 3 && p.follow_symlinks == 1 && p.strict == 0);
}

/* The index run's table: its defaults are mt_index_run_default_params'
 * (the build's threads and the run's embed settings, 0, are said in
 * words), its members are nested ones, and it names no request member. */
static void test_index_run_table(void **state)
{
    const struct mt_param_table *t = &mt_index_run_param_table;
    struct mt_index_run_params p;
    size_t i;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_index_run_params));
    for (i = 0; i < t->n; i++)
        CHECK(t->params[i].field == NULL && t->params[i].option);
    mt_index_run_default_params(&p);
    CHECK(mt_param_default(t, mt_param_find(t, "batch", 0)) ==
          p.ingest.batch_size);
    CHECK(mt_param_default(t, mt_param_find(t, "hnsw-min", 0)) ==
          p.update.build.hnsw_min);
    CHECK(mt_param_default(t, mt_param_find(t, "max-segments", 0)) ==
          p.update.build.max_segments);
    CHECK(mt_param_find(t, "dims", 0)->def_text != NULL);
    mt_param_set(mt_param_find(t, "embed-batch", 0), &p, 8);
    mt_param_set(mt_param_find(t, "strict", 0), &p, 1);
    mt_param_set(mt_param_find(t, "rebuild", 0), &p, 1);
    CHECK(p.update.build.embed_batch == 8 && p.strict == 1 &&
          p.update.build.rebuild == 1 && p.ingest.skip_bad == 0);
}

/* The embedder's table: its defaults (native dims, all CPUs: 0) are
 * said in words, and it names no request member. */
static void test_embedder_table(void **state)
{
    const struct mt_param_table *t = &mt_embedder_param_table;
    struct mt_embedder_params p;

    (void)state;
    check_table(t);
    CHECK(t->size == sizeof(struct mt_embedder_params));
    mt_embedder_default_params(&p);
    CHECK(mt_param_default(t, mt_param_find(t, "dims", 0)) == p.dims);
    CHECK(mt_param_find(t, "dims", 0)->def_text != NULL);
    mt_param_set(mt_param_find(t, "threads", 0), &p, 5);
    CHECK(p.threads == 5 && p.dims == 0);
}

/* ==== Entry points check their tables ==== */

/* An entry point under test: runs with 'params' (its table's struct),
 * freeing what it opened. */
typedef enum mt_status (*entry_fn)(const void *params, struct mt_error *err);

/* v as the CLI writes it: an integer in full, else %g. */
static const char *shown(const struct mt_param *d, double v, char *buf,
                         size_t n)
{
    snprintf(buf, n, mt_param_is_integer(d) ? "%.0f" : "%g", v);
    return buf;
}

/* Runs 'run' with d set to v in a copy of 'base' and checks that it is
 * refused naming d, v and the CLI's bounds (and the default in words
 * where d has one). */
static void check_refused(const struct mt_param_table *t, entry_fn run,
                          const void *base, const struct mt_param *d, double v)
{
    union {
        long double align;
        unsigned char b[4096];
    } p;
    struct mt_error err = {MT_OK, ""};
    char want[512], a[40], lo[40], hi[40], def[40];

    memcpy(p.b, base, t->size);
    mt_param_set(d, p.b, v);
    CHECK(mt_param_get(d, p.b) == v); /* representable: the test is real */
    snprintf(want, sizeof want, "%s: %s is %s, not in %s..%s", t->name,
             d->option ? d->option : d->field, shown(d, v, a, sizeof a),
             shown(d, d->lo, lo, sizeof lo), shown(d, d->hi, hi, sizeof hi));
    if (d->def_text && !mt_param_valid(d, mt_param_default(t, d), 0))
        snprintf(
            want + strlen(want), sizeof want - strlen(want), " (or %s: %s)",
            shown(d, mt_param_default(t, d), def, sizeof def), d->def_text);
    assert_int_equal(run(p.b, &err), MT_EINVAL);
    assert_string_equal(err.msg, want);
}

/* Runs 'run' with d at v (within bounds) and checks that whatever else
 * stops it, its bounds do not. */
static void check_taken(const struct mt_param_table *t, entry_fn run,
                        const void *base, const struct mt_param *d, double v)
{
    union {
        long double align;
        unsigned char b[4096];
    } p;
    struct mt_error err = {MT_OK, ""};

    memcpy(p.b, base, t->size);
    mt_param_set(d, p.b, v);
    if (run(p.b, &err) != MT_OK)
        CHECK(strncmp(err.msg, t->name, strlen(t->name)) != 0);
}

/* The largest value of d's type, as a double. */
static double type_max(const struct mt_param *d)
{
    switch (d->type) {
    case MT_PARAM_U32:
        return 4294967295.0;
    case MT_PARAM_I32:
        return 2147483647.0;
    case MT_PARAM_U64:
    case MT_PARAM_SIZE:
        return 1e18;
    default:
        return 1e30;
    }
}

/* Every member of t one past each bound it has that its type can hold
 * (below lo, above the CLI's hi) is refused by 'run'; a value below lo
 * that is the default a def_text describes is taken, and so are lo and
 * hi themselves (with_taken: the entry point runs cheaply there). */
static void check_entry(const struct mt_param_table *t, entry_fn run,
                        const void *base, int with_taken)
{
    size_t i, refused = 0;

    for (i = 0; i < t->n; i++) {
        const struct mt_param *d = &t->params[i];
        double below = mt_param_is_integer(d) ? d->lo - 1 : d->lo - 0.5;
        double above = mt_param_is_integer(d) ? d->hi + 1 : d->hi + 0.5;
        int unsigned_type = d->type != MT_PARAM_I32 && mt_param_is_integer(d);

        if (!(unsigned_type && d->lo == 0) &&
            !(d->def_text && below == mt_param_default(t, d))) {
            check_refused(t, run, base, d, below);
            refused++;
        }
        if (above <= type_max(d)) {
            check_refused(t, run, base, d, above);
            refused++;
        }
        if (with_taken) {
            check_taken(t, run, base, d, d->lo);
            check_taken(t, run, base, d, d->hi);
        }
    }
    CHECK(refused >= t->n); /* every member has a bound to refuse */
}

static enum mt_status agent_run(const void *p, struct mt_error *err)
{
    struct mt_agent *a = NULL;
    enum mt_status st = mt_agent_open(p, &a, err);

    mt_agent_close(a);
    return st;
}

/* mt_agent_open refuses every setting out of the CLI's bounds (check's
 * options) before it opens anything, naming it, its value and the
 * bounds; the defaults, and lo and hi of each, pass them. */
static void test_agent_open_checks_table(void **state)
{
    struct mt_agent_params p;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    mt_agent_default_params(&p);
    p.strategy = MT_STRATEGY_SINGLE;
    p.llm_spec = "openai:http://127.0.0.1:9#none"; /* never called */
    check_entry(&mt_agent_param_table, agent_run, &p, 1);
    p.max_steps = 33;
    assert_int_equal(agent_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg, "mt_agent_params: steps is 33, not in 1..32");
    p.max_steps = 4;
    p.dims = 65537;
    assert_int_equal(agent_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg, "mt_agent_params: dims is 65537, not in "
                                 "1..65536 (or 0: the index's)");
}

static enum mt_status qa_run(const void *p, struct mt_error *err)
{
    struct mt_qa *q = NULL;
    enum mt_status st = mt_qa_open(p, &q, err);

    mt_qa_close(q);
    return st;
}

/* mt_qa_open refuses every setting out of ask's bounds, naming it. */
static void test_qa_open_checks_table(void **state)
{
    struct mt_qa_params p;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    mt_qa_default_params(&p);
    p.db_dir = "/nonexistent/medtrust-param-check"; /* never opened */
    check_entry(&mt_qa_param_table, qa_run, &p, 0);
    p.temperature = 2.5f;
    assert_int_equal(qa_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg,
                        "mt_qa_params: temperature is 2.5, not in 0..2");
}

static char run_dir[96];

static enum mt_status index_run_run(const void *p, struct mt_error *err)
{
    return mt_index_run(run_dir, NULL, 0, p, NULL, err);
}

static struct mt_store *run_store;

static enum mt_status index_run_store_run(const void *p, struct mt_error *err)
{
    return mt_index_run_store(run_store, NULL, 0, p, NULL, err);
}

/* mt_index_run refuses every setting out of index's bounds before the
 * store is touched (no folder is made), and so does mt_index_run_store
 * before it reads or builds anything. */
static void test_index_run_checks_table(void **state)
{
    const struct mt_param_table *t = &mt_index_run_param_table;
    struct mt_index_run_params p;
    struct mt_error err = {MT_OK, ""};
    char db[128];

    (void)state;
    CHECK(tmpdir_make("mt-param-check") == 0);
    snprintf(run_dir, sizeof run_dir, "%s/db", tmpl);
    mt_index_run_default_params(&p);
    check_entry(t, index_run_run, &p, 1);
    CHECK(access(run_dir, F_OK) != 0); /* never created */
    p.update.build.threads = 65;
    assert_int_equal(index_run_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg,
                        "mt_index_run_params: threads is 65, not in 0..64");
    p.update.build.threads = 0;
    snprintf(db, sizeof db, "%s/store", tmpl);
    CHECK_OK(mt_store_open(db, NULL, &run_store, NULL));
    check_entry(t, index_run_store_run, &p, 0);
    mt_store_close(run_store);
    run_store = NULL;
}

static enum mt_status llm_run(const void *p, struct mt_error *err)
{
    struct mt_llm *l = NULL;
    enum mt_status st =
        mt_llm_open("openai:http://127.0.0.1:9#none", p, &l, err);

    mt_llm_close(l);
    return st;
}

/* mt_llm_open refuses every setting out of the CLI's bounds (--timeout,
 * --retries, --ctx) before it opens the model. */
static void test_llm_open_checks_table(void **state)
{
    struct mt_llm_params p;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    mt_llm_default_params(&p);
    check_entry(&mt_llm_param_table, llm_run, &p, 1);
    p.timeout_s = 0;
    assert_int_equal(llm_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg,
                        "mt_llm_params: timeout is 0, not in 0.001..86400");
}

static enum mt_status embedder_run(const void *p, struct mt_error *err)
{
    struct mt_embedder *e = NULL;
    enum mt_status st =
        mt_embedder_open("openai:http://127.0.0.1:9#none", p, &e, err);

    mt_embedder_close(e);
    return st;
}

/* mt_embedder_open refuses every setting out of embed's bounds before it
 * opens the model (within them it would call the unreachable server). */
static void test_embedder_open_checks_table(void **state)
{
    struct mt_embedder_params p;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    mt_embedder_default_params(&p);
    check_entry(&mt_embedder_param_table, embedder_run, &p, 0);
    p.dims = 65537;
    assert_int_equal(embedder_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg, "mt_embedder_params: dims is 65537, not in "
                                 "1..65536 (or 0: native)");
}

static enum mt_status import_run(const void *p, struct mt_error *err)
{
    const char *paths[] = {"/nonexistent/medtrust-param-check.xml"};

    return mt_import("medquad", paths, 1, p, NULL, err);
}

/* mt_import refuses every setting out of import's bounds before it reads
 * anything. */
static void test_import_checks_table(void **state)
{
    struct mt_import_params p;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    mt_import_default_params(&p);
    check_entry(&mt_import_param_table, import_run, &p, 1);
    p.threads = 9;
    assert_int_equal(import_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg, "mt_import_params: threads is 9, not in 1..8 "
                                 "(or 0: the online CPUs, at most 8)");
}

static enum mt_status store_run(const void *p, struct mt_error *err)
{
    struct mt_store *s = NULL;
    enum mt_status st = mt_store_open(run_dir, p, &s, err);

    mt_store_close(s);
    return st;
}

/* mt_store_open refuses a chunker setting out of index's and import's
 * bounds before it touches the folder, even one an existing store would
 * not use. */
static void test_store_open_checks_table(void **state)
{
    struct mt_store_params p;
    struct mt_error err = {MT_OK, ""};

    (void)state;
    CHECK(tmpdir_make("mt-param-store") == 0);
    snprintf(run_dir, sizeof run_dir, "%s/db", tmpl);
    mt_store_default_params(&p);
    p.create = 0; /* within the bounds: "no store here", nothing made */
    check_entry(&mt_store_param_table, store_run, &p, 1);
    p.create = 1;
    p.chunk_size = 0;
    assert_int_equal(store_run(&p, &err), MT_EINVAL);
    assert_string_equal(err.msg,
                        "mt_store_params: chunk-size is 0, not in 1..1000000");
    CHECK(access(run_dir, F_OK) != 0); /* never created */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_table),
        cmocka_unit_test(test_qa_table),
        cmocka_unit_test(test_search_table),
        cmocka_unit_test(test_verify_table),
        cmocka_unit_test(test_llm_table),
        cmocka_unit_test(test_store_table),
        cmocka_unit_test(test_server_table),
        cmocka_unit_test(test_server_start_checks_table),
        cmocka_unit_test(test_import_table),
        cmocka_unit_test(test_embedder_table),
        cmocka_unit_test(test_index_run_table),
        cmocka_unit_test(test_agent_open_checks_table),
        cmocka_unit_test(test_qa_open_checks_table),
        cmocka_unit_test_teardown(test_index_run_checks_table, teardown),
        cmocka_unit_test(test_llm_open_checks_table),
        cmocka_unit_test(test_embedder_open_checks_table),
        cmocka_unit_test(test_import_checks_table),
        cmocka_unit_test_teardown(test_store_open_checks_table, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
