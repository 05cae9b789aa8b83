/* Unit tests for src/text/chunk: golden offsets made by tools/chunk_ref.py,
 * a driver of LangChain's real RecursiveCharacterTextSplitter (imported
 * from ../shared/reference; test_chunk_ref checks the files are still what
 * it gives), properties
 * over whole corpora, parameter checks and an OOM loop.
 *
 * Golden files (tests/golden/chunk/) hold offsets only, never corpus text.
 * Regenerate them from the repository root with:
 *   python3 tools/chunk_ref.py corpus ../shared/data/medquad/corpus.jsonl \
 *       --every 200 > tests/golden/chunk/medquad.expected
 *   python3 tools/chunk_ref.py corpus ../shared/data/pubmedqa/corpus.jsonl \
 *       --every 50 > tests/golden/chunk/pubmedqa.expected
 *   python3 tools/chunk_ref.py corpus ../shared/data/pubmedqa/corpus.jsonl \
 *       --every 50 --size 300 --overlap 50 \
 *       > tests/golden/chunk/pubmedqa_s300.expected
 *   python3 tools/chunk_ref.py synthetic tests/golden/chunk/synthetic.in \
 *       > tests/golden/chunk/synthetic.expected
 * The "#select" header line of a corpus golden file gives the document
 * selection and the params, so this test and the tool cannot drift. Run
 * from the repository root; corpora come from $MEDTRUST_DATA. */
#include "check.h"

#include <jansson.h>
#include <utf8proc.h>

#include "core/buf.h"
#include "medtrust/core.h"
#include "text/chunk.h"

#define GOLDEN_DIR "tests/golden/chunk/"

/* ==== Helpers: independent UTF-8 and whitespace ==== */

/* Bytes of the character at p (utf8proc decoding; a bad byte is one
 * character), and its code point in *cp (-1 when bad). */
static size_t next_char(const char *p, size_t avail, int32_t *cp)
{
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)p,
                                          (utf8proc_ssize_t)avail, cp);
    if (k <= 0) {
        *cp = -1;
        return 1;
    }
    return (size_t)k;
}

static size_t cp_len(const char *p, size_t n)
{
    size_t i = 0;
    size_t len = 0;
    int32_t cp;

    while (i < n) {
        i += next_char(p + i, n - i, &cp);
        len++;
    }
    return len;
}

/* Python str.isspace(), listed by code point. */
static int py_space(int32_t c)
{
    static const int32_t extra[] = {0x85,   0xA0,   0x1680, 0x2028,
                                    0x2029, 0x202F, 0x205F, 0x3000};
    size_t i;

    if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20))
        return 1;
    if (c >= 0x2000 && c <= 0x200A)
        return 1;
    for (i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        if (c == extra[i])
            return 1;
    }
    return 0;
}

/* 1 when [p, p+n) holds only whitespace (or nothing). */
static int all_space(const char *p, size_t n)
{
    size_t i = 0;
    int32_t cp;

    while (i < n) {
        i += next_char(p + i, n - i, &cp);
        if (!py_space(cp))
            return 0;
    }
    return 1;
}

static int starts_or_ends_space(const char *p, size_t n)
{
    size_t i = 0;
    size_t k;
    int32_t cp;

    k = next_char(p, n, &cp);
    if (py_space(cp))
        return 1;
    while (i + k < n) {
        i += k;
        k = next_char(p + i, n - i, &cp);
    }
    return py_space(cp);
}

/* ==== Properties ==== */

/* Checks one chunk list against the invariants of the algorithm: bounds,
 * length, order, bounded overlap, stripped ends, and that whatever no
 * chunk covers is whitespace. */
static void check_props(const char *t, size_t n,
                        const struct mt_chunk_params *p,
                        const struct mt_chunk *c, size_t count)
{
    size_t k;
    size_t reach = 0;

    for (k = 0; k < count; k++) {
        size_t s = c[k].start;
        size_t e = c[k].end;

        CHECK(s < e && e <= n);
        CHECK(cp_len(t + s, e - s) <= p->chunk_size);
        if (p->chunk_size > 1) /* size 1 keeps raw characters */
            CHECK(!starts_or_ends_space(t + s, e - s));
        if (k > 0) {
            size_t pe = c[k - 1].end;

            CHECK(s >= c[k - 1].start && e >= pe);
            if (pe > s)
                CHECK(cp_len(t + s, pe - s) <= p->chunk_overlap);
        }
        if (s > reach)
            CHECK(all_space(t + reach, s - reach));
        if (e > reach)
            reach = e;
    }
    CHECK(all_space(t + reach, n - reach));
}

/* ==== Golden files ==== */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data;
    long sz;

    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)sz + 1);
    if (data && fread(data, 1, (size_t)sz, f) != (size_t)sz) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (data) {
        data[sz] = '\0';
        *len = (size_t)sz;
    }
    return data;
}

/* Loads a golden file without its '#' lines into *body (caller frees);
 * returns the "#select" line or NULL (pointing into *raw, caller frees). */
static void load_golden(const char *path, char **raw, struct mt_buf *body,
                        const char **select)
{
    size_t len = 0;
    char *line;
    char *save = NULL;

    *raw = read_all(path, &len);
    if (!*raw)
        fail_msg("cannot read %s (run from the repository root)", path);
    *select = NULL;
    CHECK_OK(mtx_buf_reserve(body, 1));
    for (line = strtok_r(*raw, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "#select ", 8) == 0)
            *select = line;
        if (line[0] == '#')
            continue;
        CHECK_OK(mtx_buf_printf(body, "%s\n", line));
    }
}

/* Fails with the first differing line of two line lists. */
static void compare_lines(const char *what, const char *got, const char *want)
{
    size_t line = 1;
    size_t i = 0;

    while (got[i] && got[i] == want[i]) {
        if (got[i] == '\n')
            line++;
        i++;
    }
    if (got[i] == want[i])
        return;
    while (i > 0 && got[i - 1] != '\n')
        i--;
    fail_msg("%s: line %zu differs\n  got:  %.60s\n  want: %.60s", what, line,
             got + i, want + i);
}

/* Chunks 'text' and appends its golden lines to 'out'; checks properties
 * on the way. Returns the number of chunks. */
static size_t chunk_lines(const char *id, const char *text, size_t n,
                          const struct mt_chunk_params *p, struct mt_buf *out)
{
    struct mt_chunk *c = NULL;
    size_t count = 0;
    size_t k;

    CHECK_OK(mtx_chunk_text(text, n, p, &c, &count, NULL));
    check_props(text, n, p, c, count);
    for (k = 0; out && k < count; k++)
        CHECK_OK(mtx_buf_printf(out, "%s\t%zu\t%zu\t%zu\n", id, k, c[k].start,
                                c[k].end));
    mt_free(c);
    return count;
}

/* ==== Corpus goldens ==== */

struct selection {
    size_t first;
    size_t every;
    size_t over;
    struct mt_chunk_params p;
};

static void parse_select(const char *line, struct selection *sel)
{
    unsigned size = 0;
    unsigned overlap = 0;

    if (!line)
        fail_msg("golden file has no #select line");
    CHECK(sscanf(line,
                 "#select first=%zu every=%zu over=%zu size=%u "
                 "overlap=%u",
                 &sel->first, &sel->every, &sel->over, &size, &overlap) == 5);
    CHECK(sel->every > 0);
    sel->p.chunk_size = size;
    sel->p.chunk_overlap = overlap;
}

/* Handles one JSONL line: chunks the selected document into 'out'. */
static void corpus_line(const char *line, size_t len, size_t idx,
                        const struct selection *sel, struct mt_buf *out,
                        size_t *docs, size_t *chunks)
{
    json_error_t jerr;
    json_t *doc = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
    json_t *id;
    json_t *text;
    size_t n;

    if (!doc)
        fail_msg("corpus line %zu: %s", idx + 1, jerr.text);
    id = json_object_get(doc, "id");
    text = json_object_get(doc, "text");
    CHECK(json_is_string(id) && json_is_string(text));
    n = json_string_length(text);
    if (idx < sel->first || idx % sel->every == 0 ||
        cp_len(json_string_value(text), n) > sel->over) {
        *chunks += chunk_lines(json_string_value(id), json_string_value(text),
                               n, &sel->p, out);
        (*docs)++;
    }
    json_decref(doc);
}

static void check_corpus(const char *corpus_rel, const char *golden)
{
    char path[4096];
    char *raw = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    size_t idx = 0, docs = 0, chunks = 0;
    struct mt_buf want = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct mt_buf got = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct selection sel;
    const char *select;
    FILE *f = fopen(test_data_path(path, sizeof path, corpus_rel), "r");

    if (!f)
        fail_msg("cannot open %s (set MEDTRUST_DATA)", path);
    load_golden(golden, &raw, &want, &select);
    parse_select(select, &sel);
    CHECK_OK(mtx_buf_reserve(&got, 1));
    while ((len = getline(&line, &cap, f)) > 0)
        corpus_line(line, (size_t)len, idx++, &sel, &got, &docs, &chunks);
    free(line);
    fclose(f);
    print_message("%s: %zu docs, %zu chunks compared\n", golden, docs, chunks);
    compare_lines(golden, got.data, want.data);
    mtx_buf_free(&want);
    mtx_buf_free(&got);
    free(raw);
}

static void test_chunk_golden_medquad(void **state)
{
    (void)state;
    check_corpus("medquad/corpus.jsonl", GOLDEN_DIR "medquad.expected");
}

static void test_chunk_golden_pubmedqa(void **state)
{
    (void)state;
    check_corpus("pubmedqa/corpus.jsonl", GOLDEN_DIR "pubmedqa.expected");
}

static void test_chunk_golden_pubmedqa_small_chunks(void **state)
{
    (void)state;
    check_corpus("pubmedqa/corpus.jsonl", GOLDEN_DIR "pubmedqa_s300.expected");
}

/* ==== Synthetic goldens ==== */

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    fail_msg("bad hex digit '%c' in synthetic.in", c);
    return 0;
}

/* The byte that backslash + c stands for (c itself when not n t r s). */
static char escaped(char c)
{
    switch (c) {
    case 'n':
        return '\n';
    case 't':
        return '\t';
    case 'r':
        return '\r';
    case 's':
        return ' ';
    default:
        return c;
    }
}

/* Decodes the escapes of synthetic.in in place; returns the new length. */
static size_t unescape(char *s)
{
    size_t i = 0;
    size_t o = 0;

    while (s[i]) {
        char c = s[i++];

        if (c == '\\' && s[i] == 'x') {
            c = (char)(hex_val(s[i + 1]) * 16 + hex_val(s[i + 2]));
            i += 3;
        } else if (c == '\\') {
            c = escaped(s[i++]);
        }
        s[o++] = c;
    }
    return o;
}

static void synthetic_line(char *line, struct mt_buf *out, size_t *cases)
{
    static char empty[1];
    char *f[4];
    char *save = NULL;
    struct mt_chunk_params p;
    size_t i;
    size_t n;

    if (line[0] == '#' || line[0] == '\0')
        return;
    f[0] = strtok_r(line, "\t", &save);
    for (i = 1; i < 3; i++)
        f[i] = strtok_r(NULL, "\t", &save);
    f[3] = save ? save : empty;
    CHECK(f[0] && f[1] && f[2]);
    p.chunk_size = (uint32_t)strtoul(f[1], NULL, 10);
    p.chunk_overlap = (uint32_t)strtoul(f[2], NULL, 10);
    n = unescape(f[3]);
    chunk_lines(f[0], f[3], n, &p, out);
    (*cases)++;
}

static void test_chunk_golden_synthetic(void **state)
{
    struct mt_buf want = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    struct mt_buf got = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    const char *select;
    char *raw;
    char *in;
    char *line;
    char *save = NULL;
    size_t len;
    size_t cases = 0;
    (void)state;
    load_golden(GOLDEN_DIR "synthetic.expected", &raw, &want, &select);
    in = read_all(GOLDEN_DIR "synthetic.in", &len);
    CHECK(in != NULL);
    CHECK_OK(mtx_buf_reserve(&got, 1));
    for (line = strtok_r(in, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        synthetic_line(line, &got, &cases);
    CHECK(cases >= 30);
    compare_lines("synthetic.expected", got.data, want.data);
    free(in);
    free(raw);
    mtx_buf_free(&want);
    mtx_buf_free(&got);
}

/* ==== Properties over whole corpora ==== */

static void props_corpus(const char *rel, const struct mt_chunk_params *p)
{
    char path[4096];
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    json_error_t jerr;
    FILE *f = fopen(test_data_path(path, sizeof path, rel), "r");

    if (!f)
        fail_msg("cannot open %s (set MEDTRUST_DATA)", path);
    while ((len = getline(&line, &cap, f)) > 0) {
        json_t *doc = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &jerr);
        json_t *text = json_object_get(doc, "text");

        CHECK(json_is_string(text));
        chunk_lines("", json_string_value(text), json_string_length(text), p,
                    NULL);
        json_decref(doc);
    }
    free(line);
    fclose(f);
}

static void test_chunk_props_all_docs(void **state)
{
    struct mt_chunk_params p;
    (void)state;
    mtx_chunk_default_params(&p);
    props_corpus("medquad/corpus.jsonl", &p);
    props_corpus("pubmedqa/corpus.jsonl", &p);
    p.chunk_size = 64;
    p.chunk_overlap = 16;
    props_corpus("pubmedqa/corpus.jsonl", &p);
}

/* ==== API behaviour ==== */

static void test_chunk_default_params(void **state)
{
    struct mt_chunk_params p;
    (void)state;
    mtx_chunk_default_params(&p);
    CHECK(p.chunk_size == 1000 && p.chunk_overlap == 200);
}

static void test_chunk_rejects_bad_params(void **state)
{
    struct mt_chunk_params p = {10, 11};
    struct mt_chunk *sentinel = (struct mt_chunk *)&p;
    struct mt_chunk *c = sentinel;
    size_t count = 77;
    struct mt_error err;
    (void)state;
    CHECK(mtx_chunk_text("abc", 3, &p, &c, &count, &err) == MT_EINVAL);
    CHECK(err.status == MT_EINVAL && err.msg[0] != '\0');
    p.chunk_size = 0;
    p.chunk_overlap = 0;
    CHECK(mtx_chunk_text("abc", 3, &p, &c, &count, NULL) == MT_EINVAL);
    mtx_chunk_default_params(&p);
    CHECK(mtx_chunk_text(NULL, 3, &p, &c, &count, NULL) == MT_EINVAL);
    CHECK(mtx_chunk_text("abc", 3, NULL, &c, &count, NULL) == MT_EINVAL);
    CHECK(mtx_chunk_text("abc", 3, &p, NULL, &count, NULL) == MT_EINVAL);
    CHECK(mtx_chunk_text("abc", 3, &p, &c, NULL, NULL) == MT_EINVAL);
    CHECK(c == sentinel && count == 77);
}

static void test_chunk_empty_and_blank(void **state)
{
    struct mt_chunk_params p;
    struct mt_chunk *c = NULL;
    size_t count = 5;
    (void)state;
    mtx_chunk_default_params(&p);
    CHECK_OK(mtx_chunk_text(NULL, 0, &p, &c, &count, NULL));
    CHECK(count == 0 && c == NULL);
    CHECK_OK(mtx_chunk_text(" \n\n\t \xe3\x80\x80", 8, &p, &c, &count, NULL));
    CHECK(count == 0 && c == NULL);
    CHECK_OK(mtx_chunk_text("  ab  ", 6, &p, &c, &count, NULL));
    CHECK(count == 1 && c[0].start == 2 && c[0].end == 4);
    mt_free(c);
}

/* Counts code points, not bytes: 12 CJK characters (36 bytes) fit in one
 * chunk of 12, and split 10 + 5 (overlap 3) at size 10. */
static void test_chunk_counts_code_points(void **state)
{
    const char *t = "日本語日本語日本語日本語";
    struct mt_chunk_params p = {12, 3};
    struct mt_chunk *c = NULL;
    size_t count = 0;
    (void)state;
    CHECK_OK(mtx_chunk_text(t, strlen(t), &p, &c, &count, NULL));
    CHECK(count == 1 && c[0].start == 0 && c[0].end == 36);
    mt_free(c);
    p.chunk_size = 10;
    CHECK_OK(mtx_chunk_text(t, strlen(t), &p, &c, &count, NULL));
    CHECK(count == 2 && c[0].end == 30 && c[1].start == 21);
    CHECK(c[1].end == 36);
    mt_free(c);
}

/* A long text with every kind of piece, for the OOM loop and scale test. */
static char *make_text(size_t reps, size_t *n)
{
    static const char unit[] =
        "Hypertension is common.\n\nRisk factors: age, salt, "
        "obesity.\nSupercalifragilisticexpialidociouslylongword "
        "\xe9\xab\x98\xe8\xa1\x80\xe5\x8e\x8b   \n\n\n";
    size_t u = sizeof unit - 1;
    char *t = malloc(reps * u + 1);
    size_t i;

    CHECK(t != NULL);
    for (i = 0; i < reps; i++)
        memcpy(t + i * u, unit, u);
    t[reps * u] = '\0';
    *n = reps * u;
    return t;
}

static void test_chunk_oom_loop(void **state)
{
    struct mt_chunk_params p = {40, 8};
    struct mt_chunk *ref = NULL;
    struct mt_chunk *c;
    size_t nref = 0;
    size_t count;
    size_t n;
    char *t = make_text(40, &n);
    long fail;
    enum mt_status st = MT_ENOMEM;
    (void)state;
    CHECK_OK(mtx_chunk_text(t, n, &p, &ref, &nref, NULL));
    for (fail = 0; fail < 200 && st != MT_OK; fail++) {
        c = NULL;
        count = 0;
        mt_alloc_fail_after(fail);
        st = mtx_chunk_text(t, n, &p, &c, &count, NULL);
        mt_alloc_fail_reset();
        if (st != MT_OK) {
            CHECK(st == MT_ENOMEM && c == NULL && count == 0);
            continue;
        }
        CHECK(count == nref);
        CHECK(memcmp(c, ref, count * sizeof *c) == 0);
        mt_free(c);
    }
    CHECK(st == MT_OK && fail > 1);
    mt_free(ref);
    free(t);
}

/* Megabytes of text, with and without separators, finish quickly: the
 * chunker never rescans a piece per chunk. */
static void test_chunk_scales_linearly(void **state)
{
    struct mt_chunk_params p;
    struct mt_chunk *c = NULL;
    size_t count = 0;
    size_t n;
    char *t = make_text(30000, &n); /* about 4 MB */
    (void)state;
    mtx_chunk_default_params(&p);
    CHECK_OK(mtx_chunk_text(t, n, &p, &c, &count, NULL));
    CHECK(count > n / 1000);
    check_props(t, n, &p, c, count);
    mt_free(c);
    memset(t, 'x', n); /* one 4 MB word: split per character */
    CHECK_OK(mtx_chunk_text(t, n, &p, &c, &count, NULL));
    CHECK(count == (n - 200 + 799) / 800);
    CHECK(c[1].start == 800 && c[count - 1].end == n);
    mt_free(c);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_default_params),
        cmocka_unit_test(test_chunk_rejects_bad_params),
        cmocka_unit_test(test_chunk_empty_and_blank),
        cmocka_unit_test(test_chunk_counts_code_points),
        cmocka_unit_test(test_chunk_golden_synthetic),
        cmocka_unit_test(test_chunk_golden_medquad),
        cmocka_unit_test(test_chunk_golden_pubmedqa),
        cmocka_unit_test(test_chunk_golden_pubmedqa_small_chunks),
        cmocka_unit_test(test_chunk_props_all_docs),
        cmocka_unit_test(test_chunk_oom_loop),
        cmocka_unit_test(test_chunk_scales_linearly),
    };
    return cmocka_run_group_tests_name("chunk", tests, NULL, NULL);
}
