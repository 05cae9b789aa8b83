# Helpers for the /v1 API tests (check, ask): a small PubMedQA store with
# the user alice, servers started on loopback, curl wrappers and the job
# queue's state. Source after lib.sh and agent_lib.sh.
SERVE_PIDS=()
trap 'for p in "${STUB_PIDS[@]}" "${SERVE_PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# PubMedQA has no authors or journals: give each document some, as a
# PubMed import writes them ("authors" and "publication_types" arrays, a
# "journal"), for the metadata filters; BM25 does not index them.
head -150 "$DATA/pubmedqa/corpus.jsonl" | python3 -c '
import json, sys
for i, l in enumerate(sys.stdin):
    d = json.loads(l)
    d["authors"] = ["Author %d" % (i % 5), "Kim Lee"]
    d["journal"] = "Journal %d of Medicine" % (i % 3)
    d["publication_types"] = ["Review" if i % 2 else "Clinical Trial"]
    print(json.dumps(d))' >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --source pubmedqa \
    --no-progress >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/db" alice 2>/dev/null

. "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
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

# job_cap_check WHAT PATH BODY QUERY: with a stub answering after 2 s and a
# server capped at one LLM job, three POSTs of BODY to PATH run one at a
# time while a search for QUERY still answers; then every server started
# stops cleanly on SIGTERM. No timing thresholds: an order of events.
job_cap_check() {
    local what=$1 path=$2 req=$3 query=$4
    local running queued maxr running2 queued2 p rc=0
    stub_start slow --delay 2000
    serve_start cap --llm "$SPEC" --llm-jobs 1 --rate-limit 0
    for _ in 1 2 3; do
        code "${A[@]}" "$U$path" -d "$req" >/dev/null
    done
    for _ in $(seq 100); do
        read -r running queued maxr <<<"$(jobs_state)"
        [ "$running" = 1 ] && break
        sleep 0.1
    done
    if [ "$running" = 1 ] && [ "$queued" -ge 1 ] && [ "$maxr" = 1 ]; then
        ok "--llm-jobs 1 runs one $what and queues the others"
    else not_ok "LLM job cap" "running $running queued $queued max $maxr"; fi
    code "${A[@]}" "$U/v1/search" -d "{\"query\":\"$query\",\"k\":5}" >"$TMP/scode"
    read -r running2 queued2 _ <<<"$(jobs_state)"
    if [ "$(cat "$TMP/scode")" = 200 ] && [ $((running2 + queued2)) -ge 1 ]; then
        ok "a search answers while ${what}s are still queued or running"
    else not_ok "search during ${what}s" "code $(cat "$TMP/scode"), running $running2 queued $queued2"; fi
    for p in "${SERVE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${SERVE_PIDS[@]}"; do wait "$p" || rc=$?; done
    SERVE_PIDS=()
    [ $rc -eq 0 ] && ok "the servers stop cleanly on SIGTERM" ||
        not_ok "servers stop" "rc=$rc" "$(tail -3 "$TMP"/*.err 2>/dev/null)"
}

# no_model_check WHAT PATH BODY: on a server without a model, POST BODY to
# PATH is 503 saying how to configure one, and no run is recorded.
no_model_check() {
    local what=$1 path=$2 req=$3
    expect "$what without a model is 503" 503 "${A[@]}" "$U$path" -d "$req"
    grep -q -- '--llm' "$TMP/body" && grep -q 'MEDTRUST_LLM' "$TMP/body" &&
        ok "the 503 says how to configure a model" ||
        not_ok "the 503 says how to configure a model" "$(cat "$TMP/body")"
    expect "no run was recorded for it" 200 "${A[@]}" "$U/v1/runs"
    grep -q '"runs":\[\]' "$TMP/body" && ok "the runs list is empty" ||
        not_ok "the runs list is empty" "$(cat "$TMP/body")"
}
