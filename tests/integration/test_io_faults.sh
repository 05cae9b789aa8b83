#!/usr/bin/env bash
# Integration (issue 39, "one file layer"): I/O-fault injection, SQLite's
# way. Every durable write, fsync and rename of our own files goes through
# src/core/file.c; MEDTRUST_IO_FAIL=N fails the Nth of them (and every one
# after: a full disk stays full) with ENOSPC, or EIO every other N. Each of
# `index`, `import --db`, `import --jsonl`, `publish`, `mediqa` and a
# server batch runs once per N = 0, 1, 2, ... until a run passes cleanly,
# and after each faulted run: exit 3 with one error naming a file under
# the test folder, no sanitizer report (ASan/LSan/UBSan abort the run),
# the store's integrity check passes, the last published snapshot still
# serves, and a rerun or --resume ends with exactly the data of an
# unfaulted run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
need_verb index import publish mediqa serve
unset MEDTRUST_IO_FAIL MEDTRUST_LLM MEDTRUST_LLM_SINGLE
export MEDTRUST_EMBEDDER=use-lite MEDTRUST_LLM_TIMEOUT=20
[ -f "$MEDTRUST_BUILD/use-lite.mtw" ] &&
    export MEDTRUST_USE_LITE=${MEDTRUST_USE_LITE:-$MEDTRUST_BUILD/use-lite.mtw}
head -12 "$DATA/pubmedqa/corpus.jsonl" >"$TMP/c.jsonl"
head -24 "$DATA/pubmedqa/corpus.jsonl" | tail -12 >"$TMP/c2.jsonl"
MAXN=400 # no command here takes this many file operations

# fault N: MEDTRUST_IO_FAIL's value for run N (ENOSPC, EIO every other).
fault() { [ $(($1 % 2)) -eq 0 ] && echo "$1" || echo "$1:EIO"; }
# clean_fail WHAT N RC ERR: a faulted run that failed as it should. Sets
# BAD (the first problem) when it did not. With CRASH set the run must
# have died of the simulated power loss (SIGKILL, 137) instead.
clean_fail() {
    local what=$1 n=$2 rc=$3 err=$4
    if grep -qE 'Sanitizer|runtime error|Segmentation|Aborted' "$err"; then
        BAD="$what at op $n: sanitizer or crash: $(grep -m1 -E 'Sanitizer|runtime error' "$err")"
    elif [ -n "${CRASH:-}" ]; then
        [ "$rc" -eq 137 ] && grep -q "power lost at file operation $n" "$err" ||
            BAD="$what at op $n: exit $rc, not the power loss: $(tail -1 "$err")"
    elif [ "$rc" -ne 3 ]; then
        BAD="$what at op $n: exit $rc, not 3: $(tail -1 "$err")"
    elif ! grep -q "error: .*$TMP/.*\(No space left\|Input/output error\)" "$err"; then
        BAD="$what at op $n: no error naming a file and the cause: $(tail -2 "$err")"
    fi
}
# search_of DB [nostats]: the ids and scores a few searches give (the
# data a reader sees), and the store's counts.
search_of() {
    local q m
    for q in "lace plant:hybrid" "cancer risk:bm25" "children:bm25"; do
        m=${q##*:}
        "$MT" search --db "$1" --group chunks --json --mode "$m" "${q%:*}" 2>/dev/null |
            python3 -c 'import json,sys
for l in sys.stdin:
    h = json.loads(l)
    print(h["rank"], h["doc_id"], h["chunk_id"], round(h["score"], 4))'
    done
    [ -n "${2:-}" ] || "$MT" stats --db "$1" --json 2>/dev/null | grep -v '"index"'
}
integrity() { # integrity DB: the store opens and its integrity check passes
    [ ! -e "$1/store.db" ] || "$MT" stats --db "$1" --check >/dev/null 2>&1
}
# loop WHAT RUN VERIFY: RUN N (with the fault set: MEDTRUST_IO_FAIL, or
# MEDTRUST_IO_CRASH when CRASH is set) until it exits 0; VERIFY N after
# each faulted run. One ok/not ok for the lot.
loop() {
    local what=$1 run=$2 verify=$3 n rc how
    how="fails cleanly (exit 3, the file named)"
    [ -n "${CRASH:-}" ] && how="loses what no fsync covered (power loss)" &&
        what="$what, power loss"
    BAD=
    for ((n = 0; n < MAXN; n++)); do
        if [ -n "${CRASH:-}" ]; then
            MEDTRUST_IO_CRASH=$n $run $n >"$TMP/out" 2>"$TMP/err"
        else
            MEDTRUST_IO_FAIL=$(fault $n) $run $n >"$TMP/out" 2>"$TMP/err"
        fi
        rc=$?
        [ $rc -eq 0 ] && break
        clean_fail "$what" $n $rc "$TMP/err"
        [ -z "$BAD" ] && $verify $n
        [ -n "$BAD" ] && break
    done
    if [ -z "$BAD" ] && [ $n -lt $MAXN ] && [ $n -gt 0 ] && $verify $n; then
        [ -z "$BAD" ] && ok "$what: a fault at each of its $n file operations $how, and a rerun ends as an unfaulted run"
    fi
    [ -n "$BAD" ] && not_ok "$what under I/O faults" "$BAD"
    [ $n -ge $MAXN ] && not_ok "$what under I/O faults" "never passed in $MAXN runs"
    [ $n -eq 0 ] && not_ok "$what under I/O faults" "no file operation was faulted"
}

# ---- index ----
"$MT" index --db "$TMP/ref" --input "$TMP/c.jsonl" --no-progress >/dev/null 2>&1
search_of "$TMP/ref" >"$TMP/ref.search"
[ -s "$TMP/ref.search" ] || not_ok "reference index" "no search results"
run_index() {
    rm -rf "$TMP/db"
    "$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --no-progress
}
verify_index() {
    integrity "$TMP/db" || { BAD="index at op $1: integrity check failed"; return 1; }
    "$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --no-progress >/dev/null 2>"$TMP/rerun.err" ||
        { BAD="index at op $1: the rerun failed: $(tail -1 "$TMP/rerun.err")"; return 1; }
    search_of "$TMP/db" | cmp -s - "$TMP/ref.search" ||
        { BAD="index at op $1: the rerun's data differ from an unfaulted run"; return 1; }
}
loop "index" run_index verify_index

# ---- import --db (then index) and import --jsonl (MedQuAD, one folder) ----
# (the store's own writes go through SQLite; the index's through ours)
MQ="$DATA/formats/medquad/1_CancerGov_QA"
imp() { "$MT" import medquad --db "$1" "$MQ" --no-progress &&
    "$MT" index --db "$1" --no-progress; }
imp "$TMP/iref" >/dev/null 2>&1
search_of "$TMP/iref" >"$TMP/iref.search"
run_import() {
    rm -rf "$TMP/idb"
    imp "$TMP/idb"
}
verify_import() {
    integrity "$TMP/idb" || { BAD="import at op $1: integrity check failed"; return 1; }
    imp "$TMP/idb" >/dev/null 2>"$TMP/rerun.err" ||
        { BAD="import at op $1: the rerun failed: $(tail -1 "$TMP/rerun.err")"; return 1; }
    search_of "$TMP/idb" | cmp -s - "$TMP/iref.search" ||
        { BAD="import at op $1: the rerun's data differ from an unfaulted run"; return 1; }
}
loop "import --db + index" run_import verify_import

"$MT" import medquad --jsonl "$TMP/ref.jsonl" "$MQ" --no-progress >/dev/null 2>&1
run_jsonl() { "$MT" import medquad --jsonl "$TMP/out.jsonl" "$MQ" --no-progress; }
verify_jsonl() {
    if [ "$1" -lt 9999 ] && [ -e "$TMP/out.jsonl" ] && ! cmp -s "$TMP/out.jsonl" "$TMP/ref.jsonl"; then
        BAD="import --jsonl at op $1: a torn or partial output file was left"
        return 1
    fi
    # (a power loss leaves an OUT.part-PID behind, as any crash would)
    [ -z "${CRASH:-}" ] && ls "$TMP" | grep -q 'out.jsonl.part' &&
        { BAD="import --jsonl at op $1: its .part file was left behind"; return 1; }
    run_jsonl >/dev/null 2>&1 && cmp -s "$TMP/out.jsonl" "$TMP/ref.jsonl" ||
        { BAD="import --jsonl at op $1: the rerun differs"; return 1; }
    rm -f "$TMP/out.jsonl"
}
loop "import --jsonl" run_jsonl verify_jsonl

# ---- publish: the last published snapshot still serves ----
"$MT" index --db "$TMP/pa" --input "$TMP/c.jsonl" --no-progress >/dev/null 2>&1
"$MT" publish --db "$TMP/pa" --to "$TMP/pub" >/dev/null 2>&1
search_of "$TMP/pub" nostats >"$TMP/pub1.search"
"$MT" index --db "$TMP/pa" --input "$TMP/c2.jsonl" --no-progress >/dev/null 2>&1
search_of "$TMP/pa" nostats >"$TMP/pa2.search"
cp -a "$TMP/pub" "$TMP/pub.orig"
run_publish() {
    rm -rf "$TMP/pub"
    cp -a "$TMP/pub.orig" "$TMP/pub"
    "$MT" publish --db "$TMP/pa" --to "$TMP/pub"
}
verify_publish() {
    search_of "$TMP/pub" nostats >"$TMP/pubn.search"
    if ! cmp -s "$TMP/pubn.search" "$TMP/pub1.search" &&
        ! cmp -s "$TMP/pubn.search" "$TMP/pa2.search"; then
        BAD="publish at op $1: the publish folder serves neither the last snapshot nor the new one"
        return 1
    fi
    "$MT" publish --db "$TMP/pa" --to "$TMP/pub" >/dev/null 2>"$TMP/rerun.err" ||
        { BAD="publish at op $1: the rerun failed: $(tail -1 "$TMP/rerun.err")"; return 1; }
    search_of "$TMP/pub" nostats | cmp -s - "$TMP/pa2.search" ||
        { BAD="publish at op $1: the rerun does not serve the new data"; return 1; }
}
loop "publish" run_publish verify_publish

# ---- mediqa: journal and submission; --resume ends as an unbroken run ----
csv_head "$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv" 6 "$TMP/s6.csv"
stub_start main
mq() { "$MT" mediqa --llm "$SPEC" --data "$TMP/s6.csv" --strategy single \
    --no-progress --jobs 2 --out "$TMP/$1.txt" --trace "$TMP/$1.jsonl" "${@:2}"; }
mq mref >/dev/null 2>&1
ids() { python3 -c 'import json,sys; print(" ".join(sorted(json.loads(l)["id"] for l in open(sys.argv[1]))))' "$1"; }
run_mediqa() { rm -f "$TMP/mq."*; mq mq; }
verify_mediqa() {
    mq mq --resume >/dev/null 2>"$TMP/rerun.err" ||
        { BAD="mediqa at op $1: --resume failed: $(tail -1 "$TMP/rerun.err")"; return 1; }
    cmp -s "$TMP/mq.txt" "$TMP/mref.txt" &&
        [ "$(ids "$TMP/mq.jsonl")" = "$(ids "$TMP/mref.jsonl")" ] ||
        { BAD="mediqa at op $1: --resume's submission or trace differ from an unbroken run"; return 1; }
}
loop "mediqa" run_mediqa verify_mediqa

# ---- power loss: the same runs "crash" at each operation in turn ----
CRASH=1
loop "index" run_index verify_index
loop "import --db + index" run_import verify_import
loop "import --jsonl" run_jsonl verify_jsonl
loop "publish" run_publish verify_publish
loop "mediqa" run_mediqa verify_mediqa
CRASH=

# ---- a server batch: the run fails naming the file (or the upload is
# refused, 507), and after a restart without the fault POST
# /v1/runs/ID/resume (or the batch again) ends with the unfaulted
# submission ----
SERVE_PIDS=()
trap 'for p in "${STUB_PIDS[@]}" "${SERVE_PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
"$MT" index --db "$TMP/bdb0" --input "$TMP/c.jsonl" --no-progress >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/bdb0" alice 2>/dev/null
BODY=$(python3 -c 'import json,sys; print(json.dumps({"data": open(sys.argv[1], encoding="utf-8").read(), "strategy": "single", "name": "io"}))' "$TMP/s6.csv")
"$MT" mediqa --llm "$SPEC" --data "$TMP/s6.csv" --strategy single \
    --no-progress --out "$TMP/bref.txt" >/dev/null 2>&1
. "$(dirname "$0")/serve_lib.sh"
SERVE_WAIT=600 # a loaded machine: up to 60 s to start (no timing is asserted)
stop_servers() {
    local p
    for p in "${SERVE_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    SERVE_PIDS=()
}
# batch_go NAME: POSTs the batch (or resumes RUN when set) and waits for
# its end; RUN and STATUS (the run's status or the POST's HTTP code).
batch_go() {
    local c
    if [ -n "${RUN:-}" ]; then
        c=$(code "${A[@]}" -X POST "$U/v1/runs/$RUN/resume")
    else
        c=$(code "${A[@]}" "$U/v1/batch" -d "$BODY")
        RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("run_id",""))' "$TMP/body" 2>/dev/null)
    fi
    STATUS=$c
    [ "$c" = 202 ] || return 0
    curl -sN "${A[@]}" "$U/v1/runs/$RUN/events" >/dev/null
    curl -s "${A[@]}" "$U/v1/runs/$RUN" >"$TMP/run.json"
    STATUS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$TMP/run.json")
}
BAD=
for ((n = 0; n < 60; n++)); do
    rm -rf "$TMP/bdb" "$TMP/bl"
    cp -a "$TMP/bdb0" "$TMP/bdb"
    RUN=
    SERVE_DB=$TMP/bdb MEDTRUST_IO_FAIL=$(fault $n) serve_start bf --llm "$SPEC" \
        --data-dir "$TMP/bl"
    batch_go
    stop_servers
    if grep -qE 'Sanitizer|runtime error' "$TMP/bf.err"; then
        BAD="batch at op $n: $(grep -m1 -E 'Sanitizer|runtime error' "$TMP/bf.err")"
        break
    fi
    [ "$STATUS" = done ] && break
    if [ "$STATUS" = failed ] && grep -q "$TMP/bdb/.*\(No space\|Input/output\)" "$TMP/run.json"; then
        :
    elif [ "$STATUS" = 507 ] && grep -q "$TMP/bdb/" "$TMP/body"; then
        RUN=
    else
        BAD="batch at op $n: status $STATUS: $(head -c 300 "$TMP/run.json" "$TMP/body" 2>/dev/null)"
        break
    fi
    SERVE_DB=$TMP/bdb serve_start bok --llm "$SPEC" --data-dir "$TMP/bl"
    batch_go
    stop_servers
    if [ "$STATUS" != done ] ||
        ! cmp -s "$TMP/bdb/batches/run-$RUN/submission.txt" "$TMP/bref.txt"; then
        BAD="batch at op $n: after a restart the resumed run is $STATUS and its submission differs: $(tail -2 "$TMP/bok.err") $(head -c 300 "$TMP/body")"
        break
    fi
done
if [ -z "$BAD" ] && [ $n -gt 0 ] && [ $n -lt 60 ] &&
    cmp -s "$TMP/bdb/batches/run-$RUN/submission.txt" "$TMP/bref.txt"; then
    ok "server batch: a fault at each of its $n file operations fails the run naming the file; resumed after a restart it ends as an unfaulted run"
else
    not_ok "server batch under I/O faults" "${BAD:-ended at op $n}"
fi
