/* src/text/segment_zh.c against jieba 0.42.1 itself: the venv
 * scripts/bootstrap installs reruns jieba.cut on every Chinese text of
 * MedErrBench (tests/golden/jieba/make.py cut) and each segmentation must
 * be ours token for token; plus the data loader's errors. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "medtrust/core.h"
#include "eval/eval_int.h"
#include "text/segment_zh.h"

#define VENV_PY "third_party/venv/bin/python"
#define JIEBA_DIR "third_party/jieba"

static struct mtx_jieba *jb;

static int setup(void **state)
{
    struct mt_error err = {0};

    (void)state;
    if (access(JIEBA_DIR "/dict.txt", R_OK) != 0)
        MISSING(JIEBA_DIR "/dict.txt");
    if (mtx_ev_jieba_open(JIEBA_DIR, &jb, &err) != MT_OK)
        fail_msg("%s", err.msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mtx_jieba_close(jb);
    return 0;
}

static size_t unhex(const char *h, size_t n, char *out)
{
    size_t i;

    for (i = 0; i + 1 < n; i += 2) {
        char b[3] = {h[i], h[i + 1], 0};
        out[i / 2] = (char)strtol(b, NULL, 16);
    }
    return n / 2;
}

/* Compares one "hex<TAB>len len ..." line with our cut; 1 when equal. */
static int same_cut(const char *line, char *text)
{
    const char *tab = strchr(line, '\t');
    size_t n = unhex(line, (size_t)(tab - line), text);
    struct mt_str *t;
    size_t nt, k = 0;
    const char *p = tab + 1;
    int ok = 1;
    char *end;

    CHECK_OK(mtx_jieba_cut(jb, text, n, &t, &nt));
    for (; ok && *p && *p != '\n'; p = end, k++) {
        size_t len = strtoul(p, &end, 10);

        ok = k < nt && t[k].n == len;
    }
    ok = ok && k == nt;
    if (!ok)
        print_message("# differs: %.*s\n", (int)n, text);
    mt_free(t);
    return ok;
}

static void test_cut_is_jiebas_on_mederrbench(void **state)
{
    static const char *const splits[] = {"train", "validation", "test"};
    char cmd[4096], path[1024];
    size_t len = (size_t)snprintf(cmd, sizeof cmd,
                                  VENV_PY " tests/golden/jieba/make.py cut");
    size_t lines = 0, equal = 0, cap = 1 << 20;
    char *line = malloc(cap), *text = malloc(cap);
    FILE *p;

    (void)state;
    if (access(VENV_PY, X_OK) != 0)
        fail_msg("missing %s (jieba): run scripts/bootstrap", VENV_PY);
    for (size_t i = 0; i < 3; i++) {
        test_data_path(path, sizeof path, "mederrbench/");
        len += (size_t)snprintf(cmd + len, sizeof cmd - len,
                                " '%s%s/reviewed_data_CN_%s.csv'", path,
                                splits[i], splits[i]);
    }
    p = popen(cmd, "r");
    CHECK(p != NULL && line && text);
    while (fgets(line, (int)cap, p)) {
        lines++;
        equal += (size_t)same_cut(line, text);
    }
    CHECK(pclose(p) == 0);
    print_message("# %zu of %zu MedErrBench CN texts cut as jieba cuts "
                  "them\n",
                  equal, lines);
    CHECK(lines > 5000);
    CHECK(equal == lines);
    free(line);
    free(text);
}

/* Cases of each rule, cut by jieba 0.42.1 (tokens joined by '|'). */
static void test_cut_rules(void **state)
{
    static const char *const cases[][2] = {
        {"我来到北京清华大学", "我|来到|北京|清华大学"},
        {"他来到了网易杭研大厦", "他|来到|了|网易|杭研|大厦"},
        {"BP 110/70mmHg，WBC 3.22×10^9/L\r\n。",
         "BP| |110|/|70mmHg|，|WBC| |3.22|×|10|^|9|/|L|\r\n|。"},
        {"小明硕士毕业于中国科学院计算所，后在日本京都大学深造",
         "小明|硕士|毕业|于|中国科学院|计算所|，|后|在|日本京都大学|深造"},
        {"行血氨检查以辅助诊断。", "行血|氨|检查|以|辅助|诊断|。"},
        {"给予5%葡萄糖溶液和维生素C-12.5mg",
         "给予|5%|葡萄糖|溶液|和|维生素|C|-|12.5|mg"},
        {"...... “好！”他说。ＣＴ", "......| |“|好|！|”|他|说|。|Ｃ|Ｔ"},
        {"", ""},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[512] = "";
        struct mt_str *t;
        size_t nt, o = 0;

        CHECK_OK(mtx_jieba_cut(jb, cases[i][0], strlen(cases[i][0]), &t, &nt));
        for (size_t k = 0; k < nt; k++)
            o += (size_t)snprintf(got + o, sizeof got - o, "%s%.*s",
                                  k ? "|" : "", (int)t[k].n, t[k].p);
        mt_free(t);
        if (strcmp(got, cases[i][1]) != 0)
            fail_msg("'%s': '%s', jieba '%s'", cases[i][0], got, cases[i][1]);
    }
}

/* Any bytes (Han, ASCII, punctuation, whitespace, ill-formed UTF-8, NUL):
 * the tokens are non-empty and cover the input in order. */
static void test_any_bytes_are_covered(void **state)
{
    static const char *const parts[] = {
        "北京", "清华", "大学",     "患",   "者",   "a",  "Z",  "9",  ".",
        "%",    "-",    "+",        " ",    "\r\n", "\r", "\n", "。", "？",
        "，",   "\xff", "\xe5\x8c", "\xc3", "Ｃ",   "…",  "\t", "'",  "\x00"};
    const size_t np = sizeof parts / sizeof parts[0];
    unsigned seed = 31;

    (void)state;
    for (int it = 0; it < 3000; it++) {
        char s[256];
        size_t n = 0, at = 0, nt;
        struct mt_str *t;
        enum mt_status st;
        double f = -1;

        for (int k = (int)(rand_r(&seed) % 24); k > 0; k--) {
            const char *p = parts[(size_t)rand_r(&seed) % np];
            size_t len = *p ? strlen(p) : 1;

            memcpy(s + n, p, len);
            n += len;
        }
        CHECK_OK(mtx_jieba_cut(jb, s, n, &t, &nt));
        for (size_t k = 0; k < nt; k++) {
            CHECK(t[k].p == s + at && t[k].n > 0);
            at += t[k].n;
        }
        CHECK(at == n);
        mt_free(t);
        s[n] = '\0'; /* and rouge-chinese's split over the cut text */
        st = mtx_kpcs_rouge1_zh(jb, s, "患者诊断。", &f);
        CHECK(st == MT_EINVAL || (st == MT_OK && f >= 0 && f <= 1));
    }
}

static void test_missing_dir_says_what_to_do(void **state)
{
    struct mt_error err = {0};
    char *d;

    (void)state;
    d = mtx_ev_jieba_find("/nonexistent/jieba", &err);
    CHECK(d == NULL);
    CHECK(strstr(err.msg, "--jieba-dict") != NULL);
    d = mtx_ev_jieba_find(JIEBA_DIR, &err);
    CHECK(d != NULL && strcmp(d, JIEBA_DIR) == 0);
    mt_free(d);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void remove_dir(const char *dir)
{
    char path[256];

    snprintf(path, sizeof path, "%s/dict.txt", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/hmm.txt", dir);
    unlink(path);
    CHECK(rmdir(dir) == 0);
}

static void test_bad_line_is_named(void **state)
{
    char dir[] = "/tmp/mt_jieba_XXXXXX";
    struct mt_error err = {0};
    struct mtx_jieba *j = NULL;

    (void)state;
    CHECK(mkdtemp(dir) != NULL);
    write_file(dir, "dict.txt", "北京 10 ns\n清华x\n");
    write_file(dir, "hmm.txt",
               "start B -0.26\nemit B 6211 -3.0\n"
               "emit S 6211 -3.0\n");
    CHECK(mtx_ev_jieba_open(dir, &j, &err) == MT_EPARSE);
    CHECK(j == NULL);
    CHECK(strstr(err.msg, "dict.txt:2") != NULL);
    write_file(dir, "dict.txt", "北京 10 ns\n");
    write_file(dir, "hmm.txt", "start B -0.26\nemit B 6211 x\n");
    CHECK(mtx_ev_jieba_open(dir, &j, &err) == MT_EPARSE);
    CHECK(strstr(err.msg, "hmm.txt:2") != NULL);
    remove_dir(dir);
}

/* Every allocation of open and cut failing in turn: MT_ENOMEM, nothing
 * half-made (LeakSanitizer), then the same tokens. A tiny dictionary and
 * HMM: 北京 and 清华大学 are words, 我在 goes to the HMM. */
static void test_out_of_memory_is_clean(void **state)
{
    char dir[] = "/tmp/mt_jieba_XXXXXX";
    static const char s[] = "我在北京清华大学";
    struct mtx_jieba *j = NULL;
    struct mt_str *t = NULL;
    size_t nt = 0;
    long k;

    (void)state;
    CHECK(mkdtemp(dir) != NULL);
    write_file(dir, "dict.txt", "北京 10 ns\n清华大学 5 nt\n在 20 p\n");
    write_file(dir, "hmm.txt",
               "start B -0.26\nstart S -1.46\n"
               "trans B E -0.51\ntrans E S -0.8\n"
               "trans S S -0.66\nemit S 6211 -3.0\n"
               "emit B 6211 -9.0\n");
    for (k = 0; k < 100 && !j; k++) {
        mt_alloc_fail_after(k);
        CHECK(mtx_ev_jieba_open(dir, &j, NULL) == (j ? MT_OK : MT_ENOMEM));
        mt_alloc_fail_reset();
    }
    CHECK(j != NULL);
    for (k = 0; k < 100 && !t; k++) {
        mt_alloc_fail_after(k);
        CHECK(mtx_jieba_cut(j, s, sizeof s - 1, &t, &nt) ==
              (t ? MT_OK : MT_ENOMEM));
        mt_alloc_fail_reset();
    }
    CHECK(t != NULL && nt == 4);
    CHECK(t[2].n == 6 && memcmp(t[2].p, "北京", 6) == 0);
    mt_free(t);
    mtx_jieba_close(j);
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_rules),
        cmocka_unit_test(test_cut_is_jiebas_on_mederrbench),
        cmocka_unit_test(test_any_bytes_are_covered),
        cmocka_unit_test(test_missing_dir_says_what_to_do),
        cmocka_unit_test(test_bad_line_is_named),
        cmocka_unit_test(test_out_of_memory_is_clean),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
