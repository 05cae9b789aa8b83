/* Unit tests for src/corpus/xml.c, the importers' XML scanner, against
 * expat (which it replaced; linked into this test only): the same events
 * (start tags with their attributes, text, end tags) on every format
 * sample, on generated documents with every construct the scanner reads,
 * cut at every window boundary, and on thousands of mutations of a
 * sample, where both must accept or both refuse; then the messages of
 * malformed input (file, line, what). */
#include "check.h"

#include <expat.h>
#include <glob.h>
#include <zlib.h>

#include "corpus/corpus_int.h"
#include "medtrust/core.h"

/* ==== Event logs ====
 * One line an event: "S name" with " name=value" per attribute, "T text"
 * (character data between two tags, joined), "E name"; bytes under 0x20
 * and '\\' written as \xNN so a log is one line an event. */

struct ev_log {
    struct mt_buf log;
    struct mt_buf text;
};

static void put_escaped(struct mt_buf *b, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c == '\\')
            CHECK_OK(mtx_buf_printf(b, "\\x%02x", c));
        else
            CHECK_OK(mtx_buf_putc(b, (char)c));
    }
}

static void flush_text(struct ev_log *l)
{
    if (l->text.len == 0)
        return;
    CHECK_OK(mtx_buf_append_str(&l->log, "T "));
    put_escaped(&l->log, l->text.data, l->text.len);
    CHECK_OK(mtx_buf_putc(&l->log, '\n'));
    mtx_buf_reset(&l->text);
}

static void log_start(struct ev_log *l, const char *name, const char **attrs)
{
    size_t i;

    flush_text(l);
    CHECK_OK(mtx_buf_printf(&l->log, "S %s", name));
    for (i = 0; attrs[i]; i += 2) {
        CHECK_OK(mtx_buf_printf(&l->log, " %s=", attrs[i]));
        put_escaped(&l->log, attrs[i + 1], strlen(attrs[i + 1]));
    }
    CHECK_OK(mtx_buf_putc(&l->log, '\n'));
}

static void log_end(struct ev_log *l, const char *name)
{
    flush_text(l);
    CHECK_OK(mtx_buf_printf(&l->log, "E %s\n", name));
}

static void ev_init(struct ev_log *l)
{
    l->log = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    l->text = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    CHECK_OK(mtx_buf_reserve(&l->log, 1));
}

static void ev_free(struct ev_log *l)
{
    mtx_buf_free(&l->log);
    mtx_buf_free(&l->text);
}

/* ---- expat, set up as the importers had it ---- */

static void XMLCALL ex_start(void *u, const XML_Char *name,
                             const XML_Char **attrs)
{
    log_start(u, name, attrs);
}

static void XMLCALL ex_end(void *u, const XML_Char *name)
{
    log_end(u, name);
}

static void XMLCALL ex_text(void *u, const XML_Char *s, int n)
{
    struct ev_log *l = u;

    CHECK_OK(mtx_buf_append(&l->text, s, (size_t)n));
}

/* 1 when expat reads the document whole, its events in l. */
static int expat_events(const char *doc, size_t n, struct ev_log *l)
{
    XML_Parser p = XML_ParserCreate(NULL);
    int ok;

    CHECK(p != NULL);
    XML_SetUserData(p, l);
    XML_SetElementHandler(p, ex_start, ex_end);
    XML_SetCharacterDataHandler(p, ex_text);
    ok = XML_Parse(p, doc, (int)n, 1) != XML_STATUS_ERROR;
    if (!ok && getenv("XML_TEST_VERBOSE"))
        print_message("expat: %lu: %s\n",
                      (unsigned long)XML_GetCurrentLineNumber(p),
                      XML_ErrorString(XML_GetErrorCode(p)));
    XML_ParserFree(p);
    return ok;
}

/* ---- the scanner ---- */

static enum mt_status sc_start(struct mt_xml *x, const char *name,
                               const char **attrs, void *user)
{
    struct ev_log *l = user;

    log_start(l, name, attrs);
    mtx_xml_capture(x, &l->text);
    return MT_OK;
}

static enum mt_status sc_end(struct mt_xml *x, const char *name, void *user)
{
    log_end(user, name);
    (void)x;
    return MT_OK;
}

static const struct mt_xml_fns sc_fns = {sc_start, sc_end};

static enum mt_status scan_events(const char *doc, size_t n, struct ev_log *l,
                                  struct mt_error *err)
{
    return mtx_xml_parse_mem("doc.xml", doc, n, &sc_fns, l, err);
}

/* Prints the lines where two logs part, with the line before. */
static void print_first_difference(const char *a, const char *b)
{
    size_t i = 0, line = 0;

    while (a[i] && a[i] == b[i])
        i++;
    while (i > 0 && a[i - 1] != '\n')
        i--;
    if (i > 0) {
        line = i - 1;
        while (line > 0 && a[line - 1] != '\n')
            line--;
    }
    print_message("events differ after:\n%.*s--- expat\n%.*s\n"
                  "--- scanner\n%.*s\n",
                  (int)(i - line), a + line, (int)strcspn(a + i, "\n"), a + i,
                  (int)strcspn(b + i, "\n"), b + i);
}

/* Both read doc alike: both refuse it, or both take it with one log.
 * Returns 1 when they took it. */
static int same_events(const char *doc, size_t n)
{
    struct ev_log a, b;
    struct mt_error err = {0};
    int ea, eb;

    ev_init(&a);
    ev_init(&b);
    ea = expat_events(doc, n, &a);
    eb = scan_events(doc, n, &b, &err) == MT_OK;
    if (ea != eb)
        print_message("expat %s, the scanner %s (%s) on:\n%.*s\n",
                      ea ? "reads it" : "refuses it",
                      eb ? "reads it" : "refuses it", err.msg,
                      (int)(n < 400 ? n : 400), doc);
    CHECK(ea == eb);
    if (ea && strcmp(a.log.data, b.log.data) != 0)
        print_first_difference(a.log.data, b.log.data);
    CHECK(!ea || strcmp(a.log.data, b.log.data) == 0);
    ev_free(&a);
    ev_free(&b);
    return ea;
}

/* ==== Files ==== */

static char *slurp(const char *path, size_t *n)
{
    gzFile f = gzopen(path, "rb");
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    char blk[65536];
    int got;

    if (!f)
        MISSING(path);
    while ((got = gzread(f, blk, sizeof blk)) > 0)
        CHECK_OK(mtx_buf_append(&b, blk, (size_t)got));
    gzclose(f);
    *n = b.len;
    return mtx_buf_take(&b);
}

static size_t each_sample(const char *pattern, int (*fn)(const char *))
{
    char pat[512];
    glob_t g;
    size_t i, n = 0;

    test_data_path(pat, sizeof pat, pattern);
    if (glob(pat, 0, NULL, &g) != 0)
        MISSING(pat);
    for (i = 0; i < g.gl_pathc; i++)
        n += (size_t)fn(g.gl_pathv[i]);
    globfree(&g);
    return n;
}

/* The file through the scanner's own reader (gzip or plain) and through
 * expat gives one log. */
static int sample_same(const char *path)
{
    struct ev_log a, b;
    size_t n;
    char *doc = slurp(path, &n);
    struct mt_error err = {0};

    ev_init(&a);
    ev_init(&b);
    CHECK(expat_events(doc, n, &a));
    if (mtx_xml_parse(path, &sc_fns, &b, &err) != MT_OK)
        fail_msg("%s: %s", path, err.msg);
    if (strcmp(a.log.data, b.log.data) != 0)
        fail_msg("%s: the events differ from expat's", path);
    ev_free(&a);
    ev_free(&b);
    mt_free(doc);
    return 1;
}

static void test_samples_read_as_expat_reads_them(void **state)
{
    (void)state;
    CHECK(each_sample("formats/pubmed/*.xml", sample_same) == 7);
    CHECK(each_sample("formats/pubmed/baseline-sample.xml.gz", sample_same) ==
          1);
    CHECK(each_sample("formats/pmc/*", sample_same) == 6);
    CHECK(each_sample("formats/medquad/*/*.xml", sample_same) == 36);
}

/* ==== Generated documents ==== */

static uint64_t rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static void put(struct mt_buf *b, const char *s)
{
    CHECK_OK(mtx_buf_append_str(b, s));
}

/* Text with every kind of character data the scanner handles. */
static void gen_text(struct mt_buf *b, unsigned n)
{
    static const char *const bits[] = {
        "abc ",
        "Tumour",
        " ",
        "\n",
        "\r\n",
        "\r",
        "\t",
        "&lt;",
        "&gt;",
        "&amp;",
        "&apos;",
        "&quot;",
        "&#946;",
        "&#x3bc;",
        "&#x1F600;",
        "&#13;",
        "&#10;",
        "&#9;",
        "\xc2\xa9",
        "\xe2\x80\x89",
        "\xf0\x9f\x98\x80",
        "]",
        "]]",
        " > ",
        "'\"",
        "<![CDATA[x < y & ]] z\r\n]]>",
        "<!-- c -->",
        "<?pi data?>",
        "&ext;",
        "5%",
        "-->",
        "\xc3\xb6",
    };
    unsigned i;

    for (i = 0; i < n; i++)
        put(b, bits[rnd(sizeof bits / sizeof bits[0])]);
}

static void gen_attrs(struct mt_buf *b)
{
    static const char *const vals[] = {
        "plain",
        "a b",
        "x\ty\nz\r\nw\rv",
        "&lt;&amp;&#34;&#x27;",
        "&#10;&#9;",
        "'",
        "\"",
        "",
        "caf\xc3\xa9",
        "&ext;",
        "> >",
    };
    unsigned i, n = rnd(4);

    for (i = 0; i < n; i++) {
        const char *v = vals[rnd(sizeof vals / sizeof vals[0])];
        int dq = strchr(v, '"') == NULL;

        CHECK_OK(mtx_buf_printf(b, "%sa%u%s=%s%s%s", rnd(2) ? " " : "\n\t", i,
                                rnd(3) ? "" : " ", dq ? "\"" : "'", v,
                                dq ? "\"" : "'"));
    }
}

static void gen_element(struct mt_buf *b, int depth)
{
    static const char *const names[] = {"PubmedArticle", "a", "x:y", "_n.1-2",
                                        "AbstractText",  "p"};
    const char *name = names[rnd(sizeof names / sizeof names[0])];
    unsigned i, kids = depth > 5 ? 0 : rnd(5);

    CHECK_OK(mtx_buf_printf(b, "<%s", name));
    gen_attrs(b);
    if (rnd(6) == 0) {
        put(b, rnd(2) ? "/>" : " />");
        return;
    }
    put(b, ">");
    for (i = 0; i < kids; i++) {
        gen_text(b, rnd(4));
        gen_element(b, depth + 1);
    }
    gen_text(b, rnd(6));
    CHECK_OK(mtx_buf_printf(b, "</%s%s>", name, rnd(4) ? "" : " "));
}

/* A document: the XML declaration, the DOCTYPE (with an external subset,
 * so '&ext;' drops) and comments and PIs around the root. */
static char *gen_doc(size_t *n, unsigned roots_kids)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    unsigned i;

    put(&b, rnd(2) ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" : "");
    put(&b, "<!DOCTYPE PubmedArticleSet PUBLIC \"-//NLM//DTD x//EN\" "
            "\"https://dtd.nlm.nih.gov/x.dtd\">\n<!-- before -->\n");
    put(&b, "<PubmedArticleSet>\n");
    for (i = 0; i < roots_kids; i++) {
        gen_element(&b, 0);
        put(&b, rnd(2) ? "\n" : "\r\n");
    }
    put(&b, "</PubmedArticleSet>\n<?after x?>\r\n<!-- after -->\n");
    *n = b.len;
    return mtx_buf_take(&b);
}

static void test_generated_documents_read_as_expat_reads_them(void **state)
{
    size_t n;
    int i;
    (void)state;

    for (i = 0; i < 300; i++) {
        char *doc = gen_doc(&n, 1 + rnd(8));

        CHECK(same_events(doc, n));
        mt_free(doc);
    }
}

/* A document several windows long, its text and tags cut by every
 * window boundary at some offset; one attribute value larger than the
 * first window makes it grow. */
static void test_long_document_across_windows(void **state)
{
    struct mt_buf b = MT_BUF_INIT(MT_BUF_DEFAULT_MAX);
    size_t n, i;
    char *doc;
    (void)state;

    put(&b, "<?xml version=\"1.0\"?>\n<!DOCTYPE set SYSTEM \"s.dtd\">\n<set>");
    for (i = 0; b.len < ((size_t)3 << 20); i++) {
        gen_element(&b, 2);
        if (i % 97 == 0) {
            size_t to = b.len + 700000;

            put(&b, "<big v=\"");
            while (b.len < to)
                put(&b, i % 2 ? "&amp;\xc3\xa9 \r\n" : "abcdefgh");
            put(&b, "\"/>");
        }
    }
    put(&b, "</set>");
    n = b.len;
    doc = mtx_buf_take(&b);
    CHECK(same_events(doc, n));
    mt_free(doc);
}

/* ==== Mutations: both accept or both refuse ==== */

static void test_mutated_samples_accepted_alike(void **state)
{
    static const char bytes[] = "<>&;\"'/!?-[]=#x \r\n\0\xc3\xa9\x01\xff";
    char path[512];
    size_t n, i;
    char *doc, *m;
    int kept = 0;
    const char *file = getenv("XML_TEST_MUTATE_FILE");
    size_t rounds = getenv("XML_TEST_MUTATIONS")
                        ? (size_t)atol(getenv("XML_TEST_MUTATIONS"))
                        : 4000;
    (void)state;

    /* XML_TEST_MUTATE_FILE and XML_TEST_MUTATIONS run longer by hand. */
    doc = slurp(test_data_path(path, sizeof path,
                               file ? file : "formats/pubmed/pubmed2.xml"),
                &n);
    m = mt_malloc(n);
    CHECK(m != NULL);
    for (i = 0; i < rounds; i++) {
        size_t at = rnd((unsigned)n), len = n;

        memcpy(m, doc, n);
        if (i % 5 == 4)
            len = at; /* cut short */
        else
            m[at] = bytes[rnd(sizeof bytes - 1)];
        kept += same_events(m, len);
    }
    CHECK(kept > 100 && (size_t)kept < rounds - 100); /* hit both ways */
    mt_free(m);
    mt_free(doc);
}

/* ==== Messages ==== */

/* Refused with MT_EPARSE, the message naming "doc.xml:LINE: malformed
 * XML: " and 'what'. */
static void refused(const char *doc, unsigned line, const char *what)
{
    struct ev_log l;
    struct mt_error err = {0};
    char want[128];

    ev_init(&l);
    assert_int_equal(scan_events(doc, strlen(doc), &l, &err), MT_EPARSE);
    snprintf(want, sizeof want, "doc.xml:%u: malformed XML: ", line);
    if (strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, what))
        fail_msg("wanted \"%s...%s\", got \"%s\"", want, what, err.msg);
    ev_free(&l);
}

static void test_malformed_input_named_by_line(void **state)
{
    (void)state;
    refused("<a>\n<b>\n</a>", 3, "mismatched tag");
    refused("<a>\n\xc3(</a>", 2, "not UTF-8");
    refused("<a>\x01</a>", 1, "control character");
    refused("<a>&nbsp;</a>", 1, "undefined entity");
    refused("<?xml version='1.0' standalone='yes'?>\n"
            "<!DOCTYPE a SYSTEM 'a.dtd'><a>&nbsp;</a>",
            2, "undefined entity");
    refused("<a>x & y</a>", 1, "bare '&'");
    refused("<a>&#0;</a>", 1, "invalid character number");
    refused("<a>x ]]> y</a>", 1, "']]>' in text");
    refused("<a b='1' b='2'/>", 1, "duplicate attribute");
    refused("<a b='<'/>", 1, "'<' in an attribute value");
    refused("<a b=1/>", 1, "unquoted");
    refused("<a>\n<b>text", 2, "the file ends inside <b>");
    refused("<a/><b/>", 1, "junk after document element");
    refused("text<a/>", 1, "text before the root element");
    refused("", 1, "no element found");
    refused("<a><!-- x -- y --></a>", 1, "'--' inside a comment");
    refused("<a>\n<!-- open", 2, "unclosed token");
    refused("\n<?xml version='1.0'?><a/>", 2, "not at start");
    refused("<?xml version='1.0' encoding='ISO-8859-1'?><a/>", 1,
            "encoding other than UTF-8");
    refused("<!DOCTYPE a [\n<!ENTITY e 'x'>\n]><a>&e;</a>", 2,
            "ENTITY and ATTLIST declarations");
    refused("<![CDATA[x]]><a/>", 1, "CDATA section outside");
}

/* A handler's failure keeps its status and message, prefixed with the
 * file and the line of the tag. */
static enum mt_status refuse_b(struct mt_xml *x, const char *name,
                               const char **attrs, void *user)
{
    (void)attrs;
    (void)user;
    if (strcmp(name, "b") != 0)
        return MT_OK;
    return mt_fail(mtx_xml_error(x), MT_ELIMIT, "no <b> here");
}

static void test_handler_failure_named_by_line(void **state)
{
    static const struct mt_xml_fns fns = {refuse_b, NULL};
    static const char doc[] = "<a>\n\n<b/></a>";
    struct mt_error err = {0};
    (void)state;

    assert_int_equal(
        mtx_xml_parse_mem("doc.xml", doc, sizeof doc - 1, &fns, NULL, &err),
        MT_ELIMIT);
    assert_string_equal(err.msg, "doc.xml:3: no <b> here");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_read_as_expat_reads_them),
        cmocka_unit_test(test_generated_documents_read_as_expat_reads_them),
        cmocka_unit_test(test_long_document_across_windows),
        cmocka_unit_test(test_mutated_samples_accepted_alike),
        cmocka_unit_test(test_malformed_input_named_by_line),
        cmocka_unit_test(test_handler_failure_named_by_line),
    };
    return cmocka_run_group_tests_name("xml", tests, NULL, NULL);
}
