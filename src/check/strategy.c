/* The one strategy table: name, title, summary, roles, what each needs
 * and its run function. Everything that lists strategies (parsing, the
 * checker's model routing, the CLI's help, the server's checks and
 * /v1/limits, the web UI) reads it. */
#include <stdio.h>
#include <string.h>

#include "check/strategy.h"

static const char *const roles_react[] = {"react", "eval", "reflect", "parser",
                                          NULL};
static const char *const roles_guards[] = {"guard", NULL};
static const char *const roles_single[] = {"single", NULL};

static const struct mtx_strategy_def table[MT_STRATEGY_COUNT] = {
    {{MT_STRATEGY_REACT_REFLEX, "react-reflex", "MedReAct'N'MedReFlex",
      "Searches the corpus step by step, has five reviewers score the "
      "answer and reflects when they reject it. Slowest, most thorough.",
      roles_react, 1, 0},
     mtx_strategy_react},
    {{MT_STRATEGY_GUARDS, "guards", "MedGuards",
      "Two agents detect and locate the error, an arbiter settles "
      "disagreements, one agent corrects it.",
      roles_guards, 0, 0},
     mtx_strategy_guards},
    {{MT_STRATEGY_SINGLE, "single", "single call",
      "One prompted call: the fastest baseline.", roles_single, 0, 1},
     mtx_strategy_single},
};

const struct mtx_strategy_def *mtx_strategy_def(enum mt_strategy s)
{
    return &table[(unsigned)s < MT_STRATEGY_COUNT ? s : 0];
}

const struct mt_strategy_info *mt_strategy_get(enum mt_strategy s)
{
    return (unsigned)s < MT_STRATEGY_COUNT ? &table[s].info : NULL;
}

int mtx_strategy_calls(enum mt_strategy s, const char *name)
{
    const char *const *r;

    for (r = mtx_strategy_def(s)->info.roles; *r; r++)
        if (strcmp(*r, name) == 0)
            return 1;
    return 0;
}

enum mt_status mt_strategy_parse(const char *s, enum mt_strategy *out)
{
    size_t i;

    for (i = 0; s && i < MT_STRATEGY_COUNT; i++) {
        if (strcmp(s, table[i].info.name) == 0) {
            *out = table[i].info.id;
            return MT_OK;
        }
    }
    return MT_EINVAL;
}

const char *mt_strategy_str(enum mt_strategy s)
{
    return (unsigned)s < MT_STRATEGY_COUNT ? table[s].info.name : "unknown";
}

char *mt_strategy_list(char *buf, size_t n)
{
    size_t i, at = 0;

    if (n == 0)
        return buf;
    buf[0] = '\0';
    for (i = 0; i < MT_STRATEGY_COUNT && at < n; i++) {
        const char *sep = i == 0                       ? ""
                          : i + 1 == MT_STRATEGY_COUNT ? " or "
                                                       : ", ";
        int w = snprintf(buf + at, n - at, "%s%s", sep, table[i].info.name);

        if (w < 0)
            break;
        at += (size_t)w;
    }
    return buf;
}
