/* Synthetic corpus generator for benchmarks: word frequencies and
 * chunk lengths are learnt from a real JSONL corpus (MedQuAD), then N
 * chunks of about 1,000 characters are sampled with a fixed seed.
 * Usage: gen_corpus CORPUS.jsonl N [SEED] > out.jsonl */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

struct word {
    char *w;
    uint64_t n;
};

struct vocab {
    struct word *v;
    size_t n, cap;
    size_t *hash; /* open addressing, index+1 */
    size_t hcap;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void rehash(struct vocab *vb)
{
    size_t i;

    free(vb->hash);
    vb->hcap = vb->hcap ? vb->hcap * 2 : 1 << 16;
    vb->hash = calloc(vb->hcap, sizeof *vb->hash);
    for (i = 0; i < vb->n; i++) {
        size_t h = fnv(vb->v[i].w, strlen(vb->v[i].w)) & (vb->hcap - 1);
        while (vb->hash[h])
            h = (h + 1) & (vb->hcap - 1);
        vb->hash[h] = i + 1;
    }
}

static void add_word(struct vocab *vb, const char *s, size_t n)
{
    size_t h;

    if (vb->n * 2 >= vb->hcap)
        rehash(vb);
    h = fnv(s, n) & (vb->hcap - 1);
    while (vb->hash[h]) {
        struct word *w = &vb->v[vb->hash[h] - 1];
        if (strlen(w->w) == n && memcmp(w->w, s, n) == 0) {
            w->n++;
            return;
        }
        h = (h + 1) & (vb->hcap - 1);
    }
    if (vb->n == vb->cap) {
        vb->cap = vb->cap ? vb->cap * 2 : 4096;
        vb->v = realloc(vb->v, vb->cap * sizeof *vb->v);
    }
    vb->v[vb->n].w = strndup(s, n);
    vb->v[vb->n].n = 1;
    vb->hash[h] = ++vb->n;
}

static void learn(struct vocab *vb, const char *text)
{
    const char *p = text;

    while (*p) {
        const char *s;
        while (*p && isspace((unsigned char)*p))
            p++;
        s = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (p > s && p - s < 40)
            add_word(vb, s, (size_t)(p - s));
    }
}

static size_t pick(const uint64_t *cum, size_t n)
{
    uint64_t r = rng() % cum[n - 1];
    size_t lo = 0, hi = n - 1;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cum[mid] > r)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void emit(const struct vocab *vb, const uint64_t *cum, size_t i)
{
    size_t len = 0;
    size_t target = 700 + (size_t)(rng() % 600); /* 700..1299 chars */

    printf("{\"id\":\"s%zu\",\"text\":\"", i);
    while (len < target) {
        const char *w = vb->v[pick(cum, vb->n)].w;
        const char *c;
        if (len)
            putchar(' ');
        for (c = w; *c; c++) {
            if (*c == '"' || *c == '\\')
                putchar('\\');
            if ((unsigned char)*c < 0x20)
                continue;
            putchar(*c);
        }
        len += strlen(w) + 1;
    }
    printf("\"}\n");
}

int main(int argc, char **argv)
{
    struct vocab vb = {0};
    char line[1 << 20];
    size_t n, i;
    uint64_t *cum;
    FILE *f;

    if (argc < 3) {
        fprintf(stderr, "usage: gen_corpus CORPUS.jsonl N [SEED]\n");
        return 1;
    }
    f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        json_t *t = o ? json_object_get(o, "text") : NULL;
        if (json_is_string(t))
            learn(&vb, json_string_value(t));
        json_decref(o);
    }
    fclose(f);
    n = strtoul(argv[2], NULL, 10);
    if (argc > 3)
        rng_state = strtoull(argv[3], NULL, 10);
    cum = malloc(vb.n * sizeof *cum);
    for (i = 0; i < vb.n; i++)
        cum[i] = (i ? cum[i - 1] : 0) + vb.v[i].n;
    for (i = 0; i < n; i++)
        emit(&vb, cum, i);
    fprintf(stderr, "gen_corpus: %zu chunks from a vocabulary of %zu words\n",
            n, vb.n);
    return 0;
}
