/* Crash-safe record of finished notes for `mediqa --resume`: an
 * append-only JSONL file, one {"id","line"} object per note, each write
 * followed by fdatasync, so a killed run keeps every note it finished. */
#ifndef MT_CLI_JOURNAL_H
#define MT_CLI_JOURNAL_H

#include "medtrust/status.h"

struct journal;

/* Called for each finished note found when resuming. */
typedef void (*journal_fn)(const char *id, const char *line, void *user);

/* Opens 'path'. With 'resume', replays its complete lines through fn and
 * cuts a torn last line (a crash mid-write); without, starts it empty. */
enum mt_status journal_open(const char *path, int resume, journal_fn fn,
                            void *user, struct journal **out,
                            struct mt_error *err);

/* Appends one finished note and syncs it to disk. Thread-safe. */
enum mt_status journal_append(struct journal *j, const char *id,
                              const char *line, struct mt_error *err);

void journal_close(struct journal *j);

/* Writes 'data' to 'path' atomically: a temporary file, fsync, rename. */
enum mt_status write_atomic(const char *path, const char *data, size_t n,
                            struct mt_error *err);

#endif
