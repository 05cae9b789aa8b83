/* Segment files: CRC32C, the atomic streaming writer and the mmapped,
 * fully validated reader. Layout in segment.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "index/segment.h"
#include "medtrust/core.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "segment files are little-endian; add byte swapping for this host"
#endif

/* ==== CRC32C ==== */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] =
                (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xFF];
}

/* Slicing-by-8 software CRC over a pre-inverted state. */
static uint32_t crc_sw(uint32_t c, const unsigned char *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    while (n >= 8) {
        uint32_t lo;
        uint32_t hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^
            crc_tab[5][(lo >> 16) & 0xFF] ^ crc_tab[4][lo >> 24] ^
            crc_tab[3][hi & 0xFF] ^ crc_tab[2][(hi >> 8) & 0xFF] ^
            crc_tab[1][(hi >> 16) & 0xFF] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SEG_HAVE_HW_CRC 1
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const unsigned char *p, size_t n)
{
    uint64_t c64 = c;

    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

uint32_t mtx_crc32c(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    uint32_t c = ~crc;

#ifdef SEG_HAVE_HW_CRC
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(c, b, n);
#endif
    return ~crc_sw(c, b, n);
}

/* ==== Little-endian helpers (host order checked above) ==== */

static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

const char *mtx_seg_id_str(uint32_t id, char buf[5])
{
    for (int i = 0; i < 4; i++) {
        unsigned c = (id >> (8 * i)) & 0xFF;
        buf[i] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
    }
    buf[4] = '\0';
    return buf;
}

/* ==== Writer ==== */

#define WBUF_SIZE (1u << 16)

struct seg_entry {
    uint32_t id;
    uint32_t crc;
    uint64_t off;
    uint64_t size;
};

struct mt_seg_writer {
    struct mtx_file_atomic file; /* path.tmp until committed */
    const char *path;            /* file.path */
    unsigned char magic[8];
    uint32_t version;
    uint32_t align;
    uint64_t pos; /* file offset of the next byte, buffered ones included */
    unsigned char *buf;
    size_t blen;
    struct seg_entry *ents;
    size_t n;
    size_t cap;
    int in_section;
};

static enum mt_status w_flush(struct mt_seg_writer *w, struct mt_error *err)
{
    enum mt_status st = mtx_file_atomic_write(&w->file, w->buf, w->blen, err);

    w->blen = 0;
    return st;
}

/* Buffered write without checksumming (padding, table). */
static enum mt_status w_raw(struct mt_seg_writer *w, const void *p, size_t n,
                            struct mt_error *err)
{
    const unsigned char *s = p;
    enum mt_status st = MT_OK;

    while (n && st == MT_OK) {
        size_t room = WBUF_SIZE - w->blen;
        size_t c = n < room ? n : room;
        memcpy(w->buf + w->blen, s, c);
        w->blen += c;
        w->pos += c;
        s += c;
        n -= c;
        if (w->blen == WBUF_SIZE)
            st = w_flush(w, err);
    }
    return st;
}

static enum mt_status w_pad(struct mt_seg_writer *w, struct mt_error *err)
{
    static const unsigned char zero[MT_SEG_MAX_ALIGN];
    size_t r = (size_t)(w->pos % w->align);

    return r ? w_raw(w, zero, w->align - r, err) : MT_OK;
}

void mtx_seg_writer_abort(struct mt_seg_writer *w)
{
    if (!w)
        return;
    mtx_file_atomic_abort(&w->file);
    mt_free(w->buf);
    mt_free(w->ents);
    mt_free(w);
}

static enum mt_status w_alloc(const char *path, struct mt_seg_writer **out,
                              struct mt_error *err)
{
    struct mt_seg_writer *w = mt_calloc(1, sizeof *w);

    if (!w)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    w->file.fd = -1;
    w->buf = mt_malloc(WBUF_SIZE);
    if (!w->buf) {
        mtx_seg_writer_abort(w);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    }
    *out = w;
    return MT_OK;
}

enum mt_status mtx_seg_writer_open(const char *path, const char magic[8],
                                   uint32_t version, struct mt_seg_writer **out,
                                   struct mt_error *err)
{
    static const unsigned char zero[MT_SEG_HEADER_SIZE];
    struct mt_seg_writer *w = NULL;
    enum mt_status st = w_alloc(path, &w, err);

    if (st != MT_OK || !w) /* !w never holds; it tells gcc so */
        return st != MT_OK ? st : MT_EINTERNAL;
    memcpy(w->magic, magic, 8);
    w->version = version;
    w->align = MT_SEG_ALIGN;
    st = mtx_file_atomic_begin(&w->file, path, 0644, err);
    if (st != MT_OK) {
        mtx_seg_writer_abort(w);
        return st;
    }
    w->path = w->file.path;
    st = w_raw(w, zero, sizeof zero, err); /* header placeholder */
    if (st != MT_OK) {
        mtx_seg_writer_abort(w);
        return st;
    }
    *out = w;
    return MT_OK;
}

enum mt_status mtx_seg_writer_set_align(struct mt_seg_writer *w, uint32_t align,
                                        struct mt_error *err)
{
    if (w->n || align < MT_SEG_ALIGN || align > MT_SEG_MAX_ALIGN ||
        (align & (align - 1)))
        return mt_fail(err, MT_EINVAL, "%s: bad section alignment %u", w->path,
                       (unsigned)align);
    w->align = align;
    return MT_OK;
}

static void w_end_section(struct mt_seg_writer *w)
{
    if (!w->in_section)
        return;
    w->ents[w->n - 1].size = w->pos - w->ents[w->n - 1].off;
    w->in_section = 0;
}

static enum mt_status w_reserve_entry(struct mt_seg_writer *w,
                                      struct mt_error *err)
{
    struct seg_entry *e;
    size_t cap;

    if (w->n < w->cap)
        return MT_OK;
    if (w->n >= MT_SEG_MAX_SECTIONS)
        return mt_fail(err, MT_ELIMIT, "%s: too many sections", w->path);
    cap = w->cap ? w->cap * 2 : 8;
    e = mt_realloc(w->ents, cap * sizeof *e);
    if (!e)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", w->path);
    w->ents = e;
    w->cap = cap;
    return MT_OK;
}

enum mt_status mtx_seg_writer_begin(struct mt_seg_writer *w, uint32_t id,
                                    struct mt_error *err)
{
    enum mt_status st;
    char ids[5];

    w_end_section(w);
    for (size_t i = 0; i < w->n; i++)
        if (w->ents[i].id == id)
            return mt_fail(err, MT_EINVAL, "%s: duplicate section '%s'",
                           w->path, mtx_seg_id_str(id, ids));
    st = w_reserve_entry(w, err);
    if (st != MT_OK)
        return st;
    st = w_pad(w, err);
    if (st != MT_OK)
        return st;
    w->ents[w->n].id = id;
    w->ents[w->n].crc = 0;
    w->ents[w->n].off = w->pos;
    w->ents[w->n].size = 0;
    w->n++;
    w->in_section = 1;
    return MT_OK;
}

enum mt_status mtx_seg_writer_write(struct mt_seg_writer *w, const void *p,
                                    size_t n, struct mt_error *err)
{
    if (!w->in_section)
        return mt_fail(err, MT_EINVAL, "%s: write outside a section", w->path);
    if (n == 0)
        return MT_OK;
    w->ents[w->n - 1].crc = mtx_crc32c(w->ents[w->n - 1].crc, p, n);
    return w_raw(w, p, n, err);
}

static enum mt_status w_table(struct mt_seg_writer *w, uint32_t *table_crc,
                              struct mt_error *err)
{
    uint32_t crc = 0;

    for (size_t i = 0; i < w->n; i++) {
        unsigned char e[MT_SEG_ENTRY_SIZE] = {0};
        put32(e, w->ents[i].id);
        put64(e + 8, w->ents[i].off);
        put64(e + 16, w->ents[i].size);
        put64(e + 24, w->ents[i].crc);
        crc = mtx_crc32c(crc, e, sizeof e);
        enum mt_status st = w_raw(w, e, sizeof e, err);
        if (st != MT_OK)
            return st;
    }
    *table_crc = crc;
    return MT_OK;
}

static enum mt_status w_header(struct mt_seg_writer *w, uint64_t table_off,
                               uint32_t table_crc, struct mt_error *err)
{
    unsigned char h[MT_SEG_HEADER_SIZE] = {0};

    memcpy(h, w->magic, 8);
    put32(h + 8, MT_SEG_CONTAINER_VERSION);
    put32(h + 12, w->version);
    put64(h + 16, w->pos);
    put64(h + 24, table_off);
    put32(h + 32, (uint32_t)w->n);
    put32(h + 36, w->align == MT_SEG_ALIGN ? 0 : w->align); /* 0: as before */
    put64(h + 40, table_crc);
    put64(h + 56, mtx_crc32c(0, h, 56));
    if (mtx_file_pwrite_all(w->file.fd, h, sizeof h, 0) != MT_OK)
        return mt_fail(err, mtx_file_errno_status(errno),
                       "%s: write header: %s", w->file.tmp, strerror(errno));
    return MT_OK;
}

static enum mt_status w_finish(struct mt_seg_writer *w, struct mt_error *err)
{
    uint64_t table_off;
    uint32_t table_crc = 0;

    enum mt_status st;

    w_end_section(w);
    st = w_pad(w, err);
    table_off = w->pos;
    if (st == MT_OK)
        st = w_table(w, &table_crc, err);
    if (st == MT_OK)
        st = w_flush(w, err);
    if (st == MT_OK)
        st = w_header(w, table_off, table_crc, err);
    return st == MT_OK ? mtx_file_atomic_commit(&w->file, err) : st;
}

enum mt_status mtx_seg_writer_commit(struct mt_seg_writer *w,
                                     struct mt_error *err)
{
    enum mt_status st = w_finish(w, err);

    mtx_seg_writer_abort(w); /* the file is released: nothing unlinked */
    return st;
}

/* ==== Reader ==== */

struct mt_seg {
    const unsigned char *base;
    size_t size;
    int mapped;
    char *name;
    uint32_t version;
    uint32_t n;
    uint32_t align;
    const unsigned char *table;
};

void mtx_seg_advise_random(const struct mt_seg *s)
{
    if (s && s->mapped && s->size)
        (void)madvise((void *)(uintptr_t)s->base, s->size, MADV_RANDOM);
}

void mtx_seg_close(struct mt_seg *s)
{
    if (!s)
        return;
    if (s->mapped && s->size)
        munmap((void *)(uintptr_t)s->base, s->size);
    mt_free(s->name);
    mt_free(s);
}

uint32_t mtx_seg_version(const struct mt_seg *s)
{
    return s->version;
}

const char *mtx_seg_name(const struct mt_seg *s)
{
    return s->name;
}

size_t mtx_seg_size(const struct mt_seg *s)
{
    return s->size;
}

static enum mt_status bad(const struct mt_seg *s, struct mt_error *err,
                          const char *what)
{
    return mt_fail(err, MT_EPARSE, "%s: %s", s->name, what);
}

static enum mt_status check_header(struct mt_seg *s, const char magic[8],
                                   struct mt_error *err)
{
    const unsigned char *h = s->base;
    uint64_t fsize;
    uint64_t toff;

    if (s->size < MT_SEG_HEADER_SIZE)
        return mt_fail(err, MT_EPARSE, "%s: truncated header (%zu bytes)",
                       s->name, s->size);
    if (memcmp(h, magic, 8) != 0)
        return bad(s, err, "not a segment of this kind (bad magic)");
    if (get64(h + 56) != mtx_crc32c(0, h, 56))
        return bad(s, err, "header checksum mismatch");
    if (get32(h + 8) != MT_SEG_CONTAINER_VERSION)
        return bad(s, err, "unsupported segment container version");
    fsize = get64(h + 16);
    if (fsize != s->size)
        return mt_fail(err, MT_EPARSE,
                       "%s: truncated or extended: header says %llu bytes, "
                       "file has %zu",
                       s->name, (unsigned long long)fsize, s->size);
    s->version = get32(h + 12);
    s->n = get32(h + 32);
    s->align = get32(h + 36) ? get32(h + 36) : MT_SEG_ALIGN;
    if (s->align < MT_SEG_ALIGN || s->align > MT_SEG_MAX_ALIGN ||
        (s->align & (s->align - 1)))
        return bad(s, err, "bad section alignment");
    toff = get64(h + 24);
    if (s->n > MT_SEG_MAX_SECTIONS || toff < MT_SEG_HEADER_SIZE ||
        toff % s->align || toff > s->size ||
        s->size - toff != (uint64_t)s->n * MT_SEG_ENTRY_SIZE)
        return bad(s, err, "section table out of bounds");
    s->table = s->base + toff;
    if (get64(h + 40) != mtx_crc32c(0, s->table, s->n * MT_SEG_ENTRY_SIZE))
        return bad(s, err, "section table checksum mismatch");
    return MT_OK;
}

/* Checks the CRC of the section at table entry e, a step at a time. */
static enum mt_status entry_verify(const struct mt_seg *s,
                                   const unsigned char *e, mtx_seg_step_fn step,
                                   void *user, struct mt_error *err)
{
    const unsigned char *p = s->base + get64(e + 8);
    size_t left = (size_t)get64(e + 16);
    uint32_t crc = 0;
    char ids[5];

    do {
        size_t n = left < MTX_SEG_VERIFY_STEP ? left : MTX_SEG_VERIFY_STEP;
        crc = mtx_crc32c(crc, p, n);
        p += n;
        left -= n;
        if (step && n)
            step(n, user);
    } while (left);
    if (get64(e + 24) != crc)
        return mt_fail(err, MT_EPARSE, "%s: section '%s' checksum mismatch",
                       s->name, mtx_seg_id_str(get32(e), ids));
    return MT_OK;
}

static enum mt_status check_entry(const struct mt_seg *s, uint32_t i,
                                  unsigned flags, struct mt_error *err)
{
    const unsigned char *e = s->table + (size_t)i * MT_SEG_ENTRY_SIZE;
    uint32_t id = get32(e);
    uint64_t off = get64(e + 8);
    uint64_t size = get64(e + 16);
    char ids[5];

    mtx_seg_id_str(id, ids);
    if (off % s->align || off < MT_SEG_HEADER_SIZE ||
        off > (uint64_t)(s->table - s->base) ||
        size > (uint64_t)(s->table - s->base) - off)
        return mt_fail(err, MT_EPARSE, "%s: section '%s' out of bounds",
                       s->name, ids);
    for (uint32_t j = 0; j < i; j++)
        if (get32(s->table + (size_t)j * MT_SEG_ENTRY_SIZE) == id)
            return mt_fail(err, MT_EPARSE, "%s: duplicate section '%s'",
                           s->name, ids);
    return flags & MT_SEG_LAZY_CRC ? MT_OK
                                   : entry_verify(s, e, NULL, NULL, err);
}

/* Sections must lie in table order, back to back, each followed by zero
 * padding to the next multiple of the alignment, so that every byte of the file
 * is covered by a checksum or by this check. Runs after check_entry. */
static enum mt_status check_layout(const struct mt_seg *s, struct mt_error *err)
{
    uint64_t pos = MT_SEG_HEADER_SIZE;
    uint64_t toff = (uint64_t)(s->table - s->base);
    char ids[5];

    for (uint32_t i = 0; i < s->n; i++) {
        const unsigned char *e = s->table + (size_t)i * MT_SEG_ENTRY_SIZE;
        uint64_t end;
        mtx_seg_id_str(get32(e), ids);
        if (get64(e + 8) != pos)
            return mt_fail(err, MT_EPARSE, "%s: section '%s' misplaced",
                           s->name, ids);
        pos += get64(e + 16);
        end = (pos + s->align - 1) / s->align * s->align;
        for (; pos < end && pos < toff; pos++)
            if (s->base[pos] != 0)
                return mt_fail(err, MT_EPARSE,
                               "%s: section '%s': damaged padding", s->name,
                               ids);
    }
    if (pos != toff)
        return bad(s, err, "section table misplaced");
    return MT_OK;
}

static enum mt_status seg_parse(struct mt_seg *s, const char magic[8],
                                unsigned flags, struct mt_error *err)
{
    enum mt_status st = check_header(s, magic, err);

    for (uint32_t i = 0; st == MT_OK && i < s->n; i++)
        st = check_entry(s, i, flags, err);
    return st == MT_OK ? check_layout(s, err) : st;
}

static struct mt_seg *seg_new(const char *name, struct mt_error *err)
{
    struct mt_seg *s = mt_calloc(1, sizeof *s);

    if (s)
        s->name = mt_strdup(name);
    if (!s || !s->name) {
        mtx_seg_close(s);
        mt_fail(err, MT_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    return s;
}

enum mt_status mtx_seg_open_mem(const void *data, size_t n, const char *name,
                                const char magic[8], unsigned flags,
                                struct mt_seg **out, struct mt_error *err)
{
    struct mt_seg *s = seg_new(name, err);
    enum mt_status st;

    if (!s)
        return MT_ENOMEM;
    s->base = data;
    s->size = data ? n : 0;
    st = seg_parse(s, magic, flags, err);
    if (st != MT_OK) {
        mtx_seg_close(s);
        return st;
    }
    *out = s;
    return MT_OK;
}

static enum mt_status seg_map(struct mt_seg *s, const char *path,
                              struct mt_error *err)
{
    struct stat sb;
    void *p;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return mt_fail(err, errno == ENOENT ? MT_ENOTFOUND : MT_EIO,
                       "%s: open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || sb.st_size < 0) {
        close(fd);
        return mt_fail(err, MT_EIO, "%s: stat: %s", path, strerror(errno));
    }
    s->size = (size_t)sb.st_size;
    if (s->size == 0) {
        close(fd);
        return MT_OK; /* check_header reports the truncation */
    }
    p = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        s->size = 0;
        return mt_fail(err, MT_EIO, "%s: mmap: %s", path, strerror(errno));
    }
    s->base = p;
    s->mapped = 1;
    return MT_OK;
}

enum mt_status mtx_seg_open(const char *path, const char magic[8],
                            unsigned flags, struct mt_seg **out,
                            struct mt_error *err)
{
    struct mt_seg *s = seg_new(path, err);
    enum mt_status st;

    if (!s)
        return MT_ENOMEM;
    st = seg_map(s, path, err);
    if (st == MT_OK)
        st = seg_parse(s, magic, flags, err);
    if (st != MT_OK) {
        mtx_seg_close(s);
        return st;
    }
    *out = s;
    return MT_OK;
}

static const unsigned char *find_entry(const struct mt_seg *s, uint32_t id)
{
    for (uint32_t i = 0; i < s->n; i++) {
        const unsigned char *e = s->table + (size_t)i * MT_SEG_ENTRY_SIZE;
        if (get32(e) == id)
            return e;
    }
    return NULL;
}

enum mt_status mtx_seg_section(const struct mt_seg *s, uint32_t id,
                               const void **data, size_t *size,
                               struct mt_error *err)
{
    const unsigned char *e = find_entry(s, id);
    char ids[5];

    if (!e)
        return mt_fail(err, MT_ENOTFOUND, "%s: missing section '%s'", s->name,
                       mtx_seg_id_str(id, ids));
    *data = s->base + get64(e + 8);
    *size = (size_t)get64(e + 16);
    return MT_OK;
}

enum mt_status mtx_seg_verify(const struct mt_seg *s, uint32_t id,
                              struct mt_error *err)
{
    const unsigned char *e = find_entry(s, id);
    char ids[5];

    if (!e)
        return mt_fail(err, MT_ENOTFOUND, "%s: missing section '%s'", s->name,
                       mtx_seg_id_str(id, ids));
    return entry_verify(s, e, NULL, NULL, err);
}

static int skipped(const uint32_t *skip, uint32_t id)
{
    for (; skip && *skip; skip++)
        if (*skip == id)
            return 1;
    return 0;
}

enum mt_status mtx_seg_verify_all(const struct mt_seg *s, const uint32_t *skip,
                                  mtx_seg_step_fn step, void *user,
                                  struct mt_error *err)
{
    enum mt_status st = MT_OK;

    for (uint32_t i = 0; st == MT_OK && i < s->n; i++) {
        const unsigned char *e = s->table + (size_t)i * MT_SEG_ENTRY_SIZE;
        if (!skipped(skip, get32(e)))
            st = entry_verify(s, e, step, user, err);
    }
    return st;
}

uint64_t mtx_seg_payload(const struct mt_seg *s)
{
    uint64_t n = 0;

    for (uint32_t i = 0; i < s->n; i++)
        n += get64(s->table + (size_t)i * MT_SEG_ENTRY_SIZE + 16);
    return n;
}
