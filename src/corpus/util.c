/* Small helpers the importers share: white-space folding and SHA-1
 * (MedQuAD's document ids are SHA-1 prefixes). */
#include <stdio.h>
#include <string.h>

#include "corpus/corpus_int.h"

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Where folding first changes p[0..n) (n: nowhere): the first white
 * space that is not one space between two other characters. Most captured
 * fields need no change, and this costs them one compare a byte. */
static size_t first_unfolded(const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if ((unsigned char)p[i] > ' ' || !is_space(p[i]))
            continue;
        if (p[i] != ' ' || i == 0 || i + 1 == n || is_space(p[i + 1]))
            return i;
    }
    return n;
}

void mtx_squash_space(struct mt_buf *b)
{
    size_t i = b->data ? first_unfolded(b->data, b->len) : b->len;
    size_t o = i;
    int space = 1; /* drops leading space; i is white space or the end */

    for (; i < b->len; i++) {
        if (is_space(b->data[i])) {
            space = 1;
            continue;
        }
        if (space && o > 0)
            b->data[o++] = ' ';
        space = 0;
        b->data[o++] = b->data[i];
    }
    b->len = o;
    if (b->data)
        b->data[o] = '\0';
}

const char *mtx_buf_str(const struct mt_buf *b)
{
    return b->data ? b->data : "";
}

/* ==== SHA-1 (FIPS 180-4), for ids only, never for security ==== */

struct sha1 {
    uint32_t h[5];
    uint64_t len;
    unsigned char blk[64];
    size_t n;
};

static uint32_t rol(uint32_t x, int k)
{
    return (x << k) | (x >> (32 - k));
}

static uint32_t round_f(int t, uint32_t b, uint32_t c, uint32_t d)
{
    if (t < 20)
        return ((b & c) | (~b & d)) + 0x5a827999u;
    if (t < 40)
        return (b ^ c ^ d) + 0x6ed9eba1u;
    if (t < 60)
        return ((b & c) | (b & d) | (c & d)) + 0x8f1bbcdcu;
    return (b ^ c ^ d) + 0xca62c1d6u;
}

static void sha1_block(struct sha1 *s, const unsigned char *p)
{
    uint32_t w[80];
    uint32_t v[5];
    uint32_t t;
    int i;

    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    memcpy(v, s->h, sizeof v);
    for (i = 0; i < 80; i++) {
        t = rol(v[0], 5) + round_f(i, v[1], v[2], v[3]) + v[4] + w[i];
        v[4] = v[3];
        v[3] = v[2];
        v[2] = rol(v[1], 30);
        v[1] = v[0];
        v[0] = t;
    }
    for (i = 0; i < 5; i++)
        s->h[i] += v[i];
}

static void sha1_add(struct sha1 *s, const unsigned char *p, size_t n)
{
    s->len += n;
    while (n > 0) {
        size_t take = 64 - s->n < n ? 64 - s->n : n;

        memcpy(s->blk + s->n, p, take);
        s->n += take;
        p += take;
        n -= take;
        if (s->n == 64) {
            sha1_block(s, s->blk);
            s->n = 0;
        }
    }
}

void mtx_sha1_hex(const void *p, size_t n, char out[41])
{
    static const char hex[] = "0123456789abcdef";
    struct sha1 s = {
        {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u},
        0,
        {0},
        0};
    unsigned char pad[72] = {0x80};
    uint64_t bits = (uint64_t)n * 8;
    size_t padn = n % 64 < 56 ? 56 - n % 64 : 120 - n % 64;
    int i;

    sha1_add(&s, p, n);
    for (i = 0; i < 8; i++)
        pad[padn + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_add(&s, pad, padn + 8);
    for (i = 0; i < 20; i++) {
        unsigned char b = (unsigned char)(s.h[i / 4] >> (24 - 8 * (i % 4)));

        out[2 * i] = hex[b >> 4];
        out[2 * i + 1] = hex[b & 15];
    }
    out[40] = '\0';
}

void mtx_error_suffix(struct mt_error *err, const char *what)
{
    size_t n;

    if (!err)
        return;
    n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, " (%s)", what);
}
