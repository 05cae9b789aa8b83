/* Unit tests for src/text/sentence: the clinical sentence splitter (also
 * against gold MEDEC sentences) and the MEDEC `Sentences` field parser on
 * every MEDEC and MedErrBench file. */
#include "check.h"

#include "core/csv.h"
#include "medtrust/core.h"
#include "text/sentence.h"

/* Splits 'text' and joins the sentences with " | ". */
static void split_join(const char *text, char *buf, size_t cap)
{
    struct mt_span *s = NULL;
    size_t n = 0;
    size_t i;
    size_t used = 0;

    CHECK_OK(mtx_sentences_split(text, strlen(text), &s, &n, NULL));
    buf[0] = '\0';
    for (i = 0; i < n; i++)
        used +=
            (size_t)snprintf(buf + used, cap - used, "%s%.*s", i ? " | " : "",
                             (int)(s[i].end - s[i].start), text + s[i].start);
    mt_free(s);
}

#define SPLIT_IS(text, want)                                                   \
    do {                                                                       \
        split_join(text, got, sizeof got);                                     \
        if (strcmp(got, want) != 0)                                            \
            print_message("got: %s\n", got);                                   \
        CHECK(strcmp(got, want) == 0);                                         \
    } while (0)

static void test_split_abbreviations_and_decimals(void **state)
{
    char got[1024];
    (void)state;
    SPLIT_IS("Seen by Dr. Smith vs. Mr. Jones today. T 38.5 and 2.5 mg "
             "given.  Next line!",
             "Seen by Dr. Smith vs. Mr. Jones today. | T 38.5 and 2.5 mg "
             "given. | Next line!");
    SPLIT_IS("Take 5 mg p.o. b.i.d. for pain. Use e.g. ibuprofen, i.e. an "
             "NSAID. Approx. 3 days.",
             "Take 5 mg p.o. b.i.d. for pain. | Use e.g. ibuprofen, i.e. an "
             "NSAID. | Approx. 3 days.");
    SPLIT_IS("Dose was 10 mg. He improved.", "Dose was 10 mg. | He improved.");
    SPLIT_IS("Room No. 5 at St. Mary. Done", "Room No. 5 at St. Mary. | Done");
}

static void test_split_lists_quotes_ellipses(void **state)
{
    char got[1024];
    (void)state;
    SPLIT_IS("Plan:\n1. Aspirin daily\n2) Statin\n- diet",
             "Plan: | 1. Aspirin daily | 2) Statin | - diet");
    SPLIT_IS("She said \"I feel sick.\" Then she left (as noted.) OK?",
             "She said \"I feel sick.\" | Then she left (as noted.) | OK?");
    SPLIT_IS("He paused... Then spoke... and stopped.",
             "He paused... | Then spoke... and stopped.");
    SPLIT_IS("  \n ", "");
    SPLIT_IS("\xe6\x82\xa3\xe8\x80\x85\xe3\x80\x82\xe5\x85\xa5\xe9\x99\xa2"
             "\xe3\x80\x82",
             "\xe6\x82\xa3\xe8\x80\x85\xe3\x80\x82 | \xe5\x85\xa5\xe9\x99\xa2"
             "\xe3\x80\x82");
}

static void test_split_oom_loop(void **state)
{
    static const char text[] =
        "One. Two. Three. Four. Five. Six. Seven. Eight. Nine. Ten. "
        "Eleven. Twelve. Thirteen. Fourteen. Fifteen. Sixteen. Seventeen.";
    long k;
    (void)state;
    for (k = 0; k < 10; k++) {
        struct mt_span *s = NULL;
        size_t n = 0;
        enum mt_status st;

        mt_alloc_fail_after(k);
        st = mtx_sentences_split(text, sizeof text - 1, &s, &n, NULL);
        mt_alloc_fail_reset();
        if (st == MT_OK) {
            CHECK(n == 17 && k >= 2);
            mt_free(s);
            return;
        }
        CHECK(st == MT_ENOMEM && s == NULL);
    }
    CHECK(0);
}

/* Parses 'f' and joins "id:sentence" with " | ". */
static enum mt_status parse_join(const char *f, char *buf, size_t cap,
                                 struct mt_error *err)
{
    struct mt_medec_sentence *s = NULL;
    size_t n = 0;
    size_t i;
    size_t used = 0;
    enum mt_status st = mtx_medec_sentences_parse(f, strlen(f), &s, &n, err);

    buf[0] = '\0';
    for (i = 0; st == MT_OK && i < n; i++)
        used += (size_t)snprintf(
            buf + used, cap - used, "%s%d:%.*s", i ? " | " : "", s[i].id,
            (int)(s[i].span.end - s[i].span.start), f + s[i].span.start);
    mt_free(s);
    return st;
}

static void test_medec_parse_forms(void **state)
{
    char got[1024];
    struct mt_error err;
    (void)state;
    CHECK_OK(parse_join("0 First one.\n1 He took 2 tabs.\n2 Done.", got,
                        sizeof got, NULL));
    CHECK(strcmp(got, "0:First one. | 1:He took 2 tabs. | 2:Done.") == 0);
    CHECK_OK(parse_join("0 Gave 1 dose. 1 He took 2 tabs, 3 times. 2 End.", got,
                        sizeof got, NULL));
    CHECK(strcmp(got, "0:Gave 1 dose. | 1:He took 2 tabs, 3 times. | "
                      "2:End.") == 0);
    /* lab lists with no punctuation: capital after the id */
    CHECK_OK(parse_join("0 Labs: 1 Hemoglobin 14 g/dL 2 Sodium 140 mEq/L", got,
                        sizeof got, NULL));
    CHECK(strcmp(got, "0:Labs: | 1:Hemoglobin 14 g/dL | "
                      "2:Sodium 140 mEq/L") == 0);
    CHECK(parse_join("1 No zero.", got, sizeof got, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "id 0") != NULL);
    CHECK_OK(parse_join("0 Ends.1 Glued 2.4 mg.", got, sizeof got, NULL));
    CHECK(strcmp(got, "0:Ends. | 1:Glued 2.4 mg.") == 0);
    CHECK(parse_join("0 ", got, sizeof got, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "empty") != NULL);
}

static void test_medec_parse_oom_loop(void **state)
{
    char f[2048];
    size_t used = 0;
    long k;
    int i;
    (void)state;
    for (i = 0; i < 40; i++)
        used +=
            (size_t)snprintf(f + used, sizeof f - used, "%d Line %d. ", i, i);
    for (k = 0; k < 10; k++) {
        struct mt_medec_sentence *s = NULL;
        size_t n = 0;
        enum mt_status st;

        mt_alloc_fail_after(k);
        st = mtx_medec_sentences_parse(f, used, &s, &n, NULL);
        mt_alloc_fail_reset();
        if (st == MT_OK) {
            CHECK(n == 40 && s[39].id == 39);
            mt_free(s);
            return;
        }
        CHECK(st == MT_ENOMEM && s == NULL);
    }
    CHECK(0);
}

/* ==== Real data ==== */

#define MEDEC_CSV                                                              \
    "medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"

struct cols {
    long text;
    long sents;
    long err_id;
};

/* Opens a data CSV and reads its header; skips the test when absent. */
static struct mt_csv *open_data(const char *rel, struct cols *c)
{
    char path[1024];
    struct mt_csv *csv = NULL;
    struct mt_error err;
    int got = 0;

    test_data_path(path, sizeof path, rel);
    if (mtx_csv_open(path, NULL, &csv, &err) != MT_OK) {
        print_message("cannot open %s: %s\n", path, err.msg);
        CHECK(0);
    }
    CHECK_OK(mtx_csv_next(csv, &got, &err));
    CHECK(got == 1);
    c->text = mtx_csv_find(csv, "Text");
    c->sents = mtx_csv_find(csv, "Sentences");
    c->err_id = mtx_csv_find(csv, "Error Sentence ID");
    CHECK(c->text >= 0 && c->sents >= 0 && c->err_id >= 0);
    return csv;
}

/* Non-space bytes in p[0..n). */
static size_t solid(const char *p, size_t n)
{
    size_t i;
    size_t k = 0;

    for (i = 0; i < n; i++)
        k += !(p[i] == ' ' || p[i] == '\n' || p[i] == '\t' || p[i] == '\r');
    return k;
}

/* Sentence ends measured in non-space bytes from the start, so gold
 * sentences (in the field) and split ones (in the text) compare. */
static size_t gold_ends(struct mt_str f, const struct mt_medec_sentence *g,
                        size_t ng, size_t *ends)
{
    size_t i;
    size_t at = 0;

    for (i = 0; i < ng; i++) {
        at += solid(f.p + g[i].span.start, g[i].span.end - g[i].span.start);
        ends[i] = at;
    }
    return ng;
}

static size_t split_ends(struct mt_str t, const struct mt_span *s, size_t ns,
                         size_t *ends)
{
    size_t i;

    for (i = 0; i < ns; i++)
        ends[i] = solid(t.p, s[i].end);
    return ns;
}

/* Boundaries present in both sorted lists. */
static size_t common(const size_t *a, size_t na, const size_t *b, size_t nb)
{
    size_t i = 0;
    size_t j = 0;
    size_t k = 0;

    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            k++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    return k;
}

/* The MEDEC gold splitter has quirks ("Her pulse is" / "106/min ... mm" /
 * "Hg."), so exact equality is measured only on notes whose gold
 * sentences all end in a stop; boundary precision is measured on all. */
static int gold_is_clean(struct mt_str f, const struct mt_medec_sentence *g,
                         size_t ng)
{
    size_t i;

    for (i = 0; i < ng; i++) {
        char c = f.p[g[i].span.end - 1];
        if (c != '.' && c != '?' && c != '!' && c != ':')
            return 0;
    }
    return 1;
}

static void test_splitter_agrees_with_medec_gold(void **state)
{
    static size_t ge[512];
    static size_t se[512];
    struct cols c;
    struct mt_csv *csv = open_data(MEDEC_CSV, &c);
    size_t notes = 0, clean = 0, exact = 0, ng_all = 0, ns_all = 0, hit = 0;
    int got = 1;
    (void)state;
    while (notes < 20 && mtx_csv_next(csv, &got, NULL) == MT_OK && got) {
        struct mt_str text = mtx_csv_field(csv, (size_t)c.text);
        struct mt_str field = mtx_csv_field(csv, (size_t)c.sents);
        struct mt_medec_sentence *g = NULL;
        struct mt_span *s = NULL;
        size_t ng = 0, ns = 0, h;

        CHECK_OK(mtx_medec_sentences_parse(field.p, field.n, &g, &ng, NULL));
        CHECK_OK(mtx_sentences_split(text.p, text.n, &s, &ns, NULL));
        CHECK(ng <= 512 && ns <= 512);
        h = common(ge, gold_ends(field, g, ng, ge), se,
                   split_ends(text, s, ns, se));
        if (gold_is_clean(field, g, ng)) {
            clean++;
            exact += h == ng && ns == ng;
        }
        ng_all += ng;
        ns_all += ns;
        hit += h;
        notes++;
        mt_free(g);
        mt_free(s);
    }
    mtx_csv_close(csv);
    print_message("splitter vs MEDEC gold, 20 notes: %zu/%zu clean notes "
                  "exact; boundaries: %zu of %zu split in gold "
                  "(precision), %zu of %zu gold found (recall)\n",
                  exact, clean, hit, ns_all, hit, ng_all);
    CHECK(notes == 20);
    CHECK(clean >= 8 && exact * 10 >= clean * 9);
    CHECK(hit * 100 >= ns_all * 98);
    CHECK(hit * 100 >= ng_all * 85);
}

/* Parses every row's Sentences field; ids 0..k-1, non-empty, and the
 * error sentence id (when not -1) among them. */
static void check_file(const char *rel)
{
    struct cols c;
    struct mt_csv *csv = open_data(rel, &c);
    struct mt_error err;
    size_t rows = 0;
    int got = 1;

    while (mtx_csv_next(csv, &got, &err) == MT_OK && got) {
        struct mt_str field = mtx_csv_field(csv, (size_t)c.sents);
        struct mt_str eid = mtx_csv_field(csv, (size_t)c.err_id);
        struct mt_medec_sentence *g = NULL;
        size_t ng = 0, i;
        long id = strtol(eid.p, NULL, 10);

        if (mtx_medec_sentences_parse(field.p, field.n, &g, &ng, &err) !=
            MT_OK) {
            print_message("%s line %zu: %s\n", rel, mtx_csv_line(csv), err.msg);
            CHECK(0);
        }
        for (i = 0; i < ng; i++)
            CHECK(g[i].id == (int)i && g[i].span.end > g[i].span.start);
        if (id < -1 || id >= (long)ng)
            print_message("%s line %zu: error id %ld of %zu\n", rel,
                          mtx_csv_line(csv), id, ng);
        CHECK(id >= -1 && id < (long)ng);
        mt_free(g);
        rows++;
    }
    CHECK(got == 0);
    CHECK(rows > 0);
    mtx_csv_close(csv);
}

static void test_medec_parse_every_file(void **state)
{
    static const char *const langs[] = {"EN", "CN", "ARA"};
    static const char *const splits[] = {"train", "validation", "test"};
    char rel[256];
    size_t l, s;
    (void)state;
    check_file(MEDEC_CSV);
    for (l = 0; l < 3; l++) {
        for (s = 0; s < 3; s++) {
            snprintf(rel, sizeof rel, "mederrbench/%s/reviewed_data_%s_%s.csv",
                     splits[s], langs[l], splits[s]);
            check_file(rel);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_abbreviations_and_decimals),
        cmocka_unit_test(test_split_lists_quotes_ellipses),
        cmocka_unit_test(test_split_oom_loop),
        cmocka_unit_test(test_medec_parse_forms),
        cmocka_unit_test(test_medec_parse_oom_loop),
        cmocka_unit_test(test_splitter_agrees_with_medec_gold),
        cmocka_unit_test(test_medec_parse_every_file),
    };
    return cmocka_run_group_tests_name("sentence", tests, NULL, NULL);
}
