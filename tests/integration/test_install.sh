#!/usr/bin/env bash
# `make install` gives a self-contained tree: the binary finds llama.cpp's
# libraries and CPU backends in PREFIX/lib/medtrust through its $ORIGIN
# run path, not in the source tree's third_party, and loads a GGUF model.
. "$(dirname "$0")/lib.sh"
B=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
need "llama.cpp's prebuilt libraries" "$ROOT/third_party/llama-linux-x64"

# The same variables as `make test`, so nothing is rebuilt.
if make -s -C "$ROOT" install BUILD="$B" SANITIZE=1 WERROR=1 OPT="-O1 -g" \
    DESTDIR="$TMP/root" PREFIX=/opt/mt >"$TMP/make.log" 2>&1; then
    ok "make install DESTDIR=... PREFIX=/opt/mt"
else
    not_ok "make install" "$(tail -5 "$TMP/make.log")"
    exit 0
fi
P=$TMP/root/opt/mt
libs=$(ldd "$P/bin/medtrust" | grep -E 'libllama|libggml')
if [ -n "$libs" ] && ! echo "$libs" | grep -v -q "$P/bin/../lib/medtrust/"; then
    ok "the installed binary links llama.cpp from PREFIX/lib/medtrust"
else
    not_ok "installed run path" "$libs"
fi
"$B/fixtures/make_tiny_gguf" chat "$TMP/chat.gguf" \
    "$ROOT/third_party/llama.cpp/models" >/dev/null 2>&1
"$P/bin/medtrust" --verbose models --llm "gguf:$TMP/chat.gguf" \
    --embedder use-lite >"$TMP/models" 2>&1
if grep -q "backends from $P/bin/../lib/medtrust" "$TMP/models" &&
    grep -q "loaded CPU backend from $P/bin/../lib/medtrust/" "$TMP/models" &&
    grep -q "use-lite: loaded $P/bin/../share/medtrust" "$TMP/models"; then
    ok "it loads the CPU backend and USE-lite weights from the install"
else
    not_ok "backends and weights from the install" "$(head -5 "$TMP/models")"
fi
if "$P/bin/medtrust" models --llm "gguf:$TMP/chat.gguf" --json |
    grep -q '"kind":"llm","spec":"gguf:[^"]*","status":"ok"'; then
    ok "the installed binary loads a GGUF model"
else
    not_ok "installed binary and a GGUF model"
fi

# A library of PKGS that pkg-config cannot find stops the build naming it
# (pkg-config alone would print no flags for any of them, without a word).
if ! make -n -C "$ROOT" all BUILD="$B" SANITIZE=1 WERROR=1 OPT="-O1 -g" \
    PKGS="sqlite3 jansson medtrust-no-such-lib" >"$TMP/pkg.log" 2>&1 &&
    grep -q "pkg-config finds no medtrust-no-such-lib (of PKGS" "$TMP/pkg.log" &&
    make -n -C "$ROOT" all BUILD="$B" SANITIZE=1 WERROR=1 OPT="-O1 -g" \
        >/dev/null 2>&1; then
    ok "a library pkg-config cannot find stops make, naming it"
else
    not_ok "missing pkg-config library" "$(tail -3 "$TMP/pkg.log")"
fi
