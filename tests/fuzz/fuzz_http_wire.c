/* libFuzzer harness for the server's HTTP parsing on the wire: the input
 * is raw bytes written to a real `medtrust serve` (libmicrohttpd) on
 * 127.0.0.1, so the request line, headers, Content-Length and chunked
 * bodies go through libmicrohttpd's parser and the server's guards
 * (framing checks against smuggling, the query-argument cap, the checks
 * on headers before a body is read, bounded chunked buffering), not only
 * the router (fuzz_http.c). Each input is also given to
 * mtx_srv_cut_args as a request line. The property checked besides the
 * sanitizers: every answer starts with "HTTP/1.1 " and the server keeps
 * answering /v1/health. Loopback only. Build as fuzz_http.c (the same
 * library and libraries), with this file:
 *   clang ... tests/fuzz/fuzz_http_wire.c build/fuzz/libmedtrust.a ...
 *     -o build/fuzz/fuzz_http_wire
 *   build/fuzz/fuzz_http_wire -max_len=16384 tests/fuzz/http_wire_seeds */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/jsonl.h"
#include "medtrust/core.h"
#include "server/guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mt_server *srv;
static uint16_t port;

static void start(void)
{
    static char dir[] = "/tmp/mt-fuzz-wire-XXXXXX";
    struct mt_server_params p;
    struct mt_state *s = NULL;
    char db[64];

    mtx_jsonl_init_alloc();
    if (!mkdtemp(dir))
        abort();
    snprintf(db, sizeof db, "%s/db", dir);
    if (mt_state_open(db, &s, NULL) != MT_OK)
        abort();
    mt_user_add(s, "fuzz", "fuzz-password", MT_ROLE_ADMIN, NULL, NULL);
    mt_state_close(s);
    mt_server_default_params(&p);
    p.db_dir = db;
    p.listen = "127.0.0.1:0";
    p.rate_per_s = 0;
    p.llm_jobs = 1;
    p.timeout_s = 2;
    p.header_timeout_s = 2;
    p.max_conns_per_ip = 0;
    p.login_failures = 0; /* guessing is not the point here */
    if (mt_server_start(&p, &srv, NULL) != MT_OK)
        abort();
    port = mt_server_port(srv);
}

static int dial(void)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        abort(); /* the server stopped accepting */
    return fd;
}

/* Reads the answer until the server closes or 'ms' of silence. */
static size_t drain(int fd, char *buf, size_t max, int ms)
{
    struct pollfd pf = {fd, POLLIN, 0};
    char tmp[4096];
    size_t n = 0;
    ssize_t k;

    while (poll(&pf, 1, ms) > 0) {
        k = read(fd, tmp, sizeof tmp);
        if (k <= 0)
            break;
        if (n < max) { /* only the start is checked: keep reading */
            size_t c = (size_t)k < max - n ? (size_t)k : max - n;
            memcpy(buf + n, tmp, c);
            n += c;
        }
    }
    return n;
}

static void exchange(const uint8_t *data, size_t size, char *reply, size_t max)
{
    int fd = dial();
    size_t got;

    (void)!write(fd, data, size);
    shutdown(fd, SHUT_WR); /* no more bytes: MHD must answer or close */
    got = drain(fd, reply, max, 3000);
    if (got >= 9 && memcmp(reply, "HTTP/1.1 ", 9) != 0)
        abort(); /* bytes that are not a status line */
    close(fd);
}

static void still_serving(void)
{
    static const char req[] = "GET /v1/health HTTP/1.1\r\nHost: f\r\n"
                              "Connection: close\r\n\r\n";
    char buf[256];
    int fd = dial();
    size_t got;

    (void)!write(fd, req, sizeof req - 1);
    got = drain(fd, buf, sizeof buf, 3000);
    if (got < 12 || memcmp(buf, "HTTP/1.1 200", 12) != 0)
        abort();
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned runs;
    char *line = malloc(size + 1);
    char reply[4096];

    if (!srv)
        start();
    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    if (mtx_srv_cut_args(line, SRV_MAX_ARGS) > SRV_MAX_ARGS &&
        strchr(line, '?')[1] != '\0')
        abort(); /* past the cap the query must be cut */
    free(line);
    exchange(data, size, reply, sizeof reply);
    if (++runs % 64 == 0)
        still_serving();
    return 0;
}
