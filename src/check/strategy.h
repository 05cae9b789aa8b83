/* The strategy table (strategy.c): each strategy's public entry and its
 * run function. run.c dispatches through it; the strategies depend on
 * verdict.c and the role calls, never on run.c. */
#ifndef MT_CHECK_STRATEGY_H
#define MT_CHECK_STRATEGY_H

#include "check/agent_int.h"

struct mtx_strategy_def {
    struct mt_strategy_info info;
    enum mt_status (*run)(struct run *r); /* checks the run's note */
};

/* Strategy s's definition; s must be one (mt_strategy_get says). */
const struct mtx_strategy_def *mtx_strategy_def(enum mt_strategy s);

/* 1 when strategy s calls routing role 'name' (route names: "react",
 * "eval", ...). */
int mtx_strategy_calls(enum mt_strategy s, const char *name);

/* The strategies (react.c, guards.c, single.c). */
enum mt_status mtx_strategy_single(struct run *r);
enum mt_status mtx_strategy_guards(struct run *r);
enum mt_status mtx_strategy_react(struct run *r);

#endif
