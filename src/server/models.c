/* The models a request may choose (serve --llm-choice NAME=SPEC, one a
 * line in mt_server_params.llm_choices): POST /v1/ask, /v1/check and
 * /v1/batch take "model": NAME,
 * GET /v1/limits lists the names, and the UI's panel offers them when
 * there are any. Without "model" a request uses the server's --llm. */
#include <stdio.h>
#include <string.h>

#include "medtrust/core.h"
#include "medtrust/qa.h"
#include "server/srv_int.h"

static int name_ok(const char *p, size_t n)
{
    size_t i;

    if (n == 0 || n > 32)
        return 0;
    for (i = 0; i < n; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
              (p[i] >= '0' && p[i] <= '9') || strchr("._-", p[i])))
            return 0;
    return 1;
}

/* Splits one "NAME=SPEC" line of the copied text in place. */
static enum mt_status add_choice(struct mt_server *s, char *line,
                                 struct mt_error *err)
{
    char *eq = strchr(line, '=');
    size_t i;

    if (!eq || !name_ok(line, (size_t)(eq - line)) || !eq[1])
        return mt_fail(err, MT_EINVAL,
                       "--llm-choice '%s' must be NAME=SPEC, NAME 1 to 32 "
                       "letters, digits, '.', '_' or '-'",
                       line);
    if (s->nchoices == SRV_MODELS_MAX)
        return mt_fail(err, MT_ELIMIT, "at most %d --llm-choice models",
                       SRV_MODELS_MAX);
    *eq = '\0';
    for (i = 0; i < s->nchoices; i++)
        if (strcmp(s->choice_name[i], line) == 0)
            return mt_fail(err, MT_EINVAL, "--llm-choice names '%s' twice",
                           line);
    s->choice_name[s->nchoices] = line;
    s->choice_spec[s->nchoices++] = eq + 1;
    return MT_OK;
}

enum mt_status mtx_srv_models_init(struct mt_server *s, const char *text,
                                   struct mt_error *err)
{
    char *line, *next;
    enum mt_status st = MT_OK;

    if (!text || !*text)
        return MT_OK;
    s->choices = mt_strdup(text);
    if (!s->choices)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (line = s->choices; st == MT_OK && line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (*line)
            st = add_choice(s, line, err);
    }
    return st;
}

void mtx_srv_models_free(struct mt_server *s)
{
    size_t i;

    for (i = 0; i < s->nchoices; i++)
        mt_qa_close(s->qa_choice[i]);
    mt_free(s->choices);
    s->choices = NULL;
    s->nchoices = 0;
}

int mtx_srv_model_find(const struct mt_server *s, const char *name)
{
    size_t i;

    for (i = 0; name && i < s->nchoices; i++)
        if (strcmp(s->choice_name[i], name) == 0)
            return (int)i;
    return -1;
}

const char *mtx_srv_model_name(const struct mt_server *s, int model)
{
    return model >= 0 && (size_t)model < s->nchoices ? s->choice_name[model]
                                                     : NULL;
}

int mtx_srv_model_read(struct mt_server *s, json_t *o, int *model,
                       struct srv_resp *rs)
{
    json_t *v = json_object_get(o, "model");

    *model = -1;
    if (!v || json_is_null(v))
        return 0;
    *model = mtx_srv_model_find(s, json_string_value(v));
    if (*model >= 0)
        return 0;
    mtx_srv_error(rs, 400,
                  "\"model\" must name one of the server's models (GET "
                  "/v1/limits lists them: %zu configured with --llm-choice)",
                  s->nchoices);
    return -1;
}

const char *mtx_srv_model_spec(const struct mt_server *s, int model)
{
    return model >= 0 ? s->choice_spec[model] : s->llm_spec;
}

json_t *mtx_srv_models_json(const struct mt_server *s)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < s->nchoices; i++)
        json_array_append_new(a, json_string(s->choice_name[i]));
    return a;
}
