/* PubMed-shaped baseline files for the import benchmark: the elements of
 * NLM's PubMed DTD (PubmedArticleSet/PubmedArticle/MedlineCitation/...),
 * 30,000 records a file as in the real baseline, gzip-compressed, with a
 * fixed seed. Words are drawn from the frequencies of the 1,000 real
 * PubMedQA abstracts (90 %) and from a Zipf long tail of 2 million made-up
 * terms (10 %, so the index sees a realistic number of rare terms); MeSH
 * headings come from the same abstracts. Lengths (log-normal): abstracts
 * median 220 words, titles 14; 30 % of records have no abstract and 30 % of
 * abstracts are labelled, as in the baseline; authors 1 + Poisson(5).
 * Also writes OUTDIR/queries.jsonl: up to 1,000 queries (over the whole
 * set) of 4 words of one abstract each with that PMID as the relevant
 * document, for the files made. Each file has its own random stream, so
 * FIRST_FILE..LAST_FILE (1-based, 30,000 records each) makes just those
 * files, identical to the same files of a whole run: bench/pubmed.sh
 * makes a 25M set in batches that it deletes once imported.
 * Usage: gen_pubmed PUBMEDQA_CORPUS.jsonl N_RECORDS OUTDIR [SEED
 *        [FIRST_FILE LAST_FILE]] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <zlib.h>

#define PER_FILE 30000
#define TAIL 2000000
#define NQUERIES 1000

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(void)
{
    return (double)(rng() >> 11) / 9007199254740992.0;
}

static double normal(void)
{
    double u = unif() + 1e-12;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * unif());
}

static unsigned lognormal(double median, double sigma, unsigned lo)
{
    double v = median * exp(sigma * normal());
    return v < lo ? lo : (unsigned)v;
}

static unsigned poisson(double mean)
{
    double l = exp(-mean), p = 1.0;
    unsigned k = 0;

    do {
        k++;
        p *= unif();
    } while (p > l);
    return k - 1;
}

/* ==== Vocabulary learnt from real abstracts ==== */

struct table {
    char **w;
    uint64_t *cum; /* cumulative counts */
    size_t n, cap;
};

static void table_add(struct table *t, const char *w, size_t len)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 4096;
        t->w = realloc(t->w, t->cap * sizeof *t->w);
        t->cum = realloc(t->cum, t->cap * sizeof *t->cum);
    }
    t->w[t->n] = strndup(w, len);
    t->cum[t->n] = (t->n ? t->cum[t->n - 1] : 0) + 1;
    t->n++;
}

/* Every token occurrence is kept, so drawing uniformly over occurrences
 * reproduces the corpus's word frequencies. */
static const char *table_draw(const struct table *t)
{
    return t->w[rng() % t->n];
}

static void learn(const char *path, struct table *words, struct table *mesh)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;

    if (!f) {
        perror(path);
        exit(1);
    }
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        const char *s = json_string_value(json_object_get(o, "text"));
        json_t *m = json_object_get(o, "mesh");
        size_t i;

        while (s && *s) {
            size_t n = strcspn(s, " \n\t");
            if (n)
                table_add(words, s, n);
            s += n + (s[n] != '\0');
        }
        for (i = 0; i < json_array_size(m); i++) {
            const char *h = json_string_value(json_array_get(m, i));
            if (h)
                table_add(mesh, h, strlen(h));
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
}

/* A made-up term of the long tail: rank r spelled in syllables. */
static void tail_word(char *out, size_t n)
{
    static const char *syl[] = {"ka",  "ro",  "mi",  "ten", "lu",  "phy", "zo",
                                "cyt", "ase", "gen", "ol",  "ine", "tri", "nep",
                                "hem", "ox",  "dro", "lip", "ur",  "sy"};
    /* log-uniform rank: Zipf with exponent 1 */
    uint64_t r = (uint64_t)exp(unif() * log((double)TAIL));
    size_t len = 0;

    do {
        len += (size_t)snprintf(out + len, n - len, "%s", syl[r % 20]);
        r /= 20;
    } while (r && len < n - 5);
}

/* ==== Output ==== */

/* Writes s with &, < and > escaped; runs between them go in one gzwrite
 * (gzputc a character was most of the generator's time; the bytes, and
 * so the compressed files, are the same). */
static void put_text(gzFile g, const char *s)
{
    while (*s) {
        size_t n = strcspn(s, "&<>");
        if (n)
            gzwrite(g, s, (unsigned)n);
        s += n;
        if (*s == '&')
            gzputs(g, "&amp;");
        else if (*s == '<')
            gzputs(g, "&lt;");
        else if (*s == '>')
            gzputs(g, "&gt;");
        if (*s)
            s++;
    }
}

static void put_words(gzFile g, const struct table *words, unsigned n,
                      char *keep, size_t keep_n)
{
    char tw[64];
    unsigned i;

    for (i = 0; i < n; i++) {
        const char *w = words->w[0];
        if (unif() < 0.1) {
            tail_word(tw, sizeof tw);
            w = tw;
        } else {
            w = table_draw(words);
        }
        if (i)
            gzputc(g, ' ');
        if (unif() < 0.004) {
            gzputs(g, "<i>");
            put_text(g, w);
            gzputs(g, "</i>");
        } else {
            put_text(g, w);
        }
        if (keep && strlen(w) >= 6 && strlen(keep) + strlen(w) + 2 < keep_n &&
            unif() < 0.05 && !strpbrk(w, "&<>\"\\")) {
            strcat(keep, keep[0] ? " " : "");
            strcat(keep, w);
        }
    }
}

static const char *const labels[] = {"BACKGROUND", "METHODS", "RESULTS",
                                     "CONCLUSIONS"};
static const char *const cats[] = {"BACKGROUND", "METHODS", "RESULTS",
                                   "CONCLUSIONS"};
static const char *const last[] = {"Smith",  "Wang",    "Garcia", "Müller",
                                   "Kim",    "Rossi",   "Nguyen", "Sato",
                                   "Silva",  "O'Brien", "Jensen", "Kowalski",
                                   "Dubois", "Ivanov",  "Patel",  "Chen"};
static const char *const fore[] = {
    "John", "Li",      "Maria", "Jürgen", "Min-Jun", "Giulia", "Anh",  "Yuki",
    "Ana",  "Siobhán", "Lars",  "Piotr",  "Élodie",  "Olga",   "Ravi", "Wei"};

static void put_abstract(gzFile g, const struct table *words, char *keep,
                         size_t keep_n)
{
    unsigned total = lognormal(220, 0.45, 30);
    int labelled = unif() < 0.3;
    int i;

    gzputs(g, "<Abstract>\n");
    for (i = 0; i < (labelled ? 4 : 1); i++) {
        if (labelled)
            gzprintf(g, "<AbstractText Label=\"%s\" NlmCategory=\"%s\">",
                     labels[i], cats[i]);
        else
            gzputs(g, "<AbstractText>");
        put_words(g, words, labelled ? total / 4 + 1 : total, keep, keep_n);
        gzputs(g, "</AbstractText>\n");
    }
    gzputs(g, "</Abstract>\n");
}

static void put_authors(gzFile g)
{
    unsigned n = 1 + poisson(5), i;

    gzputs(g, "<AuthorList CompleteYN=\"Y\">\n");
    for (i = 0; i < n; i++) {
        const char *f = fore[rng() % 16];
        gzprintf(g, "<Author ValidYN=\"Y\"><LastName>");
        put_text(g, last[rng() % 16]);
        gzputs(g, "</LastName><ForeName>");
        put_text(g, f);
        gzprintf(g,
                 "</ForeName><Initials>%c</Initials>"
                 "<AffiliationInfo><Affiliation>Department of Medicine, "
                 "University Hospital %u.</Affiliation></AffiliationInfo>"
                 "</Author>\n",
                 'A' + (int)(rng() % 26), (unsigned)(rng() % 500));
    }
    gzputs(g, "</AuthorList>\n");
}

static void put_mesh(gzFile g, const struct table *mesh)
{
    unsigned n = poisson(10), i;

    if (!n || !mesh->n)
        return;
    gzputs(g, "<MeshHeadingList>\n");
    for (i = 0; i < n; i++) {
        gzprintf(g,
                 "<MeshHeading><DescriptorName UI=\"D%06u\" "
                 "MajorTopicYN=\"N\">",
                 (unsigned)(rng() % 999999));
        put_text(g, table_draw(mesh));
        gzputs(g, "</DescriptorName></MeshHeading>\n");
    }
    gzputs(g, "</MeshHeadingList>\n");
}

static void put_record(gzFile g, uint64_t pmid, const struct table *words,
                       const struct table *mesh, char *keep, size_t keep_n)
{
    unsigned year = 2024 - (unsigned)(75 * pow(unif(), 2.0));
    unsigned journal = (unsigned)(rng() % 5000);

    gzprintf(g,
             "<PubmedArticle>\n<MedlineCitation Status=\"MEDLINE\" "
             "Owner=\"NLM\">\n<PMID Version=\"1\">%llu</PMID>\n"
             "<DateCompleted><Year>%u</Year><Month>0%u</Month><Day>1%u"
             "</Day></DateCompleted>\n<Article PubModel=\"Print\">\n"
             "<Journal><ISSN IssnType=\"Print\">%04u-%04u</ISSN>"
             "<JournalIssue CitedMedium=\"Print\"><Volume>%u</Volume>"
             "<Issue>%u</Issue><PubDate><Year>%u</Year><Month>Jan</Month>"
             "</PubDate></JournalIssue><Title>Journal of clinical "
             "research %u</Title><ISOAbbreviation>J Clin Res %u"
             "</ISOAbbreviation></Journal>\n<ArticleTitle>",
             (unsigned long long)pmid, year, 1 + (unsigned)(rng() % 9),
             (unsigned)(rng() % 9), journal, journal, 1 + year % 60,
             1 + (unsigned)(rng() % 12), year, journal, journal);
    put_words(g, words, lognormal(14, 0.35, 3), NULL, 0);
    gzprintf(g,
             "</ArticleTitle>\n<Pagination><MedlinePgn>%u-%u"
             "</MedlinePgn></Pagination>\n",
             (unsigned)(rng() % 900), (unsigned)(rng() % 900 + 900));
    if (unif() >= 0.3)
        put_abstract(g, words, keep, keep_n);
    put_authors(g);
    gzputs(g, "<Language>eng</Language>\n<PublicationTypeList>"
              "<PublicationType UI=\"D016428\">Journal Article"
              "</PublicationType>");
    if (unif() < 0.2)
        gzputs(g, "<PublicationType UI=\"D016449\">Randomized Controlled "
                  "Trial</PublicationType>");
    gzputs(g, "</PublicationTypeList>\n</Article>\n<MedlineJournalInfo>"
              "<Country>United States</Country></MedlineJournalInfo>\n");
    put_mesh(g, mesh);
    gzprintf(g,
             "</MedlineCitation>\n<PubmedData><PublicationStatus>ppublish"
             "</PublicationStatus><ArticleIdList><ArticleId "
             "IdType=\"pubmed\">%llu</ArticleId><ArticleId IdType=\"doi\">"
             "10.1000/jcr.%llu</ArticleId></ArticleIdList></PubmedData>\n"
             "</PubmedArticle>\n",
             (unsigned long long)pmid, (unsigned long long)pmid);
}

/* File number 'file' (1-based) of an N-record set. Each file has its own
 * random stream (the seed mixed with the file number), so any range of
 * files can be made on its own, in batches, and comes out the same. */
static void put_file(const char *dir, unsigned file, uint64_t n, uint64_t seed,
                     const struct table *words, const struct table *mesh,
                     FILE *q, uint64_t *nq)
{
    uint64_t qevery = n / NQUERIES ? n / NQUERIES : 1;
    uint64_t pmid = (uint64_t)(file - 1) * PER_FILE;
    char path[4096], keep[256];
    gzFile g;

    rng_state = seed ^ ((uint64_t)file * 0xd1b54a32d192ed03ull);
    snprintf(path, sizeof path, "%s/pubmed25n%04u.xml.gz", dir, file);
    g = gzopen(path, "wb1");
    if (!g) {
        fprintf(stderr, "gen_pubmed: %s: cannot write\n", path);
        exit(1);
    }
    gzbuffer(g, 1 << 20);
    gzputs(g, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
              "<!DOCTYPE PubmedArticleSet PUBLIC \"-//NLM//DTD PubMedArticle,"
              " 1st January 2025//EN\" \"https://dtd.nlm.nih.gov/ncbi/pubmed/"
              "out/pubmed_250101.dtd\">\n<PubmedArticleSet>\n");
    for (uint64_t i = 0; i < PER_FILE && pmid < n; i++) {
        keep[0] = '\0';
        put_record(g, ++pmid, words, mesh, keep, sizeof keep);
        if (pmid % qevery == 0 && pmid / qevery <= NQUERIES &&
            strchr(keep, ' ') && strchr(strchr(keep, ' ') + 1, ' ')) {
            fprintf(q,
                    "{\"id\":\"q%llu\",\"query\":\"%s\",\"relevant\":"
                    "[\"%llu\"]}\n",
                    (unsigned long long)(pmid / qevery), keep,
                    (unsigned long long)pmid);
            (*nq)++;
        }
    }
    gzputs(g, "</PubmedArticleSet>\n");
    if (gzclose(g) != Z_OK) {
        fprintf(stderr, "gen_pubmed: %s: write failed\n", path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    struct table words = {0}, mesh = {0};
    uint64_t n, seed, nq = 0;
    unsigned files, first = 1, last, file;
    char path[4096];
    FILE *q;

    if (argc != 4 && argc != 5 && argc != 7) {
        fprintf(stderr, "usage: gen_pubmed PUBMEDQA_CORPUS.jsonl N OUTDIR "
                        "[SEED [FIRST_FILE LAST_FILE]]\n");
        return 2;
    }
    n = strtoull(argv[2], NULL, 10);
    files = (unsigned)((n + PER_FILE - 1) / PER_FILE);
    seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 20250101;
    last = files;
    if (argc == 7) {
        first = (unsigned)strtoul(argv[5], NULL, 10);
        last = (unsigned)strtoul(argv[6], NULL, 10);
    }
    if (first < 1 || last > files || first > last) {
        fprintf(stderr,
                "gen_pubmed: files %u-%u: an %llu-record set has "
                "files 1-%u\n",
                first, last, (unsigned long long)n, files);
        return 2;
    }
    learn(argv[1], &words, &mesh);
    mkdir(argv[3], 0755);
    /* The queries whose relevant record is in the files made. */
    snprintf(path, sizeof path, "%s/queries.jsonl", argv[3]);
    q = fopen(path, "w");
    if (!q) {
        fprintf(stderr, "gen_pubmed: %s: cannot write\n", path);
        return 1;
    }
    for (file = first; file <= last; file++)
        put_file(argv[3], file, n, seed, &words, &mesh, q, &nq);
    if (fclose(q) != 0) {
        fprintf(stderr, "gen_pubmed: %s: write failed\n", path);
        return 1;
    }
    fprintf(stderr,
            "gen_pubmed: files %u-%u of %u (%llu records in all), "
            "%llu queries\n",
            first, last, files, (unsigned long long)n, (unsigned long long)nq);
    return 0;
}
