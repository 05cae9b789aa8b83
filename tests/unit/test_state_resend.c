/* A commit whose reply is lost: a loopback proxy between the state layer
 * and a throwaway PostgreSQL forwards a run's INSERT, lets the server
 * commit it and answer, then cuts the connection instead of passing the
 * answer on. pg.c reconnects and sends the INSERT again; the run's
 * idempotency key must make that second insert return the first row, so
 * exactly one run is queued. */
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "medtrust/accounts.h"
#include "medtrust/core.h"
#include "medtrust/state.h"
#include "pg_fixture.h"

static struct pgfx fx;

struct proxy {
    int listen_fd;
    uint16_t port, up_port;
    const char *trigger; /* client bytes that arm the cut */
    int cuts;            /* connections cut after the trigger's reply */
    int stop;
};

static int dial(uint16_t port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int contains(const char *b, size_t n, const char *s)
{
    size_t k = strlen(s), i;

    for (i = 0; i + k <= n; i++)
        if (memcmp(b + i, s, k) == 0)
            return 1;
    return 0;
}

/* ReadyForQuery ('Z', length 5, status): the server's answer is whole
 * and its implicit transaction committed. */
static int has_ready(const char *b, size_t n)
{
    size_t i;

    for (i = 0; i + 5 < n; i++)
        if (b[i] == 'Z' && memcmp(b + i + 1, "\0\0\0\5", 4) == 0)
            return 1;
    return 0;
}

/* Relays one client connection; returns when either side closes, or
 * after the trigger's reply has been swallowed. */
static void relay(struct proxy *p, int c, int u)
{
    char buf[65536];
    int armed = 0;

    for (;;) {
        struct pollfd fds[2] = {{c, POLLIN, 0}, {u, POLLIN, 0}};
        ssize_t n;

        if (poll(fds, 2, 200) <= 0) {
            if (p->stop)
                return;
            continue;
        }
        if (fds[0].revents) {
            n = read(c, buf, sizeof buf);
            if (n <= 0 || write(u, buf, (size_t)n) != n)
                return;
            if (p->cuts == 0 && contains(buf, (size_t)n, p->trigger))
                armed = 1;
        }
        if (fds[1].revents) {
            n = read(u, buf, sizeof buf);
            if (n <= 0)
                return;
            if (armed) { /* swallowed: the client never hears the commit */
                if (has_ready(buf, (size_t)n)) {
                    p->cuts++;
                    return;
                }
                continue;
            }
            if (write(c, buf, (size_t)n) != n)
                return;
        }
    }
}

static void *proxy_main(void *arg)
{
    struct proxy *p = arg;

    while (!p->stop) {
        struct pollfd pf = {p->listen_fd, POLLIN, 0};
        int c, u;

        if (poll(&pf, 1, 200) <= 0)
            continue;
        c = accept(p->listen_fd, NULL, NULL);
        u = c >= 0 ? dial(p->up_port) : -1;
        if (u >= 0)
            relay(p, c, u);
        if (u >= 0)
            close(u);
        if (c >= 0)
            close(c);
    }
    return NULL;
}

static int proxy_start(struct proxy *p, pthread_t *t)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (p->listen_fd < 0 ||
        bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->listen_fd, 4) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    p->port = ntohs(a.sin_port);
    return pthread_create(t, NULL, proxy_main, p);
}

/* fx.url with its port replaced by 'port'. */
static void url_with_port(char *buf, size_t n, uint16_t port, uint16_t *old)
{
    const char *colon = strrchr(fx.url, ':');
    const char *slash = strchr(colon, '/');

    *old = (uint16_t)atoi(colon + 1);
    snprintf(buf, n, "%.*s:%u%s", (int)(colon - fx.url), fx.url, port, slash);
}

static long long count_runs(const char *kind)
{
    PGconn *c = PQconnectdb(fx.url);
    const char *pa[1] = {kind};
    PGresult *r = PQexecParams(c, "SELECT count(*) FROM runs WHERE kind = $1",
                               1, NULL, pa, NULL, NULL, 0);
    long long n =
        PQresultStatus(r) == PGRES_TUPLES_OK ? atoll(PQgetvalue(r, 0, 0)) : -1;

    PQclear(r);
    PQfinish(c);
    return n;
}

static void test_run_insert_resent_after_lost_commit_queues_once(void **state)
{
    struct proxy p = {-1, 0, 0, "INSERT INTO runs", 0, 0};
    struct mt_state *st = NULL;
    char url[200];
    pthread_t t;
    int64_t id = 0, id2 = 0;
    (void)state;
    CHECK(proxy_start(&p, &t) == 0);
    url_with_port(url, sizeof url, p.port, &p.up_port);
    CHECK_OK(mt_state_open(url, &st, NULL));
    CHECK_OK(mt_run_create(st, 0, "alice", "resend-test", "h1", &id, NULL));
    CHECK(p.cuts == 1); /* the reply really was lost, after the commit */
    CHECK(id > 0);
    CHECK(count_runs("resend-test") == 1);
    /* the next run is a new row, through the reconnected handle */
    CHECK_OK(mt_run_create(st, 0, "alice", "resend-test", "h2", &id2, NULL));
    CHECK(id2 > id && count_runs("resend-test") == 2);
    mt_state_close(st);
    p.stop = 1;
    pthread_join(t, NULL);
    close(p.listen_fd);
}

static int group_setup(void **state)
{
    (void)state;
    return pgfx_suite_start(&fx);
}

static int group_teardown(void **state)
{
    (void)state;
    pgfx_stop(&fx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_insert_resent_after_lost_commit_queues_once),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
