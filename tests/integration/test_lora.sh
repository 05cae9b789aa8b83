#!/usr/bin/env bash
# LoRA adapters on gguf: models (issue 30), against llama.cpp's own
# llama-server --lora on the same files: a tiny random Qwen2 chat model and
# two tiny random LoRA adapters for it, all from make_tiny_gguf (the
# adapters laid out as convert_lora_to_gguf.py writes them). Greedy
# generation in process (gguf:BASE?lora=A[:SCALE]) equals the server's
# token for token (its logprobs' tokens against our per-token pieces),
# for one adapter at scale 1 and two at 0.5 and 1, and differs from the
# base model's. --lora on the verbs, the call cache keyed on the adapters,
# and the refusals (an openai: LLM, a missing file, a model that is not
# an adapter, an unknown option). Also the real server's profile line
# (what told it, its Server header). A missing llama-server fails.
. "$(dirname "$0")/lib.sh"
B=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LS=${MEDTRUST_LLAMA_SERVER:-$ROOT/third_party/llama-server/bin/llama-server}
need "llama-server (scripts/bootstrap builds it)" "$LS"
need "make_tiny_gguf" "$B/fixtures/make_tiny_gguf" "$B/fixtures/chat_stream"
need_verb models check
unset MEDTRUST_LLM MEDTRUST_NLI MEDTRUST_LLM_QA MEDTRUST_LLM_JUDGE
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
V="$ROOT/third_party/llama.cpp/models"
NTOK=24

gen() { "$B/fixtures/make_tiny_gguf" "$@" >/dev/null 2>&1 || { not_ok "make_tiny_gguf $*"; exit 1; }; }
gen chat "$TMP/chat.gguf" "$V" small-vocab
gen lora "$TMP/a1.gguf" "$V" 777
gen lora "$TMP/a2.gguf" "$V" 4242
gen embed "$TMP/bert.gguf" "$V"
gen lora "$TMP/same.gguf" "$V" 777
if cmp -s "$TMP/a1.gguf" "$TMP/same.gguf" && ! cmp -s "$TMP/a1.gguf" "$TMP/a2.gguf"; then
    ok "make_tiny_gguf lora: the same seed writes the same adapter, another seed another"
else
    not_ok "make_tiny_gguf lora is seeded"
fi

# serve ARGS...: llama-server on the chat model on a free loopback port,
# one slot, one thread; sets URL and PID.
serve() {
    local port i
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$LS" -m "$TMP/chat.gguf" --host 127.0.0.1 --port "$port" -t 1 -np 1 \
        --no-webui "$@" >"$TMP/server.log" 2>&1 &
    PID=$!
    URL="http://127.0.0.1:$port"
    for i in $(seq 240); do
        curl -sf "$URL/health" >/dev/null 2>&1 && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.5
    done
    not_ok "llama-server $* starts" "$(tail -5 "$TMP/server.log")"
    exit 1
}

# server_tokens OUT: the server's greedy reply to chat_stream's messages,
# its tokens from logprobs, as one JSON object {"text","tokens"}.
server_tokens() {
    curl -sf "$URL/v1/chat/completions" -H 'Content-Type: application/json' -d '{
        "messages": [{"role": "system", "content": "You check clinical notes."},
                     {"role": "user", "content": "Is 500 mg of aspirin a safe dose?"}],
        "temperature": 0, "max_tokens": '$NTOK', "logprobs": true}' |
        python3 -c 'import json, sys
r = json.load(sys.stdin)["choices"][0]
print(json.dumps({"text": r["message"]["content"],
                  "tokens": [c["token"] for c in r["logprobs"]["content"]]}))' >"$1"
}

# same NAME LOCAL.json SERVER.json: in-process pieces equal the server's tokens
same() {
    if python3 - "$2" "$3" "$NTOK" <<'PY'; then
import json, sys
a = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
n = int(sys.argv[3])
assert a["completion_tokens"] == n == len(s["tokens"]), (a, s)
assert a["piece_list"] == s["tokens"], (a["piece_list"], s["tokens"])
assert a["plain"] == a["streamed"] == s["text"], (a, s)
PY
        ok "$1"
    else
        not_ok "$1" "$(cat "$2")" "$(cat "$3")" "$(tail -3 "$TMP/err")"
    fi
}

local_run() { "$B/fixtures/chat_stream" "$1" greedy "$NTOK" "${@:2}" 2>>"$TMP/err"; }

local_run "gguf:$TMP/chat.gguf" >"$TMP/base.json"
local_run "gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf" >"$TMP/l1.json"
local_run "gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf:0.5&lora=$TMP/a2.gguf" >"$TMP/l12.json"

serve --lora "$TMP/a1.gguf"
server_tokens "$TMP/s1.json"
# the server profile names what told it, and the Server header seen
"$MT" models --llm "openai:$URL#chat" --embedder none >"$TMP/prof.txt" 2>"$TMP/err"
# (models pings first: the reply's own fields tell it before /props)
if grep -qE "server profile: llama-server \(auth Authorization: Bearer; $URL/v1/chat/completions; .*; detected from (its first reply's fields|GET /props) \(Server: llama\.cpp\)\)" "$TMP/prof.txt"; then
    ok "models: the real llama-server's profile says what told it, and its Server header"
else
    not_ok "models: llama-server profile source" "$(cat "$TMP/prof.txt")" "$(tail -3 "$TMP/err")"
fi
kill "$PID"
wait "$PID" 2>/dev/null
same "one adapter (llama-server --lora): greedy tokens in process equal the server's" \
    "$TMP/l1.json" "$TMP/s1.json"

serve --lora-scaled "$TMP/a1.gguf:0.5,$TMP/a2.gguf:1"
server_tokens "$TMP/s12.json"
kill "$PID"
wait "$PID" 2>/dev/null
same "two adapters at 0.5 and 1 (--lora-scaled): greedy tokens equal the server's" \
    "$TMP/l12.json" "$TMP/s12.json"

if python3 - "$TMP/base.json" "$TMP/l1.json" "$TMP/l12.json" <<'PY'; then
import json, sys
b, l1, l12 = (json.load(open(p)) for p in sys.argv[1:])
assert b["plain"] and b["model"] == "chat.gguf", b
assert l1["model"] == "chat.gguf+a1.gguf", l1
assert l12["model"] == "chat.gguf+a1.gguf:0.5+a2.gguf", l12
assert b["piece_list"] != l1["piece_list"] != l12["piece_list"], (b, l1, l12)
assert b["piece_list"] != l12["piece_list"]
PY
    ok "the adapters change the base model's greedy output, and the model name says which"
else
    not_ok "adapters change the output" "$(cat "$TMP/base.json")" "$(cat "$TMP/l1.json")"
fi

# ---- the call cache keys on the adapters ----
C="$TMP/calls.db"
local_run "gguf:$TMP/chat.gguf" 1 "$C" >"$TMP/c0.json"
local_run "gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf" 1 "$C" >"$TMP/c1.json"
local_run "gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf" 1 "$C" >"$TMP/c2.json"
local_run "gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf:0.5" 1 "$C" >"$TMP/c3.json"
if python3 - "$TMP"/c0.json "$TMP"/c1.json "$TMP"/c2.json "$TMP"/c3.json "$TMP/l1.json" <<'PY'; then
import json, sys
c0, c1, c2, c3, l1 = (json.load(open(p)) for p in sys.argv[1:])
assert not c0["cached"] and not c1["cached"] and not c3["cached"], (c0, c1, c3)
assert c1["plain"] == l1["plain"] != c0["plain"], (c0, c1)
assert c2["cached"] and c2["plain"] == c1["plain"], c2
assert c3["plain"] != c1["plain"], c3
PY
    ok "call cache: the base model's replies are not served to its adapted self, nor one scale's to another"
else
    not_ok "call cache keys on the adapters" "$(cat "$TMP/c0.json")" "$(cat "$TMP/c1.json")" "$(cat "$TMP/c2.json")"
fi

# ---- --lora on the verbs ----
"$MT" models --llm "gguf:$TMP/chat.gguf" --lora "$TMP/a1.gguf:0.5" --lora "$TMP/a2.gguf" \
    --embedder none --json >"$TMP/models.json" 2>"$TMP/err"
if grep -q "\"spec\":\"gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf:0.5&lora=$TMP/a2.gguf\",\"status\":\"ok\",\"detail\":\"gguf model chat.gguf+a1.gguf:0.5+a2.gguf," "$TMP/models.json"; then
    ok "models --lora A:0.5 --lora B loads the base with both adapters"
else
    not_ok "models --lora" "$(cat "$TMP/models.json")" "$(tail -3 "$TMP/err")"
fi

# an argv rebuilt from parsed options (sweep's runs) gives the spec made
# here and the --lora again: an adapter already in the spec is not added twice
"$MT" models --llm "gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf" --lora "$TMP/a1.gguf" \
    --embedder none --no-check --json >"$TMP/twice.json" 2>"$TMP/err"
if grep -q "\"spec\":\"gguf:$TMP/chat.gguf?lora=$TMP/a1.gguf\"" "$TMP/twice.json"; then
    ok "--lora naming an adapter the spec already has adds it once"
else
    not_ok "--lora idempotent" "$(cat "$TMP/twice.json")" "$(tail -3 "$TMP/err")"
fi

printf 'A 62-year-old man has chest pain.\nHe is given aspirin.\n' >"$TMP/note.txt"
MEDTRUST_LLM="gguf:$TMP/chat.gguf" "$MT" check --strategy single --max-tokens 8 \
    --lora "$TMP/a2.gguf" --cache "$TMP/check.db" "$TMP/note.txt" \
    --json >/dev/null 2>"$TMP/err"
m=$(sqlite3 "$TMP/check.db" 'SELECT DISTINCT model FROM model_calls' 2>&1)
if [ "$m" = "chat.gguf+a2.gguf" ]; then
    ok "check --lora (the LLM from MEDTRUST_LLM) calls the adapted model"
else
    not_ok "check --lora" "models in the cache: $m" "$(tail -3 "$TMP/err")"
fi

# ---- refusals name what to fix ----
refused() { # NAME WANT CMD...: exits non-zero and its output holds WANT
    local name=$1 want=$2
    shift 2
    if "$@" >"$TMP/err" 2>&1; then
        not_ok "$name" "exit 0"
    elif grep -qF -- "$want" "$TMP/err"; then
        ok "$name"
    else
        not_ok "$name" "$(tail -3 "$TMP/err")"
    fi
}
refused "--lora with an openai: LLM says to load the adapter in the server" \
    "then openai:URL#NAME picks it by model name" \
    "$MT" models --llm "openai:http://127.0.0.1:9#m" --lora "$TMP/a1.gguf" --embedder none
refused "a missing adapter is named" "cannot open the LoRA adapter $TMP/nope.gguf" \
    "$MT" models --llm "gguf:$TMP/chat.gguf" --lora "$TMP/nope.gguf" --embedder none
refused "a model that is no adapter is refused, naming it" \
    "the LoRA adapter $TMP/bert.gguf does not load" \
    "$MT" models --llm "gguf:$TMP/chat.gguf?lora=$TMP/bert.gguf" --embedder none
refused "an unknown gguf: option is refused" "unknown option 'lorax=1'" \
    "$MT" models --llm "gguf:$TMP/chat.gguf?lorax=1" --embedder none
