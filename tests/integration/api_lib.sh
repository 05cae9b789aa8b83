# Helpers for the /v1 API tests (check, ask): a small PubMedQA store with
# the user alice, servers started on loopback, curl wrappers and the job
# queue's state. Source after lib.sh and agent_lib.sh.
SERVE_PIDS=()
trap 'for p in "${STUB_PIDS[@]}" "${SERVE_PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

head -150 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --source pubmedqa \
    --no-progress >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/db" alice 2>/dev/null

# serve_start NAME ARGS...: starts a server; sets U, A (curl auth args).
serve_start() {
    local name=$1 csrf
    shift
    "$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" &
    SERVE_PIDS+=($!)
    for _ in $(seq 100); do
        grep -q listening "$TMP/$name.out" 2>/dev/null && break
        sleep 0.1
    done
    U=$(sed -n 's/^listening on http:\/\/[a-z0-9.]*:\([0-9]*\)$/http:\/\/127.0.0.1:\1/p' "$TMP/$name.out")
    curl -s -c "$TMP/$name.jar" "$U/v1/login" \
        -d '{"username":"alice","password":"alice-password"}' >"$TMP/body"
    csrf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
    A=(-b "$TMP/$name.jar" -H "X-CSRF-Token: $csrf")
}
code() { curl -s -o "$TMP/body" -w '%{http_code}' "$@"; }
expect() { # expect NAME CODE CURL-ARGS...
    local name=$1 want=$2 got
    shift 2
    got=$(code "$@")
    if [ "$got" = "$want" ]; then ok "$name"; else
        not_ok "$name" "wanted $want, got $got: $(head -c 300 "$TMP/body")"
    fi
}
# jobs_state: "RUNNING QUEUED MAX_RUNNING" from /v1/health.
jobs_state() {
    curl -s "$U/v1/health" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"]; print(j["running"], j["queued"], j["max_running"])'
}
