/* Connection guards (guard.c): framing checks against request smuggling,
 * the query-argument cap, and the absolute header deadline. Private to
 * the server; the only server file that needs libmicrohttpd's types
 * besides server.c. */
#ifndef MT_SERVER_GUARD_H
#define MT_SERVER_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "server/srv_int.h"

/* The most query arguments a request may carry (431 past it). */
#define SRV_MAX_ARGS 64

/* How the request's body is framed. */
struct srv_framing {
    int has_body;
    int chunked;
    uint64_t length; /* Content-Length, 0 when chunked or none */
};

/* Checks the framing headers once they are all in. Returns 0 (and fills
 * 'out'), or the status to answer before closing: 400 for
 * Content-Length with Transfer-Encoding, Content-Length headers that
 * disagree or a malformed one (RFC 9112 section 6.3), 501 for a
 * Transfer-Encoding other than chunked; 'why' says which. */
unsigned mtx_srv_framing(struct MHD_Connection *c, struct srv_framing *out,
                         char *why, size_t n);

/* Counts the query arguments of 'uri' (MHD's URI log callback, before
 * MHD parses them) and, past 'max', cuts the query so MHD stores none
 * (500 arguments would exhaust its connection memory and leave the client
 * without an answer). Returns the count. */
size_t mtx_srv_cut_args(char *uri, size_t max);

/* MHD_OPTION_NOTIFY_CONNECTION callback: tracks each connection for the
 * header deadline ('cls' is the server). */
void mtx_srv_conn_notify(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_ConnectionNotificationCode code);

/* Marks the connection as waiting for a request line and headers (1:
 * after a response, the deadline starts now) or past them (0). */
void mtx_srv_conn_phase(struct mt_server *s, struct MHD_Connection *c,
                        int in_headers);

/* Marks that the connection's request line has arrived (its headers may
 * still be on the way): the header deadline then warns when it closes
 * it, where a connection that never sent a request line (a browser's
 * preconnect socket, an idle keep-alive) is closed quietly. */
void mtx_srv_conn_line(struct mt_server *s, struct MHD_Connection *c);

/* Starts and stops the thread that shuts down connections still without
 * a complete request line and headers header_timeout_s after they could
 * start (0 = no deadline). */
enum mt_status mtx_srv_guard_start(struct mt_server *s, struct mt_error *err);
void mtx_srv_guard_stop(struct mt_server *s);

#endif
