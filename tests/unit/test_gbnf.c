/* Unit tests for the JSON Schema -> GBNF converter (src/model/gbnf.c). */
#include "check.h"

#include "medtrust/core.h"
#include "model/gbnf.h"

static void test_gbnf_object_with_enum_and_types(void **state)
{
    char *g = NULL;
    struct mt_error err;
    (void)state;
    CHECK_OK(mtx_gbnf_from_schema(
        "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},"
        "\"label\":{\"enum\":[\"A\",\"B\\\"\"]},\"n\":{\"type\":\"integer\"},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
        "\"maxLength\":5}},\"x\":{\"type\":[\"number\",\"null\"]}}}",
        &g, &err));
    CHECK(strstr(g, "root ::= r") != NULL);
    CHECK(strstr(g, "\"\\\"A\\\"\" | \"\\\"B\\\\\\\"\\\"\"") != NULL);
    CHECK(strstr(g, "\"\\\"ok\\\"\" ws \":\" ws boolean") != NULL);
    CHECK(strstr(g, "char{0,5}") != NULL);
    CHECK(strstr(g, "number | null") != NULL);
    CHECK(strstr(g, "\"[\" ws (r") != NULL);
    mt_free(g);
}

static void test_gbnf_rejects_bad_schemas(void **state)
{
    char *g = NULL;
    struct mt_error err;
    (void)state;
    CHECK(mtx_gbnf_from_schema("{nope", &g, &err) == MT_EPARSE);
    CHECK(mtx_gbnf_from_schema("{\"type\":\"date\"}", &g, &err) ==
          MT_EUNSUPPORTED);
    CHECK(strstr(err.msg, "'date'") != NULL);
    CHECK(mtx_gbnf_from_schema("{\"enum\":[]}", &g, &err) == MT_EUNSUPPORTED);
    CHECK(g == NULL);
    CHECK_OK(mtx_gbnf_from_schema("{}", &g, &err)); /* any JSON value */
    CHECK(strstr(g, "root ::= value") != NULL);
    mt_free(g);
}

static void test_gbnf_survives_allocation_failures(void **state)
{
    const char *s = "{\"properties\":{\"a\":{\"type\":\"array\",\"items\":"
                    "{\"enum\":[1,2]}}}}";
    char *g;
    long n;
    (void)state;
    for (n = 0; n < 200; n++) {
        g = NULL;
        mt_alloc_fail_after(n);
        enum mt_status st = mtx_gbnf_from_schema(s, &g, NULL);
        mt_alloc_fail_reset();
        CHECK(st == MT_OK || st == MT_ENOMEM || st == MT_EPARSE);
        mt_free(g);
        if (st == MT_OK)
            break;
    }
    CHECK(n < 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gbnf_object_with_enum_and_types),
        cmocka_unit_test(test_gbnf_rejects_bad_schemas),
        cmocka_unit_test(test_gbnf_survives_allocation_failures),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
