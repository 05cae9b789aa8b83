#!/usr/bin/env bash
# A build tree moved to another folder still runs: the binary's run path
# is $ORIGIN-relative (no absolute path into the checkout), it links
# llama.cpp from the copy in the moved tree's lib/medtrust, loads its CPU
# backend and the USE-lite weights from there, and opens a GGUF model. And
# a plain `make` in a checkout without third_party/ stops and says to run
# `make bootstrap` instead of building a binary without them.
. "$(dirname "$0")/lib.sh"
B=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
need "a built tree" "$B/medtrust" "$B/lib/medtrust/libggml-base.so" \
    "$B/use-lite.mtw" "$B/fixtures/make_tiny_gguf"

# The parts of the build tree the binary uses, copied to a new folder.
M=$TMP/moved/build
mkdir -p "$M"
cp -a "$B/medtrust" "$B/lib" "$B/use-lite.mtw" "$M/"

rpath=$(readelf -d "$M/medtrust" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
if [ -n "$rpath" ] && ! echo "$rpath" | tr ':' '\n' | grep -qv '^\$ORIGIN'; then
    ok "the binary's run path is all \$ORIGIN-relative ($rpath)"
else
    not_ok "relative run path" "RUNPATH: $rpath"
fi
libs=$(ldd "$M/medtrust" | grep -E 'libllama|libggml')
if [ -n "$libs" ] && ! echo "$libs" | grep -v -q "$M/lib/medtrust/"; then
    ok "the moved binary links llama.cpp from the moved tree"
else
    not_ok "moved binary's libraries" "$libs"
fi

"$B/fixtures/make_tiny_gguf" chat "$TMP/chat.gguf" \
    "$ROOT/third_party/llama.cpp/models" >/dev/null 2>&1
(cd "$TMP" && "$M/medtrust" --verbose models --llm "gguf:$TMP/chat.gguf" \
    --embedder use-lite) >"$TMP/models" 2>&1
if grep -q "backends from $M/lib/medtrust" "$TMP/models" &&
    grep -q "loaded CPU backend from $M/lib/medtrust/" "$TMP/models" &&
    grep -q "use-lite: loaded $M/use-lite.mtw" "$TMP/models" &&
    grep -q 'gguf:.*ok' "$TMP/models"; then
    ok "it loads the CPU backend, USE-lite and a GGUF model from the moved tree"
else
    not_ok "moved tree's backends, weights and model" "$(head -8 "$TMP/models")"
fi

# A checkout without third_party/: make refuses, naming the fix.
mkdir -p "$TMP/bare"
git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 cp --parents -t "$TMP/bare")
make -C "$TMP/bare" >"$TMP/bare.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q 'run `make bootstrap` first' "$TMP/bare.log" &&
    [ ! -e "$TMP/bare/build/medtrust" ]; then
    ok "make without third_party/ stops and says to run make bootstrap"
else
    not_ok "make without the bootstrap" "rc=$rc" "$(tail -3 "$TMP/bare.log")"
fi
