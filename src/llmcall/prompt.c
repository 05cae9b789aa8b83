/* Prompt templates: compiled-in defaults, per-file overrides, rendering. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file.h"
#include "llmcall/prompt.h"
#include "medtrust/core.h"

#define PROMPT_MAX ((size_t)1 << 20)
#define USER_SEP "=== user ==="

struct builtin_prompt {
    const char *name;
    const unsigned char *text;
    size_t len;
};

#include "prompts_gen.h"

#define N_BUILTIN (sizeof builtin_prompts / sizeof builtin_prompts[0])

struct prompt {
    char *text; /* owned copy of the whole file */
    struct mt_str sys;
    struct mt_str user;
};

struct mt_prompts {
    struct prompt p[N_BUILTIN];
};

size_t mtx_prompts_builtin_count(void)
{
    return N_BUILTIN;
}

const char *mtx_prompts_builtin_name(size_t i)
{
    return i < N_BUILTIN ? builtin_prompts[i].name : NULL;
}

/* Splits the text at the separator line; -1 when there is none. */
static int split(struct prompt *p, const char *text, size_t n)
{
    const char *s = strstr(text, USER_SEP);
    const char *u;

    if (!s)
        return -1;
    u = s + strlen(USER_SEP);
    if (*u == '\r')
        u++;
    if (*u == '\n')
        u++;
    p->sys = mtx_str_trim((struct mt_str){text, (size_t)(s - text)});
    p->user = mtx_str_trim((struct mt_str){u, (size_t)(text + n - u)});
    return 0;
}

/* A prompt file that is not there is MT_ENOTFOUND and no error: the
 * built-in prompt stands. */
static enum mt_status read_file(const char *path, char **out, size_t *n,
                                struct mt_error *err)
{
    struct mt_error e = {MT_OK, ""};
    struct mt_buf b = MT_BUF_INIT(PROMPT_MAX);
    enum mt_status st = mtx_file_read_all(path, &b, &e);

    if (st == MT_OK && (st = mtx_buf_reserve(&b, 1)) != MT_OK)
        mt_fail(&e, st, "%s: %s", path, mt_status_str(st));
    if (st != MT_OK) {
        mtx_buf_free(&b);
        return st == MT_ENOTFOUND ? st : mt_fail(err, st, "%s", e.msg);
    }
    *n = b.len;
    *out = mtx_buf_take(&b);
    return MT_OK;
}

static enum mt_status load_one(struct prompt *p, size_t i, const char *dir,
                               struct mt_error *err)
{
    char path[4096];
    size_t n = builtin_prompts[i].len;
    enum mt_status st = MT_ENOTFOUND;

    if (dir) {
        snprintf(path, sizeof path, "%s/%s.txt", dir, builtin_prompts[i].name);
        st = read_file(path, &p->text, &n, err);
        if (st != MT_OK && st != MT_ENOTFOUND)
            return st;
    }
    if (st == MT_ENOTFOUND) {
        snprintf(path, sizeof path, "built-in %s", builtin_prompts[i].name);
        p->text = mt_strndup((const char *)builtin_prompts[i].text, n);
        if (!p->text)
            return mt_fail(err, MT_ENOMEM, "prompts: out of memory");
    }
    if (split(p, p->text, n) < 0)
        return mt_fail(err, MT_EPARSE,
                       "%s: no '" USER_SEP "' line "
                       "separating the system and user parts",
                       path);
    return MT_OK;
}

enum mt_status mtx_prompts_load(const char *dir, struct mt_prompts **out,
                                struct mt_error *err)
{
    struct mt_prompts *ps;
    struct stat sb;
    enum mt_status st = MT_OK;
    size_t i;

    if (dir && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return mt_fail(err, MT_EIO,
                       "--prompts %s: not a readable "
                       "directory",
                       dir);
    ps = mt_calloc(1, sizeof *ps);
    if (!ps)
        return mt_fail(err, MT_ENOMEM, "prompts: out of memory");
    for (i = 0; st == MT_OK && i < N_BUILTIN; i++)
        st = load_one(&ps->p[i], i, dir, err);
    if (st != MT_OK) {
        mtx_prompts_free(ps);
        return st;
    }
    *out = ps;
    return MT_OK;
}

void mtx_prompts_free(struct mt_prompts *p)
{
    size_t i;

    if (!p)
        return;
    for (i = 0; i < N_BUILTIN; i++)
        mt_free(p->p[i].text);
    mt_free(p);
}

int mtx_prompts_get(const struct mt_prompts *p, const char *name,
                    struct mt_str *sys, struct mt_str *user)
{
    size_t i;

    for (i = 0; i < N_BUILTIN; i++) {
        if (strcmp(builtin_prompts[i].name, name) != 0)
            continue;
        *sys = p->p[i].sys;
        *user = p->p[i].user;
        return 0;
    }
    return -1;
}

/* Index of the key named by tpl[at..at+len), or -1. */
static long find_key(const char *name, size_t len, const char *const *keys,
                     size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strlen(keys[i]) == len && memcmp(keys[i], name, len) == 0)
            return (long)i;
    return -1;
}

enum mt_status mtx_prompt_render(struct mt_str tpl, const char *const *keys,
                                 const char *const *vals, size_t n,
                                 struct mt_buf *out)
{
    size_t i = 0;
    enum mt_status st = MT_OK;

    while (st == MT_OK && i < tpl.n) {
        const char *o = i + 1 < tpl.n ? strstr(tpl.p + i, "{{") : NULL;
        const char *c = o ? strstr(o + 2, "}}") : NULL;
        size_t stop = o && o < tpl.p + tpl.n ? (size_t)(o - tpl.p) : tpl.n;
        long k = -1;

        st = mtx_buf_append(out, tpl.p + i, stop - i);
        i = stop;
        if (st != MT_OK || i >= tpl.n || !c || c >= tpl.p + tpl.n) {
            if (st == MT_OK && i < tpl.n)
                st = mtx_buf_append(out, tpl.p + i, tpl.n - i);
            break;
        }
        k = find_key(o + 2, (size_t)(c - o - 2), keys, n);
        st = k < 0 ? mtx_buf_append(out, o, (size_t)(c + 2 - o))
                   : mtx_buf_append_str(out, vals[k] ? vals[k] : "");
        i = (size_t)(c + 2 - tpl.p);
    }
    return st;
}
