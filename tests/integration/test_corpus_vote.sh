#!/usr/bin/env bash
# Integration: `medtrust corpus vote` against the loopback stub server
# (tests/fixtures/stub_server, scripted replies): five votes per item at
# temperature 1.0 with distinct seeds, the 4-of-5 rule, the call cache, a
# resumed run after failures, and `corpus filter --keep`.
. "$(dirname "$0")/lib.sh"
STUB=${MEDTRUST_BUILD:?}/fixtures/stub_server
export MEDTRUST_LLM_TIMEOUT=10
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

reply() { # TEXT -> one scripted chat completion
    printf 'reply 200 0 - {"choices":[{"index":0,"message":{"role":"assistant","content":"%s"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}}\n' "$1"
}
start() { # NAME SCRIPT-FILE: sets SPEC
    "$STUB" "$2" "$TMP/$1.log" >"$TMP/$1.port" &
    PIDS+=($!)
    for _ in $(seq 50); do [ -s "$TMP/$1.port" ] && break; sleep 0.1; done
    SPEC="openai:http://127.0.0.1:$(head -1 "$TMP/$1.port")#stub"
}

cat >"$TMP/topics.jsonl" <<'EOF2'
{"id": "t1", "words": ["insulin", "diabetes", "glucose", "pancreas"]}
{"id": "t2", "words": ["football", "league", "goal", "season"]}
{"id": "t3", "text": "asthma inhaler bronchi wheeze"}
EOF2
printf 'Medical? {{text}}\n' >"$TMP/prompt.txt"
# t1: 5 yes; t2: 3 yes (dropped); t3: 4 yes, the no as "No." (kept).
{
    for v in "Yes" "yes" "Yes." "YES" "Yes"; do reply "$v"; done
    for v in "Yes" "No" "yes" "no" "Yes"; do reply "$v"; done
    for v in "Yes" "Yes" "No." "yes, it is" "Yes"; do reply "$v"; done
} >"$TMP/s1"
start s1 "$TMP/s1"
"$MT" corpus vote --input "$TMP/topics.jsonl" --out "$TMP/votes.jsonl" \
    --llm "$SPEC" --prompt "$TMP/prompt.txt" --jobs 1 --no-progress \
    --cache "$TMP/cache.db" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] &&
    grep -qx '{"id":"t1","votes":\["yes","yes","yes","yes","yes"\],"yes":5,"keep":true}' "$TMP/votes.jsonl" &&
    grep -qx '{"id":"t2","votes":\["yes","no","yes","no","yes"\],"yes":3,"keep":false}' "$TMP/votes.jsonl" &&
    grep -qx '{"id":"t3","votes":\["yes","yes","no","yes","yes"\],"yes":4,"keep":true}' "$TMP/votes.jsonl" &&
    grep -q '3 items, 2 kept, 0 failed' "$TMP/err"; then
    ok "vote: five votes an item, kept with at least four yes"
else
    not_ok "vote: votes and decisions" "rc=$rc" "$(cat "$TMP/err" "$TMP/votes.jsonl")"
fi
if [ "$(wc -l <"$TMP/s1.log")" -eq 15 ] &&
    [ "$(grep -c '"temperature":1' "$TMP/s1.log")" -eq 15 ] &&
    [ "$(grep -o '"seed":[0-9]*' "$TMP/s1.log" | sort -u | wc -l)" -eq 5 ] &&
    grep -q 'Medical? insulin, diabetes, glucose, pancreas' "$TMP/s1.log" &&
    grep -q 'Medical? asthma inhaler bronchi wheeze' "$TMP/s1.log"; then
    ok "vote: temperature 1.0, five seeds, the prompt file with {{text}} filled"
else
    not_ok "vote: requests" "$(head -3 "$TMP/s1.log")"
fi

# A rerun with the cache asks nothing (the stub now only fails).
reply "unused" | sed 's/^reply 200/reply 500/' >"$TMP/s2"
start s2 "$TMP/s2"
"$MT" corpus vote --input "$TMP/topics.jsonl" --out "$TMP/votes2.jsonl" \
    --llm "$SPEC" --prompt "$TMP/prompt.txt" --jobs 1 --no-progress \
    --cache "$TMP/cache.db" 2>"$TMP/err"
if cmp -s "$TMP/votes.jsonl" "$TMP/votes2.jsonl" && [ ! -s "$TMP/s2.log" ]; then
    ok "vote: a rerun with the call cache makes no model calls"
else
    not_ok "vote: cached rerun" "$(cat "$TMP/err")" "$(wc -l <"$TMP/s2.log")"
fi

# Resume: the first run fails on t2 and t3 (the stub errors after 5
# replies); --resume keeps t1 and asks only about the others.
{ for v in Yes Yes Yes Yes Yes; do reply "$v"; done
    echo 'reply 400 0 - {"error":"no"}'; } >"$TMP/s3"
start s3 "$TMP/s3"
"$MT" corpus vote --input "$TMP/topics.jsonl" --out "$TMP/v3.jsonl" \
    --llm "$SPEC" --jobs 1 --no-progress --retries 0 2>"$TMP/err"
rc=$?
first=$(wc -l <"$TMP/s3.log")
{ for v in No No No No No Yes Yes Yes Yes Yes; do reply "$v"; done; } >"$TMP/s4"
start s4 "$TMP/s4"
"$MT" corpus vote --input "$TMP/topics.jsonl" --out "$TMP/v3.jsonl" \
    --llm "$SPEC" --jobs 1 --no-progress --resume 2>"$TMP/err2"
rc2=$?
if [ $rc -ne 0 ] && grep -q '2 items could not be voted on' "$TMP/err" &&
    [ $rc2 -eq 0 ] && [ "$(wc -l <"$TMP/s4.log")" -eq 10 ] &&
    grep -q '"id":"t1",.*"yes":5' "$TMP/v3.jsonl" &&
    grep -q '"id":"t2",.*"yes":0,"keep":false' "$TMP/v3.jsonl" &&
    grep -q '"id":"t3",.*"yes":5,"keep":true' "$TMP/v3.jsonl"; then
    ok "vote: --resume keeps finished items and asks only about the rest"
else
    not_ok "vote: resume" "$rc $rc2 first=$first" "$(cat "$TMP/err" "$TMP/err2" "$TMP/v3.jsonl")"
fi

# A reply that is neither yes nor no goes through llmcall's repair turn
# (the reply echoed, then "Answer with one word: yes or no."): a yes then
# counts; neither twice is an "other" vote.
printf '%s\n' '{"id": "r1", "text": "sepsis"}' '{"id": "r2", "text": "opera"}' \
    >"$TMP/two.jsonl"
{ for v in "Perhaps" "Yes" "Hmm" "Dunno"; do reply "$v"; done; } >"$TMP/s5"
start s5 "$TMP/s5"
"$MT" corpus vote --input "$TMP/two.jsonl" --out "$TMP/v5.jsonl" \
    --llm "$SPEC" --prompt "$TMP/prompt.txt" --votes 1 --min-yes 1 --jobs 1 \
    --no-progress 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(wc -l <"$TMP/s5.log")" -eq 4 ] &&
    grep -qx '{"id":"r1","votes":\["yes"\],"yes":1,"keep":true}' "$TMP/v5.jsonl" &&
    grep -qx '{"id":"r2","votes":\["other"\],"yes":0,"keep":false}' "$TMP/v5.jsonl" &&
    [ "$(grep -c 'Answer with one word: yes or no.' "$TMP/s5.log")" -eq 2 ] &&
    sed -n 2p "$TMP/s5.log" | grep -q '"role":"assistant","content":"Perhaps"'; then
    ok "vote: a reply neither yes nor no is asked once more (llmcall's repair)"
else
    not_ok "vote: repair turn" "rc=$rc" "$(cat "$TMP/err" "$TMP/v5.jsonl"; head -c 600 "$TMP/s5.log")"
fi

# filter: documents labelled with their topic.
cat >"$TMP/docs.jsonl" <<'EOF2'
{"id": "d1", "topic": "t1", "text": "Insulin lowers blood glucose."}
{"id": "d2", "topic": "t2", "text": "The league season starts."}
{"id": "d3", "topic": "t3", "text": "Inhalers relieve asthma."}
{"id": "d4", "topic": "t9", "text": "A topic nobody voted on."}
EOF2
"$MT" corpus filter --keep "$TMP/votes.jsonl" --input "$TMP/docs.jsonl" \
    --out "$TMP/kept.jsonl" 2>"$TMP/err"
if [ "$(grep -o '"id":"d[0-9]"' "$TMP/kept.jsonl" | tr '\n' ' ')" = '"id":"d1" "id":"d3" ' ] &&
    grep -q '2 documents kept, 2 dropped' "$TMP/err"; then
    ok "filter: keeps the documents whose topic passed"
else
    not_ok "filter" "$(cat "$TMP/err" "$TMP/kept.jsonl")"
fi
"$MT" corpus filter --keep "$TMP/docs.jsonl" --input "$TMP/docs.jsonl" \
    --out "$TMP/bad.jsonl" 2>"$TMP/err"
if grep -q 'docs.jsonl:1: not a corpus vote line' "$TMP/err" && [ ! -e "$TMP/bad.jsonl" ]; then
    ok "filter: a file that is not votes is named, nothing written"
else
    not_ok "filter: wrong keep file" "$(cat "$TMP/err")"
fi
