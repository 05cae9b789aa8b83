/* libFuzzer harness for what the OpenAI-compatible backend reads from a
 * model server (src/model/http.c, src/model/llm_openai.c): the reply
 * body of a chat call, plain JSON or server-sent events, comes from the
 * input and is served by a loopback server in this process, so libcurl,
 * the SSE framing (lines ending in LF, CRLF or CR, "data:" gathering,
 * [DONE], error events), the reply's field checks, the UTF-8 piece
 * splitting of streamed deltas and the usage counts all see it as they
 * would see a hostile server. Then each completion goes through the
 * reply reader (mtx_reply_extract) as the agents read it.
 * Input: byte 0 picks streaming (bit 0), two completions (bit 1) and the
 * HTTP status (bit 2: 500 instead of 200); the rest is the body.
 * Any body ends the call with MT_OK and n texts, or a failure with a
 * message; never a crash, a leak, a hang or an unterminated text.
 * Built by `make fuzz` (mk/fuzz.mk); tests/integration/test_fuzz.sh seeds
 * it with llama.cpp-shaped replies and streams. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "llmcall/reply.h"
#include "medtrust/core.h"
#include "medtrust/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *cur; /* the input being served, NULL between inputs */
static size_t cur_n;
static struct mt_llm *llm;

/* Reads a request to the end of its body (Content-Length). */
static void read_request(int fd)
{
    static char buf[1 << 16];
    size_t got = 0;
    long want = -1;
    char *hdr_end;

    for (;;) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r <= 0)
            return;
        got += (size_t)r;
        buf[got] = '\0';
        hdr_end = strstr(buf, "\r\n\r\n");
        if (hdr_end && want < 0) {
            char *cl = strstr(buf, "Content-Length:"); /* as curl sends it */
            want = cl ? strtol(cl + 15, NULL, 10) : 0;
        }
        if (hdr_end && (long)(got - (size_t)(hdr_end + 4 - buf)) >= want)
            return;
        if (got + 1 >= sizeof buf)
            return;
    }
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0)
            return;
        c += w;
        n -= (size_t)w;
    }
}

/* Answers one connection with the current input's status and body. */
static void answer(int fd)
{
    char head[160];
    int n;

    read_request(fd);
    pthread_mutex_lock(&mu);
    if (!cur || cur_n < 1) {
        n = snprintf(head, sizeof head,
                     "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n");
        write_all(fd, head, (size_t)n);
    } else {
        n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
                     "Connection: close\r\n\r\n",
                     cur[0] & 4 ? "500 Internal Server Error" : "200 OK",
                     cur[0] & 1 ? "text/event-stream" : "application/json");
        write_all(fd, head, (size_t)n);
        write_all(fd, cur + 1, cur_n - 1);
    }
    pthread_mutex_unlock(&mu);
    shutdown(fd, SHUT_WR);
    close(fd);
}

static void *serve(void *arg)
{
    int lfd = *(int *)arg;

    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd >= 0)
            answer(fd);
    }
    return NULL;
}

static void start(void)
{
    static int lfd;
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    struct mt_llm_params p;
    pthread_t t;
    char spec[80];

    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) != 0 ||
        pthread_create(&t, NULL, serve, &lfd) != 0)
        abort();
    pthread_detach(t);
    mt_llm_default_params(&p);
    p.max_retries = 0;
    p.timeout_s = 10;
    snprintf(spec, sizeof spec, "openai:http://127.0.0.1:%d#fuzz",
             ntohs(a.sin_port));
    if (mt_llm_open(spec, &p, &llm, NULL) != MT_OK)
        abort();
}

/* Streamed pieces: whole UTF-8 characters that add up to the text. */
static int on_token(void *ctx, uint32_t i, const char *piece, size_t len)
{
    struct mt_buf *b = (struct mt_buf *)ctx + i;

    if (i > 1)
        __builtin_trap(); /* no completion was asked for past n */
    if (!piece) {
        mtx_buf_reset(b);
        return 0;
    }
    return mtx_buf_append(b, piece, len) != MT_OK;
}

static void read_texts(const struct mt_chat_result *r,
                       const struct mt_buf *streams, int streamed)
{
    uint32_t i;
    char why[200];

    for (i = 0; i < r->n; i++) {
        json_t *o;
        const struct mt_buf *s = streams + i;
        if (!r->texts[i])
            continue;
        if (streamed && (s->len != strlen(r->texts[i]) ||
                         (s->len && memcmp(s->data, r->texts[i], s->len))))
            __builtin_trap(); /* the pieces equal the text */
        o = mtx_reply_extract(r->texts[i], why, sizeof why);
        json_decref(o);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct mt_llm_message msgs[] = {
        {"system", "[agent:fuzz] Reply in JSON."}, {"user", "Is it true?"}};
    struct mt_chat_params cp;
    struct mt_chat_result res;
    struct mt_error err = {MT_OK, ""};
    struct mt_buf streamed[2] = {MT_BUF_INIT(MT_BUF_DEFAULT_MAX),
                                 MT_BUF_INIT(MT_BUF_DEFAULT_MAX)};
    enum mt_status st;

    if (size < 1)
        return 0;
    if (!llm)
        start();
    pthread_mutex_lock(&mu);
    cur = data;
    cur_n = size;
    pthread_mutex_unlock(&mu);
    mt_chat_default_params(&cp);
    cp.n = data[0] & 2 ? 2 : 1;
    if (data[0] & 1) {
        cp.on_token = on_token;
        cp.on_token_ctx = streamed;
    }
    memset(&res, 0, sizeof res);
    st = mt_llm_chat(llm, msgs, 2, &cp, &res, &err);
    pthread_mutex_lock(&mu);
    cur = NULL;
    pthread_mutex_unlock(&mu);
    if (st == MT_OK)
        read_texts(&res, streamed, (data[0] & 1) != 0);
    else if (!err.msg[0] || res.n != 0 || st == MT_EINTERNAL)
        __builtin_trap(); /* a failure says why and returns nothing */
    mt_chat_result_free(&res);
    mtx_buf_free(&streamed[0]);
    mtx_buf_free(&streamed[1]);
    return 0;
}
