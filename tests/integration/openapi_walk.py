"""Walks GET /v1/openapi.json and calls every route it documents (issue 34).

Usage: openapi_walk.py URL USER PASSWORD. Python stdlib only (json,
urllib). Prints TAP-like "ok"/"not ok" lines; exits 1 on any failure.
"""
import json
import sys
import urllib.error
import urllib.request

URL, USER, PASSWORD = sys.argv[1:4]
FAILS = []
COUNT = [0]


def check(name, cond, detail=""):
    COUNT[0] += 1
    if cond:
        print("ok - " + name)
    else:
        FAILS.append(name)
        print("not ok - %s: %s" % (name, detail))


def call(method, path, body=None, cookie=None, csrf=None, raw=None):
    data = raw if raw is not None else (
        None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(URL + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if cookie:
        req.add_header("Cookie", cookie)
    if csrf:
        req.add_header("X-CSRF-Token", csrf)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def error_of(body):
    try:
        return json.loads(body).get("error", "")
    except (ValueError, AttributeError):
        return ""


def login():
    st, body, hdr = call("POST", "/v1/login",
                         {"username": USER, "password": PASSWORD})
    assert st == 200, (st, body)
    cookie = hdr.get("Set-Cookie").split(";")[0]
    return cookie, json.loads(body)["csrf_token"]


def concrete(path):
    return path.replace("{id}", "999999")


def documented(op, st):
    codes = op["responses"]
    return str(st) in codes or ("2XX" in codes and 200 <= st < 300)


def walk_route(path, method, op, cookie, csrf):
    m = method.upper()
    p = concrete(path)
    body = {} if m in ("POST", "PUT") else None
    where = "%s %s" % (m, path)
    # without credentials: 401 exactly where the document says so
    st, b, _ = call(m, p, body)
    if op["x-access"] == "open":
        check(where + " is open", st != 401, "answered 401")
    else:
        check(where + " without credentials is 401 (documented)",
              st == 401 and "401" in op["responses"], "%d %s" % (st, b[:200]))
    if op["x-access"] == "open" or path == "/v1/logout":
        return
    # a cookie without the CSRF token: 403 where x-csrf says one is needed
    if op["x-csrf"]:
        st, b, _ = call(m, p, body, cookie=cookie)
        check(where + " without X-CSRF-Token is 403 (documented)",
              st == 403 and "403" in op["responses"] and "CSRF" in
              error_of(b), "%d %s" % (st, b[:200]))
    st, b, _ = call(m, p, body, cookie=cookie, csrf=csrf)
    check(where + " exists with this method (not 404 'no API route', 405)",
          st != 405 and not error_of(b).startswith("no API route"),
          "%d %s" % (st, b[:200]))
    check(where + " answers a documented status (%d)" % st,
          documented(op, st), b[:200])


def base_body(props):
    """The body's required texts, short and valid."""
    out = {}
    for k in ("query", "question", "note", "text"):
        if k in props:
            out[k] = "aspirin and bleeding"
    if "data" in props:
        out["data"] = "Text ID,Text\nn1,The patient took aspirin.\n"
    return out


def walk_bounds(path, op, cookie, csrf):
    props = op["requestBody"]["content"]["application/json"]["schema"][
        "properties"]
    numbers = {k: v for k, v in props.items()
               if v.get("type") in ("integer", "number")}
    check("POST %s documents bounded members" % path, len(numbers) > 0,
          sorted(props))
    for name, s in sorted(numbers.items()):
        step = 1 if s["type"] == "integer" else max(1e-3, abs(s["maximum"]))
        for bad in (s["maximum"] + step, s["minimum"] - step):
            if s["type"] == "integer":
                bad = int(bad)
            body = base_body(props)
            body[name] = bad
            st, b, _ = call("POST", path, body, cookie=cookie, csrf=csrf)
            check("POST %s %s=%s is 400 naming it" % (path, name, bad),
                  st == 400 and ('"%s"' % name) in error_of(b),
                  "%d %s" % (st, b[:200]))
        for edge in (s["maximum"], s["minimum"]):
            body = base_body(props)
            body[name] = edge
            if name == "retrieve_k":  # rerank_k <= retrieve_k, a 400 too
                body["rerank_k"] = numbers["rerank_k"]["minimum"]
            st, b, _ = call("POST", path, body, cookie=cookie, csrf=csrf)
            check("POST %s %s=%s (documented bound) is not refused for it" %
                  (path, name, edge),
                  not (st == 400 and ('"%s"' % name) in error_of(b)) and
                  documented(op, st), "%d %s" % (st, b[:200]))
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    for name in schema.get("required", []):
        body = base_body(props)
        body.pop(name, None)
        st, b, _ = call("POST", path, body, cookie=cookie, csrf=csrf)
        check("POST %s without required %s is 400 naming it" % (path, name),
              st == 400 and ('"%s"' % name) in error_of(b),
              "%d %s" % (st, b[:200]))
    check("POST %s names a required member" % path,
          len(schema.get("required", [])) == 1, schema.get("required"))
    for name, s in sorted(props.items()):
        if s.get("type") == "string" and s.get("maxLength") and \
                s["maxLength"] < 70000:
            body = base_body(props)
            body[name] = "a" * (s["maxLength"] + 1)
            st, b, _ = call("POST", path, body, cookie=cookie, csrf=csrf)
            check("POST %s %s of maxLength+1 bytes is 400 naming it" %
                  (path, name),
                  st == 400 and name in error_of(b), "%d %s" % (st, b[:200]))


def main():
    st, b, hdr = call("GET", "/v1/openapi.json")
    check("GET /v1/openapi.json answers 200 without credentials", st == 200,
          st)
    doc = json.loads(b)
    check("the document is OpenAPI 3.1", doc.get("openapi", "").startswith(
        "3.1"), doc.get("openapi"))
    cookie, csrf = login()
    st, lim, _ = call("GET", "/v1/limits", cookie=cookie)
    lim = json.loads(lim)
    paths = doc["paths"]
    for want in ("/v1/check", "/v1/batch", "/v1/ask", "/v1/verify",
                 "/v1/search", "/v1/health", "/v1/runs/{id}"):
        check("%s is documented" % want, want in paths, sorted(paths))
    for path, item in sorted(paths.items()):
        for method, op in sorted(item.items()):
            if path == "/v1/logout":
                continue  # last: it ends the session
            walk_route(path, method, op, cookie, csrf)
    for path in ("/v1/check", "/v1/batch", "/v1/ask", "/v1/verify",
                 "/v1/search"):
        walk_bounds(path, paths[path]["post"], cookie, csrf)
    # the body limit is the route's: uploads take GET /v1/limits'
    # body_bytes, the others at most that
    for path, item in sorted(paths.items()):
        for method, op in sorted(item.items()):
            mb = op["x-max-body-bytes"]
            want = path in ("/v1/check", "/v1/batch", "/v1/score")
            check("%s %s x-max-body-bytes %d" % (method.upper(), path, mb),
                  (mb == lim["body_bytes"]) if want else
                  (0 < mb <= lim["body_bytes"]), lim["body_bytes"])
    big = paths["/v1/search"]["post"]["x-max-body-bytes"]
    check("/v1/search's body limit is GET /v1/limits' or lower",
          0 < big <= lim["body_bytes"], big)
    st, b, _ = call("POST", "/v1/search", raw=b" " * (big + 1),
                    cookie=cookie, csrf=csrf)
    check("POST /v1/search over x-max-body-bytes is 413 (documented)",
          st == 413 and "413" in paths["/v1/search"]["post"]["responses"],
          "%d %s" % (st, b[:200]))
    # what the document does not name is not served
    for p in ("/v1/nope", "/v1/openapi", "/v1/check/1"):
        st, b, _ = call("GET", p, cookie=cookie)
        check("undocumented %s is 404" % p, st == 404 and p not in paths,
              st)
    st, b, _ = call("DELETE", "/v1/check", cookie=cookie, csrf=csrf)
    check("an undocumented method on a documented path is 405", st == 405
          and "delete" not in paths["/v1/check"], st)
    walk_route("/v1/logout", "post", paths["/v1/logout"]["post"], cookie,
               csrf)
    st, b, _ = call("POST", "/v1/logout", {}, cookie=cookie, csrf=csrf)
    check("POST /v1/logout answers a documented status",
          documented(paths["/v1/logout"]["post"], st), st)
    print("# %d checks, %d failed" % (COUNT[0], len(FAILS)))
    sys.exit(1 if FAILS else 0)


main()
