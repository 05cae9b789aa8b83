/* Unit tests for the settings tables (include/medtrust/params.h): every
 * public table is sound (each descriptor names an option or a request
 * member, has help and a metavariable (a 0|1 flag has none), bounds in
 * order, a default within them or said in words, a server cap only below
 * the CLI's and only on a request member, and no two descriptors on one
 * member or one name). */
#include "check.h"

#include <string.h>

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
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
