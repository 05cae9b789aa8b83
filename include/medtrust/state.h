/* medtrust's state: accounts, sessions, API tokens, settings, runs, run
 * events and the audit log, behind one handle with two engines: the
 * embedded default (SQLite, the tables of STORE_DIR/store.db) and
 * PostgreSQL (libpq), which many servers and workers share
 * (docs/architecture.md, "Past one machine"). The functions on the handle
 * are in accounts.h. One handle is used by one thread at a time. */
#ifndef MEDTRUST_STATE_H
#define MEDTRUST_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mt_state;

/* The environment variable that names the state when --state is not
 * given. */
#define MT_STATE_ENV "MEDTRUST_STATE"

/* 1 when 'url' names a PostgreSQL database (postgresql:// or
 * postgres://); such a state is shared by every node that names it. */
int mt_state_is_shared(const char *url);

/* The state a command names: 'given' (its --state), else $MEDTRUST_STATE;
 * NULL when neither names one (an empty value names none). */
const char *mt_state_url(const char *given);

/* Opens the state 'url': a PostgreSQL URL (connecting and applying the
 * state's migrations), or "sqlite:DIR" or a plain DIR for the embedded
 * state in that store folder (created and migrated like mt_store_open).
 * On success *out owns the handle (mt_state_close); on failure *out is
 * left unchanged and 'err' says why, never with a password. */
enum mt_status mt_state_open(const char *url, struct mt_state **out,
                             struct mt_error *err);

/* The embedded state inside an open store, which 's' keeps owning: the
 * handle must be closed before the store. */
enum mt_status mt_state_from_store(struct mt_store *s, struct mt_state **out,
                                   struct mt_error *err);

/* Closes the handle (and the store or connection it owns); NULL is
 * allowed. */
void mt_state_close(struct mt_state *st);

/* "sqlite" or "postgresql". */
const char *mt_state_engine(const struct mt_state *st);

/* The state's location for messages: the store folder, or the URL
 * without its password (owned by the handle). */
const char *mt_state_where(const struct mt_state *st);

/* How many times a PostgreSQL handle reconnected after a lost connection
 * (0 for SQLite). */
uint64_t mt_state_reconnects(const struct mt_state *st);

#ifdef __cplusplus
}
#endif
#endif
