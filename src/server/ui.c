/* Routes the web UI needs beyond the engine's: the session state, known
 * without a failing request (GET /v1/session answers 200 either way, so
 * a logged-out page loads with a clean console). */
#include <string.h>

#include "medtrust/core.h"
#include "server/srv_int.h"

/* GET /v1/session: {"authenticated":false}, or GET /v1/me's object with
 * "authenticated":true. An expired or unknown session reads as logged
 * out; a malformed Authorization header too (the UI never sends one). */
void mt_srv_session(struct mt_server *s, struct srv_req *rq,
                    struct srv_resp *rs, int64_t id)
{
    json_t *o;

    if (mt_srv_authenticate(s, rq, rs) != 0) {
        mt_srv_json(rs, 200, json_pack("{s:b}", "authenticated", 0));
        return;
    }
    mt_srv_me(s, rq, rs, id);
    if (rs->status != 200)
        return;
    o = json_loadb(rs->body, rs->len, 0, NULL);
    if (o)
        json_object_set_new(o, "authenticated", json_true());
    mt_srv_json(rs, 200, o);
}
