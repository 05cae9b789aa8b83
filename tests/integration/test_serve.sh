#!/usr/bin/env bash
# Integration: `medtrust user` and `medtrust serve` driven with curl: login,
# CSRF, tokens, roles, registration switch, search hits equal to the CLI's,
# score equal to `score --json`, 400/401/403/413/429, path traversal, an
# event stream, logs without secrets, and graceful shutdown on SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
MT=${MEDTRUST_SERVE_BIN:-$MT}
need_verb serve
unset MEDTRUST_LLM MEDTRUST_LLM_REACT MEDTRUST_LLM_EVAL MEDTRUST_LLM_REFLECT \
    MEDTRUST_LLM_PARSER MEDTRUST_LLM_GUARD MEDTRUST_LLM_SINGLE
head -300 "$DATA/medquad/corpus.jsonl" >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --source medquad \
    --no-progress >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/db" alice --admin 2>/dev/null
echo 'bob-password' | "$MT" user add --db "$TMP/db" bob 2>/dev/null
check "user list shows roles" sh -c \
    "'$MT' user list --db '$TMP/db' | grep -q '^alice	admin'"

# serve_start NAME ARGS...: starts a server, sets $U and $PID_NAME.
serve_start() {
    local name=$1
    shift
    rm -f "$TMP/$name.out"
    "$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" &
    eval "PID_$name=$!"
    U=$(serve_url "$TMP/$name.out")
}
serve_start main --data-dir "$TMP/logs" --test-routes --rate-limit 0
MAIN=$U
expect() { # expect NAME CODE CURL-ARGS...
    local name=$1 want=$2 got
    shift 2
    got=$(code "$@")
    if [ "$got" = "$want" ]; then ok "$name"; else
        not_ok "$name" "wanted $want, got $got: $(head -c 300 "$TMP/body")"
    fi
}
J=(-H 'Content-Type: application/json')
expect "health needs no account" 200 "$MAIN/v1/health"
expect "search without a session is 401" 401 "${J[@]}" "$MAIN/v1/search" \
    -d '{"query":"gout"}'
expect "wrong password is 401" 401 "$MAIN/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"wrong-one"}'
expect "login works" 200 -c "$TMP/jar" "$MAIN/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"alice-password"}'
CSRF=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
grep -q 'HttpOnly' "$TMP/jar" && ok "session cookie is HttpOnly" ||
    not_ok "session cookie is HttpOnly" "$(cat "$TMP/jar")"
A=(-b "$TMP/jar" -H "X-CSRF-Token: $CSRF")
expect "POST without X-CSRF-Token is 403" 403 -b "$TMP/jar" \
    "$MAIN/v1/search" -d '{"query":"gout"}'
expect "malformed JSON is 400" 400 "${A[@]}" "$MAIN/v1/search" -d '{"query":'
grep -q 'malformed JSON' "$TMP/body" && ok "400 says what is wrong" ||
    not_ok "400 says what is wrong" "$(cat "$TMP/body")"

expect "search works" 200 "${A[@]}" "$MAIN/v1/search" \
    -d '{"query":"symptoms of gout","k":5}'
"$MT" search --db "$TMP/db" --json -k 5 --group documents "symptoms of gout" \
    >"$TMP/cli.jsonl"
if python3 - "$TMP/body" "$TMP/cli.jsonl" "$TMP/c.jsonl" <<'PY'
import json, sys
body = json.load(open(sys.argv[1]))
api = body["hits"]
cli = [json.loads(l) for l in open(sys.argv[2])]
docs = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[3])}
# plus "url": a MedQuAD document's own url metadata
urls = [h.pop("url") for h in api]
assert body["group"] == "documents" and body["mode"] == "bm25", body
assert api == cli and len(api) == 5, (api[:1], cli[:1])
assert urls == [docs[h["doc_id"]]["url"] for h in api], urls
assert all(u.startswith("https://") for u in urls), urls
PY
then ok "search returns the CLI's (--group documents) hit objects, with each document's url"; else
    not_ok "search returns the CLI's hit objects"; fi
# By document (the default): each document once, its other passages in
# "more"; by chunk: the CLI's passages.
expect "search by chunk" 200 "${A[@]}" "$MAIN/v1/search" \
    -d '{"query":"symptoms treatment","k":12,"group":"chunks"}'
cp "$TMP/body" "$TMP/chunks.json"
expect "search by document" 200 "${A[@]}" "$MAIN/v1/search" \
    -d '{"query":"symptoms treatment","k":12}'
"$MT" search --db "$TMP/db" --json -k 12 --group chunks "symptoms treatment" >"$TMP/cli12.jsonl"
if python3 - "$TMP/chunks.json" "$TMP/body" "$TMP/cli12.jsonl" <<'PY'
import json, sys
chunks = json.load(open(sys.argv[1]))["hits"]
docs = json.load(open(sys.argv[2]))["hits"]
cli = [json.loads(l) for l in open(sys.argv[3])]
for h in chunks:
    h.pop("url")
assert chunks == cli, "group chunks is the CLI's --group chunks list"
ids = [h["doc_id"] for h in docs]
assert len(ids) == len(set(ids)) == 12, ids
assert [h["rank"] for h in docs] == list(range(1, 13))
assert any(h["more"] for h in docs), "some document has more passages"
for h in docs:  # each head is its document's best passage
    assert all(m["score"] <= h["score"] for m in h["more"]), h
# the chunk list's first documents, in their order, lead the grouped list
seen = []
for c in chunks:
    if c["doc_id"] not in seen:
        seen.append(c["doc_id"])
assert ids[:len(seen)] == seen[:len(ids)], (ids, seen)
PY
then ok "search groups by document by default (best passage, the others in \"more\"), group chunks lists passages"; else
    not_ok "search grouping" "$(head -c 300 "$TMP/body")"; fi
expect "an unknown group is 400" 400 "${A[@]}" "$MAIN/v1/search" \
    -d '{"query":"gout","group":"sentences"}'
expect "limits say the default search mode" 200 "${A[@]}" "$MAIN/v1/limits"
grep -q '"default_mode":"bm25"' "$TMP/body" &&
    ok "... the index's best (bm25: no vectors)" ||
    not_ok "default_mode in limits" "$(head -c 300 "$TMP/body")"

curl -s -c "$TMP/bjar" "$MAIN/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"bob","password":"bob-password"}' >"$TMP/body"
BC=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
expect "a user may not list users (403)" 403 -b "$TMP/bjar" "$MAIN/v1/users"
expect "a user may not change settings (403)" 403 -b "$TMP/bjar" \
    -H "X-CSRF-Token: $BC" -X PUT "$MAIN/v1/settings" \
    -d '{"registration":"closed"}'
expect "an admin may list users" 200 "${A[@]}" "$MAIN/v1/users"

# A user's own defaults (PUT/GET /v1/me/settings), bounded by /v1/limits.
B=(-b "$TMP/bjar" -H "X-CSRF-Token: $BC")
expect "a user saves their own search defaults" 200 "${B[@]}" -X PUT \
    "$MAIN/v1/me/settings" -d '{"search":{"k":5,"author":"Kim"},"ask":{"k":20}}'
expect "... and reads them back" 200 -b "$TMP/bjar" "$MAIN/v1/me/settings"
grep -q '"settings":{"ask":{"k":20},"search":{"author":"Kim","k":5}}' "$TMP/body" &&
    ok "... as saved" || not_ok "own defaults read back" "$(cat "$TMP/body")"
expect "an admin's defaults are their own" 200 "${A[@]}" "$MAIN/v1/me/settings"
grep -q '"settings":{}' "$TMP/body" && ok "... (none saved)" ||
    not_ok "admin's own defaults" "$(cat "$TMP/body")"
expect "a default past the server's limit is 400" 400 "${B[@]}" -X PUT \
    "$MAIN/v1/me/settings" -d '{"ask":{"k":1000}}'
grep -q 'k.. must be a whole number from 1 to 100' "$TMP/body" &&
    ok "... naming the bounds" || not_ok "limit message" "$(cat "$TMP/body")"
expect "an unknown setting is 400" 400 "${B[@]}" -X PUT \
    "$MAIN/v1/me/settings" -d '{"check":{"max_steps":2,"colour":"red"}}'
expect "an unknown panel is 400" 400 "${B[@]}" -X PUT \
    "$MAIN/v1/me/settings" -d '{"layout":{}}'
expect "null forgets a panel" 200 "${B[@]}" -X PUT \
    "$MAIN/v1/me/settings" -d '{"ask":null}'
grep -q '"settings":{"search":{"author":"Kim","k":5}}' "$TMP/body" &&
    ok "... the others kept" || not_ok "null panel" "$(cat "$TMP/body")"
expect "Verify's defaults take its own fields and Ask's years" 200 "${B[@]}" \
    -X PUT "$MAIN/v1/me/settings" -d '{"verify":{"k":7,"year_from":2000}}'
expect "... bounded as /v1/limits says" 400 "${B[@]}" -X PUT \
    "$MAIN/v1/me/settings" -d '{"verify":{"k":101}}'

expect "token created" 201 "${A[@]}" -X POST "$MAIN/v1/tokens" -d '{"name":"ci"}'
TOK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$TMP/body")
TID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TMP/body")
T=(-H "Authorization: Bearer $TOK")
expect "a token works without CSRF" 200 "${T[@]}" "$MAIN/v1/search" \
    -d '{"query":"gout"}'
expect "revoking a token" 200 "${A[@]}" -X DELETE "$MAIN/v1/tokens/$TID"
expect "a revoked token is 401" 401 "${T[@]}" "$MAIN/v1/search" \
    -d '{"query":"gout"}'

expect "a fresh store's registration is closed (403)" 403 "$MAIN/v1/register" \
    -H "Content-Type: application/json" \
    -d '{"username":"carol","password":"carol-password"}'
grep -q 'registration is closed' "$TMP/body" && ok "the 403 says registration is closed" ||
    not_ok "closed registration's 403" "$(cat "$TMP/body")"
expect "admin closes registration" 200 "${A[@]}" -X PUT \
    "$MAIN/v1/settings" -d '{"registration":"closed"}'
expect "registration closed is 403" 403 "$MAIN/v1/register" -H "Content-Type: application/json" \
    -d '{"username":"carol","password":"carol-password"}'
expect "admin opens registration" 200 "${A[@]}" -X PUT \
    "$MAIN/v1/settings" -d '{"registration":"open"}'
expect "registration open is 201" 201 "$MAIN/v1/register" -H "Content-Type: application/json" \
    -d '{"username":"carol","password":"carol-password"}'

expect "path traversal is refused" 400 --path-as-is "$MAIN/../etc/passwd"
expect "encoded traversal is refused" 400 --path-as-is \
    "$MAIN/%2e%2e/%2e%2e/etc/passwd"
expect "files outside the UI are 404" 404 "$MAIN/etc/passwd"
expect "the UI is served at /" 200 "$MAIN/"

cat >"$TMP/ref.csv" <<'CSV'
Text ID,Text,Sentences,Error Flag,Error Sentence ID,Error Sentence,Corrected Sentence,Corrected Text
ms-1,t,"0 A. 1 B.",1,1,B.,The patient was given metformin for diabetes.,t
ms-2,t,"0 A.",0,-1,NA,NA,t
ms-3,t,"0 A. 1 C.",1,1,C.,Gout is treated with colchicine.,t
CSV
printf 'ms-1 1 1 The patient was given insulin for diabetes.\nms-2 0 -1 NA\nms-3 1 0 Gout is treated with colchicine.\n' >"$TMP/run.txt"
python3 -c 'import json,sys; print(json.dumps({"reference": open(sys.argv[1]).read(), "submission": open(sys.argv[2]).read(), "name": sys.argv[2]}))' \
    "$TMP/ref.csv" "$TMP/run.txt" >"$TMP/score.json"
expect "score works" 200 "${A[@]}" "$MAIN/v1/score" -d @"$TMP/score.json"
cp "$TMP/body" "$TMP/score.out"
"$MT" score --ref "$TMP/ref.csv" --pred "$TMP/run.txt" --json >"$TMP/cli-score.json" 2>/dev/null
if python3 - "$TMP/score.out" "$TMP/cli-score.json" <<'PY'
import json, sys
api = json.load(open(sys.argv[1])); cli = json.load(open(sys.argv[2]))
run = api.pop("run_id")
assert api == cli, (api, cli)
assert run > 0
PY
then ok "score returns the CLI's --json object and a run id"; else
    not_ok "score returns the CLI's object" "$(head -c 300 "$TMP/score.out")"; fi
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/score.out")
expect "the score run is recorded" 200 "${A[@]}" "$MAIN/v1/runs/$RUN"
grep -q '"status":"done"' "$TMP/body" && ok "the run is done with its result" ||
    not_ok "the run is done" "$(head -c 300 "$TMP/body")"
# Another process sees the server's commits while it runs, after the CLI
# opened and closed the store beside it (the server's /v1/search opened
# one more handle): the server's SQLite locks held, so the CLI's close did
# not take the -wal the server writes for its own.
if [ "$(sqlite3 "$TMP/db/store.db" "SELECT status FROM runs WHERE id=$RUN")" = done ] &&
    [ -e "$TMP/db/store.db-wal" ]; then
    ok "the server's commits reach store.db for other processes while it runs"
else not_ok "store shared with the CLI" "$(ls "$TMP/db")"; fi
expect "check without a note is 400" 400 "${A[@]}" "$MAIN/v1/check" -d '{}'
expect "check without a model is 503" 503 "${A[@]}" "$MAIN/v1/check" \
    -d '{"note":"He has gout."}'
grep -q -- '--llm' "$TMP/body" && ok "503 says how to configure a model" ||
    not_ok "503 says how to configure a model" "$(cat "$TMP/body")"
expect "the UI is served with a Content-Security-Policy" 200 -D "$TMP/hdr" \
    "$MAIN/login"
grep -qi "^content-security-policy: default-src 'self'; script-src 'self';" \
    "$TMP/hdr" && ok "UI pages allow only their own scripts" ||
    not_ok "UI CSP header" "$(cat "$TMP/hdr")"

expect "a slow job is queued" 202 "${A[@]}" "$MAIN/v1/jobs/sleep" \
    -d '{"ms":600,"steps":3}'
JOB=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
curl -sN "${A[@]}" "$MAIN/v1/runs/$JOB/events" >"$TMP/sse"
if [ "$(grep -c '^event: step' "$TMP/sse")" -eq 3 ] &&
    grep -q '^event: done' "$TMP/sse" && grep -q '"status":"done"' "$TMP/sse"; then
    ok "the job's steps stream as Server-Sent Events"
else not_ok "SSE stream" "$(cat "$TMP/sse")"; fi

expect "logout" 200 "${A[@]}" -X POST "$MAIN/v1/logout"
expect "after logout the session is gone" 401 -b "$TMP/jar" "$MAIN/v1/me"
expect "/v1/session answers 200 logged out" 200 -b "$TMP/jar" \
    "$MAIN/v1/session"
grep -q '^{"authenticated":false}$' "$TMP/body" &&
    ok "... with authenticated false" || not_ok "session" "$(cat "$TMP/body")"
expect "/v1/session with a session" 200 -b "$TMP/bjar" "$MAIN/v1/session"
grep -q '"username":"bob".*"authenticated":true' "$TMP/body" &&
    ok "... says who and authenticated true" ||
    not_ok "session" "$(cat "$TMP/body")"

if grep -q 'query_sha256' "$TMP/logs/audit.log" &&
    ! grep -qi 'symptoms of gout\|alice-password\|metformin' "$TMP/logs/"*.log &&
    ! grep -q "$TOK" "$TMP/logs/"*.log && grep -q '"path":"/v1/search"' "$TMP/logs/access.log"; then
    ok "access and audit logs hold hashes, no query text or secrets"
else not_ok "logs" "$(tail -3 "$TMP/logs/audit.log")"; fi

# Graceful shutdown: a running job and a slow request finish after SIGTERM.
curl -s -c "$TMP/jar" "$MAIN/v1/login" -H "Content-Type: application/json" -d '{"username":"alice","password":"alice-password"}' >"$TMP/body"
CSRF=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
A=(-b "$TMP/jar" -H "X-CSRF-Token: $CSRF")
curl -s "${A[@]}" "$MAIN/v1/jobs/sleep" -d '{"ms":1500,"steps":3}' >"$TMP/body"
JOB=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$TMP/body")
curl -sN "${A[@]}" "$MAIN/v1/runs/$JOB/events" >"$TMP/sse2" &
SSE=$!
sleep 0.3
kill -TERM "$PID_main"
sleep 0.3
late=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$MAIN/v1/health" || true)
wait "$PID_main"
rc=$?
wait "$SSE"
if [ "$late" = 000 ]; then
    ok "SIGTERM: a connection made during the shutdown is not served"
else not_ok "late connection" "got HTTP $late while stopping"; fi
st=$(sqlite3 "$TMP/db/store.db" "SELECT status FROM runs WHERE id=$JOB")
if [ $rc -eq 0 ] && [ "$st" = done ] && grep -q '^event: done' "$TMP/sse2"; then
    ok "SIGTERM: the running job finishes and its stream ends, exit 0"
else not_ok "graceful shutdown" "rc=$rc status=$st" "$(tail -3 "$TMP/main.err")"; fi

# Limits on a second server: 413 past --max-body, 429 past the rate.
serve_start lim --max-body 2048 --rate-limit 1 --rate-burst 3
head -c 5000 /dev/zero | tr '\0' x >"$TMP/big"
expect "a body past --max-body is 413" 413 "$U/v1/login" -H "Content-Type: application/json" -d @"$TMP/big"
n429=0
for _ in 1 2 3 4 5 6; do
    # '{}' is refused at once (400), so no Argon2 time refills the bucket
    [ "$(code "$U/v1/login" -H "Content-Type: application/json" -d '{}')" = 429 ] &&
        n429=$((n429 + 1))
done
if [ $n429 -ge 2 ] && grep -qi 'retry' "$TMP/body"; then
    ok "requests past the rate limit are 429"
else not_ok "429" "$n429 $(cat "$TMP/body")"; fi
kill -TERM "$PID_lim"
wait "$PID_lim"

# serve --open-registration opens it; /v1/models shows a user the model
# names only (no endpoint URL or file path), an admin the specs.
serve_start reg --open-registration --rate-limit 0 \
    --llm 'openai:http://127.0.0.1:9/v1#tiny-model' \
    --llm-choice 'other=gguf:/models/secret/dir/other.gguf'
expect "serve --open-registration lets anyone register" 201 "$U/v1/register" \
    -H "Content-Type: application/json" \
    -d '{"username":"erin","password":"erin-password"}'
curl -s -c "$TMP/ejar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"erin","password":"erin-password"}' >/dev/null
expect "a user's GET /v1/models" 200 -b "$TMP/ejar" "$U/v1/models"
if python3 - "$TMP/body" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["llm"]["default"] == "tiny-model", m["llm"]
assert "127.0.0.1" not in json.dumps(m) and "/models/" not in json.dumps(m), m
PY
then ok "a user's /v1/models names the model, never its endpoint"; else
    not_ok "a user's /v1/models" "$(head -c 400 "$TMP/body")"; fi
curl -s -c "$TMP/ajar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"alice-password"}' >/dev/null
expect "an admin's GET /v1/models" 200 -b "$TMP/ajar" "$U/v1/models"
grep -q 'openai:http://127.0.0.1:9/v1#tiny-model' "$TMP/body" &&
    ok "an admin's /v1/models shows the spec" ||
    not_ok "an admin's /v1/models" "$(head -c 400 "$TMP/body")"
kill -TERM "$PID_reg"
wait "$PID_reg"
"$MT" serve --db "$TMP/db" --open-registration --registration closed \
    --listen 127.0.0.1:0 >/dev/null 2>"$TMP/both.err"
[ $? -ne 0 ] && grep -q 'disagree' "$TMP/both.err" &&
    ok "--open-registration with --registration closed is refused" ||
    not_ok "conflicting registration options" "$(cat "$TMP/both.err")"
