/* Test helper: runs tests/fixtures/script_server (built under
 * $MEDTRUST_BUILD/fixtures) with a scenario, and reads back the requests
 * it recorded, so tests assert on what each agent was sent. */
#ifndef MT_TEST_SCRIPT_H
#define MT_TEST_SCRIPT_H

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "medtrust/check.h"

struct script {
    pid_t pid;
    char dir[64];
    char log[96];
    char spec[96]; /* openai:http://127.0.0.1:PORT#scripted */
};

/* Starts the server with 'scenario' (script lines); fails the test when
 * the fixture is not built. */
static inline void script_start(struct script *s, const char *scenario)
{
    const char *b = getenv("MEDTRUST_BUILD");
    char bin[512];
    char sp[128];
    int fd[2];
    int port = 0;
    FILE *f;

    snprintf(bin, sizeof bin, "%s/fixtures/script_server", b ? b : "build");
    if (access(bin, X_OK) != 0)
        MISSING(bin);
    snprintf(s->dir, sizeof s->dir, "/tmp/mt-script-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(sp, sizeof sp, "%s/scenario", s->dir);
    snprintf(s->log, sizeof s->log, "%s/requests.jsonl", s->dir);
    f = fopen(sp, "w");
    assert_non_null(f);
    fputs(scenario, f);
    fclose(f);
    assert_int_equal(pipe(fd), 0);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
        dup2(fd[1], 1);
        close(fd[0]);
        execl(bin, bin, sp, s->log, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    f = fdopen(fd[0], "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &port), 1);
    fclose(f);
    snprintf(s->spec, sizeof s->spec, "openai:http://127.0.0.1:%d#scripted",
             port);
}

static inline void script_stop(struct script *s)
{
    char p[128];

    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    snprintf(p, sizeof p, "%s/scenario", s->dir);
    unlink(p);
    unlink(s->log);
    rmdir(s->dir);
}

/* The recorded requests, in order (a new array), each
 * {"seq","role","path","request"}; only those of 'role' unless NULL. */
static inline json_t *script_requests(const struct script *s, const char *role)
{
    json_t *all = json_array();
    char *line = NULL;
    size_t cap = 0;
    FILE *f = fopen(s->log, "r");

    while (f && getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        const char *r = json_string_value(json_object_get(o, "role"));

        if (o && (!role || (r && strcmp(r, role) == 0)))
            json_array_append(all, o);
        json_decref(o);
    }
    free(line);
    if (f)
        fclose(f);
    return all;
}

/* The roles of all requests in order, space-separated, into out. */
static inline const char *script_roles(const struct script *s, char *out,
                                       size_t n)
{
    json_t *all = script_requests(s, NULL);
    size_t i;
    size_t at = 0;

    out[0] = '\0';
    for (i = 0; i < json_array_size(all) && at + 1 < n; i++)
        at += (size_t)snprintf(
            out + at, n - at, "%s%s", i ? " " : "",
            json_string_value(json_object_get(json_array_get(all, i), "role")));
    json_decref(all);
    return out;
}

/* The content of the first message of 'role' (system, user, ...) of a
 * recorded request (borrowed from 'rec'), or "". */
static inline const char *script_msg(const json_t *rec, const char *role)
{
    json_t *msgs = json_object_get(json_object_get(rec, "request"), "messages");
    size_t i;

    for (i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *r = json_string_value(json_object_get(m, "role"));

        if (r && strcmp(r, role) == 0)
            return json_string_value(json_object_get(m, "content"));
    }
    return "";
}

/* All message contents of a recorded request joined by newlines
 * (malloc'd; free with free()). */
static inline char *script_text(const json_t *rec)
{
    json_t *msgs = json_object_get(json_object_get(rec, "request"), "messages");
    size_t n = 1;
    size_t i;
    char *out;

    for (i = 0; i < json_array_size(msgs); i++)
        n += strlen(json_string_value(
                 json_object_get(json_array_get(msgs, i), "content"))) +
             1;
    out = calloc(1, n);
    for (i = 0; out && i < json_array_size(msgs); i++) {
        strcat(out, json_string_value(
                        json_object_get(json_array_get(msgs, i), "content")));
        strcat(out, "\n");
    }
    return out;
}

/* Occurrences of 'needle' in 'hay'. */
static inline int script_count(const char *hay, const char *needle)
{
    int k = 0;

    while (hay && (hay = strstr(hay, needle)) != NULL) {
        k++;
        hay += strlen(needle);
    }
    return k;
}

/* The note the scripted checks read: an inferior STEMI sent home. */
static const char script_note_text[] =
    "A 62-year-old man has crushing chest pain. ECG shows ST elevation in "
    "II, III and aVF. He is given aspirin and sent home.";

/* Opens a checker with 'p' on the scripted server: no retries, a 10 s
 * timeout, MEDTRUST_LLM ignored. */
static inline struct mt_agent *script_open_agent(const struct script *s,
                                                 struct mt_agent_params *p)
{
    struct mt_agent *a = NULL;
    struct mt_error err;

    p->llm_spec = s->spec;
    p->llm.max_retries = 0;
    p->llm.timeout_s = 10;
    unsetenv("MEDTRUST_LLM");
    CHECK_OK(mt_agent_open(p, &a, &err));
    return a;
}

/* Checks script_note_text (id "t") into r; the check must succeed. */
static inline void script_check_note(struct mt_agent *a,
                                     struct mt_check_result *r)
{
    struct mt_note n = {"t",
                        script_note_text,
                        sizeof script_note_text - 1,
                        NULL,
                        0,
                        NULL,
                        0,
                        NULL,
                        0};
    struct mt_error err;

    CHECK_OK(mt_agent_check(a, &n, r, &err));
}

/* The request of 'role' number i (0-based) as text (free with free()). */
static inline char *script_nth_text(const struct script *s, const char *role,
                                    size_t i)
{
    json_t *reqs = script_requests(s, role);
    char *t = i < json_array_size(reqs) ? script_text(json_array_get(reqs, i))
                                        : strdup("");

    json_decref(reqs);
    return t;
}

#endif
