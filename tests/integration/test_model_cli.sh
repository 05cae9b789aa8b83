#!/usr/bin/env bash
# Integration tests for `medtrust embed` and `medtrust models` (model
# layer). Loopback only: the OpenAI-compatible stub and tiny GGUF models
# made here.
. "$(dirname "$0")/lib.sh"
B=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}
need_verb embed models

check "embed --json prints text and a vector" \
    bash -c "'$MT' embed --json 'chest pain' 'fever' > '$TMP/e.jsonl' &&
             [ \$(wc -l < '$TMP/e.jsonl') -eq 2 ] &&
             grep -q '^{\"text\":\"chest pain\",\"vector\":\\[' '$TMP/e.jsonl'"

printf '{"text":"aspirin"}\n{"text":"insulin"}\n{"text":"renal"}\n' \
    > "$TMP/in.jsonl"
check "embed --input reads JSONL" \
    bash -c "[ \$('$MT' embed --input '$TMP/in.jsonl' | wc -l) -eq 3 ]"

check "embed --dims truncates" \
    bash -c "[ \$('$MT' embed --dims 8 x | wc -w) -eq 8 ]"

if "$MT" embed x y >/dev/null 2>&1 --input "$TMP/in.jsonl"; then
    not_ok "embed refuses TEXT together with --input"
else
    ok "embed refuses TEXT together with --input"
fi

if "$B/fixtures/make_tiny_gguf" chat "$TMP/chat.gguf" \
    third_party/llama.cpp/models >/dev/null 2>&1; then
    want="\"kind\":\"llm\",\"spec\":\"gguf:$TMP/chat.gguf\",\"status\":\"ok\""
    check "models loads a gguf chat model" \
        bash -c "'$MT' models --llm 'gguf:$TMP/chat.gguf' --json |
                 grep -qF '$want'"
fi

"$MT" models --llm "gguf:$TMP/missing.gguf" >"$TMP/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'fix the path in --llm' "$TMP/out"; then
    ok "models reports a missing model and the setting"
else
    not_ok "models reports a missing model and the setting" "rc=$rc" \
        "$(head -3 "$TMP/out")"
fi

MEDTRUST_LLM_EVAL="openai:http://127.0.0.1:1#m" "$MT" models --no-check \
    >"$TMP/out" 2>&1
if grep -q '^llm\[EVAL\] .*unchecked' "$TMP/out"; then
    ok "models lists per-role overrides"
else
    not_ok "models lists per-role overrides" "$(head -5 "$TMP/out")"
fi
