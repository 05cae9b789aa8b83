/* Generic immutable segment files: a checksummed header, a section table
 * and aligned sections, written atomically and read through mmap. Used by
 * the BM25 index, the id maps, the vector sets and the HNSW graphs. */
#ifndef MT_INDEX_SEGMENT_H
#define MT_INDEX_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "medtrust/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* On-disk layout, all integers little-endian:
 *
 *   header (64 bytes)
 *     0  magic[8]        chosen by the caller, e.g. "MTBM25\0\0"
 *     8  u32 container   MT_SEG_CONTAINER_VERSION
 *    12  u32 version     the caller's format version
 *    16  u64 file_size   whole file, so truncation is caught first
 *    24  u64 table_off   offset of the section table
 *    32  u32 nsections
 *    36  u32 align       section alignment, a power of two 16..4096;
 *                        0 means 16 (files written before the field)
 *    40  u64 table_crc   CRC32C of the section table
 *    48  u64 reserved    0
 *    56  u64 header_crc  CRC32C of bytes 0..55
 *   sections, each starting at a multiple of align, zero padded
 *   section table: nsections entries of 32 bytes
 *     u32 id (four characters, e.g. MT_SEG_ID('P','O','S','T')), u32 0,
 *     u64 offset, u64 size, u64 CRC32C of the section's bytes
 *
 * Checksums are CRC32C (Castagnoli) held in 64-bit fields, so a wider hash
 * can replace them under a new container version. */
#define MT_SEG_CONTAINER_VERSION 1u
#define MT_SEG_HEADER_SIZE 64u
#define MT_SEG_ENTRY_SIZE 32u
#define MT_SEG_ALIGN 16u /* the default and smallest section alignment */
#define MT_SEG_MAX_ALIGN 4096u
#define MT_SEG_MAX_SECTIONS 1024u
#define MT_SEG_ID(a, b, c, d)                                                  \
    ((uint32_t)(unsigned char)(a) | (uint32_t)(unsigned char)(b) << 8 |        \
     (uint32_t)(unsigned char)(c) << 16 | (uint32_t)(unsigned char)(d) << 24)

/* CRC32C of n bytes at p, continuing from 'crc' (start with 0). Uses the
 * SSE4.2 instruction when the CPU has it. Thread-safe. */
uint32_t mtx_crc32c(uint32_t crc, const void *p, size_t n);

/* ==== Writer ==== */
struct mt_seg_writer;

/* Creates "<path>.tmp" for writing a segment with the given 8-byte magic
 * and caller format version. On success *out owns the writer: finish it
 * with mtx_seg_writer_commit() or drop it with mtx_seg_writer_abort(). */
enum mt_status mtx_seg_writer_open(const char *path, const char magic[8],
                                   uint32_t version, struct mt_seg_writer **out,
                                   struct mt_error *err);

/* Aligns every section to 'align' bytes (a power of two from MT_SEG_ALIGN
 * to MT_SEG_MAX_ALIGN) instead of 16, so that mmapped arrays meet a
 * kernel's alignment; only before the first section (else MT_EINVAL). */
enum mt_status mtx_seg_writer_set_align(struct mt_seg_writer *w, uint32_t align,
                                        struct mt_error *err);

/* Starts section 'id' (ends the previous one). Ids must be unique. */
enum mt_status mtx_seg_writer_begin(struct mt_seg_writer *w, uint32_t id,
                                    struct mt_error *err);

/* Appends n bytes to the current section. */
enum mt_status mtx_seg_writer_write(struct mt_seg_writer *w, const void *p,
                                    size_t n, struct mt_error *err);

/* Ends the last section, writes the table and header, fsyncs, renames the
 * temporary file over 'path' and fsyncs the directory, so readers see the
 * old file or the complete new one. Frees w in every case. */
enum mt_status mtx_seg_writer_commit(struct mt_seg_writer *w,
                                     struct mt_error *err);

/* Removes the temporary file and frees w. NULL is allowed. */
void mtx_seg_writer_abort(struct mt_seg_writer *w);

/* ==== Reader ==== */
struct mt_seg;

/* Skip the section CRCs at open (the header, the table, the bounds and
 * the padding are still checked); the caller checks the sections it reads
 * at open with mtx_seg_verify() and the rest on demand with
 * mtx_seg_verify_all(). For large segments whose pages should not all be
 * read before the first search (an index of 41.8M chunks is 28 GB). */
#define MT_SEG_LAZY_CRC 1u

/* Maps 'path' read-only and checks magic, container version, size, header
 * and table checksums, section bounds and (unless MT_SEG_LAZY_CRC) every
 * section checksum. Damage is MT_EPARSE with a message naming the file
 * and, where it applies, the section. On success *out owns a handle (close
 * with mtx_seg_close()); on failure *out is left unchanged. */
enum mt_status mtx_seg_open(const char *path, const char magic[8],
                            unsigned flags, struct mt_seg **out,
                            struct mt_error *err);

/* As mtx_seg_open() over n bytes in memory that the caller keeps valid and
 * unchanged until mtx_seg_close(); 'name' is used in messages and copied. */
enum mt_status mtx_seg_open_mem(const void *data, size_t n, const char *name,
                                const char magic[8], unsigned flags,
                                struct mt_seg **out, struct mt_error *err);

/* Unmaps and frees. NULL is allowed. */
/* Tells the kernel a mapped segment is read at random from here on
 * (madvise MADV_RANDOM: no readahead around a fault), so that a file
 * larger than the memory left for it pages in what a search touches
 * rather than windows around it. A hint: errors are ignored. */
void mtx_seg_advise_random(const struct mt_seg *s);

void mtx_seg_close(struct mt_seg *s);

/* The caller's format version from the header. */
uint32_t mtx_seg_version(const struct mt_seg *s);

/* The file name given at open; valid until mtx_seg_close(). */
const char *mtx_seg_name(const struct mt_seg *s);

/* Total mapped size in bytes. */
size_t mtx_seg_size(const struct mt_seg *s);

/* Finds section 'id': *data (aligned as the file's sections are, at least
 * 16 bytes; read-only, valid until mtx_seg_close()) and *size. MT_ENOTFOUND
 * (with a message naming file and section) when absent. Thread-safe. */
enum mt_status mtx_seg_section(const struct mt_seg *s, uint32_t id,
                               const void **data, size_t *size,
                               struct mt_error *err);

/* Checks the CRC of section 'id'; MT_EPARSE on mismatch. Thread-safe. */
enum mt_status mtx_seg_verify(const struct mt_seg *s, uint32_t id,
                              struct mt_error *err);

/* Told the bytes just checked by mtx_seg_verify_all(). */
typedef void (*mtx_seg_step_fn)(uint64_t bytes, void *user);

/* Checks the CRC of every section not in 'skip' (0-terminated ids; NULL:
 * none skipped) in table order, MTX_SEG_VERIFY_STEP bytes at a time,
 * calling step (NULL: none) after each piece. A reader opened with
 * MT_SEG_LAZY_CRC calls it with the sections its open leaves (what it
 * reads checked at open) and with none on demand; with none skipped the
 * pieces add up to mtx_seg_payload(). MT_EPARSE naming the file and the
 * first damaged section. Thread-safe. */
#define MTX_SEG_VERIFY_STEP ((size_t)64 << 20)
enum mt_status mtx_seg_verify_all(const struct mt_seg *s, const uint32_t *skip,
                                  mtx_seg_step_fn step, void *user,
                                  struct mt_error *err);

/* The sum of the section sizes: what mtx_seg_verify_all() reads. */
uint64_t mtx_seg_payload(const struct mt_seg *s);

/* Writes the printable form of 'id' (4 characters, '?' for others) and a
 * NUL into buf[5]; returns buf. */
const char *mtx_seg_id_str(uint32_t id, char buf[5]);

#ifdef __cplusplus
}
#endif
#endif
