#!/usr/bin/env bash
# scripts/bootstrap in a copy of the checkout with an empty third_party (so
# no stamp short-circuits it), the machine's apt and dpkg replaced by
# recorders on PATH (nothing is installed):
# - an unreachable npm registry (a refused port; a port that accepts and
#   never answers) fails each fetch within MEDTRUST_NPM_TIMEOUT, naming
#   what it was waiting for, the registry and what to do, leaving no half
#   package behind;
# - --demo asks apt for the build's and the demo's packages only (no
#   PostgreSQL, Chromium, clang, cmake, test tools) and fetches no test
#   tools or llama-server; the full bootstrap asks for them all.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
need "npm" "$(command -v npm)"
C=$TMP/clone
mkdir -p "$C/scripts" "$TMP/bin"
cp "$ROOT/scripts/bootstrap" "$C/scripts/"
# dpkg-query: every package installed (or, with NOTHING_INSTALLED, none);
# apt-get: records its arguments. Run as root or not, no sudo is needed.
cat >"$TMP/bin/dpkg-query" <<'SH'
#!/bin/sh
[ -n "$NOTHING_INSTALLED" ] && exit 1
printf 'install ok installed'
SH
cat >"$TMP/bin/apt-get" <<'SH'
#!/bin/sh
echo "$*" >>"$APT_LOG"
SH
cp "$TMP/bin/apt-get" "$TMP/bin/sudo" # sudo apt-get ...: the same record
cat >"$TMP/bin/useradd" <<'SH'
#!/bin/sh
echo "useradd $*" >>"$APT_LOG"
SH
chmod +x "$TMP/bin"/*
export APT_LOG=$TMP/apt.log
boot() { # ARGS...: the copy's bootstrap; output in $TMP/out, rc in $rc
    PATH="$TMP/bin:$PATH" timeout 600 bash "$C/scripts/bootstrap" "$@" \
        >"$TMP/out" 2>&1
    rc=$?
}

# ---- a registry that refuses connections ----
npm_config_registry=http://127.0.0.1:9 MEDTRUST_NPM_TIMEOUT=60 boot --demo
if [ $rc -eq 1 ] &&
    grep -q 'fetching node-llama-cpp@3.22.1 from http://127.0.0.1:9 (gives up after 60 s' "$TMP/out" &&
    grep -q 'npm: npm error code ECONNREFUSED' "$TMP/out" &&
    grep -q 'cannot fetch node-llama-cpp@3.22.1 from http://127.0.0.1:9 (npm exit 1)' "$TMP/out" &&
    grep -q 'npm_config_registry to a registry you can reach' "$TMP/out" &&
    grep -q 'make bootstrap` again' "$TMP/out" &&
    [ -z "$(ls -A "$C/third_party")" ]; then
    ok "bootstrap: a registry that refuses connections fails at once, naming the package, the registry and what to do"
else
    not_ok "bootstrap: refused registry" "rc=$rc" "$(cat "$TMP/out")"
fi

# ---- a registry that accepts and never answers: bounded by the timeout ----
python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = []
while True:
    held.append(s.accept())' "$TMP/port" &
mute=$!
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
port=$(cat "$TMP/port")
npm_config_registry=http://127.0.0.1:$port MEDTRUST_NPM_TIMEOUT=5 boot --demo
kill $mute 2>/dev/null
if [ $rc -eq 1 ] &&
    grep -q "fetching node-llama-cpp@3.22.1 from http://127.0.0.1:$port (gives up after 5 s" "$TMP/out" &&
    grep -q "no answer from http://127.0.0.1:$port within 5 s" "$TMP/out" &&
    grep -q "cannot fetch node-llama-cpp@3.22.1 from http://127.0.0.1:$port (npm exit 124)" "$TMP/out" &&
    [ -z "$(ls -A "$C/third_party")" ]; then
    ok "bootstrap: a registry that never answers is given up after MEDTRUST_NPM_TIMEOUT, saying so"
else
    not_ok "bootstrap: silent registry" "rc=$rc" "$(cat "$TMP/out")"
fi

# ---- what --demo and the full bootstrap ask apt for ----
: >"$APT_LOG"
NOTHING_INSTALLED=1 npm_config_registry=http://127.0.0.1:9 \
    MEDTRUST_NPM_TIMEOUT=60 boot --demo
demo_pkgs=$(grep '^install' "$APT_LOG" | tr ' ' '\n')
: >"$APT_LOG"
NOTHING_INSTALLED=1 npm_config_registry=http://127.0.0.1:9 \
    MEDTRUST_NPM_TIMEOUT=60 boot
full_pkgs=$(grep '^install' "$APT_LOG" | tr ' ' '\n')
has() { echo "$1" | grep -qx -- "$2"; }
bad=
for p in libsqlite3-dev libjansson-dev libutf8proc-dev libstemmer-dev \
    libcurl4-openssl-dev libmicrohttpd-dev libsodium-dev libisal-dev \
    zlib1g-dev libpq-dev pkg-config git curl python3; do
    has "$demo_pkgs" "$p" || bad="$bad demo-lacks:$p"
    has "$full_pkgs" "$p" || bad="$bad full-lacks:$p"
done
for p in postgresql-15 chromium clang libclang-rt-dev cmake libcmocka-dev \
    cppcheck clang-format libexpat1-dev; do
    has "$demo_pkgs" "$p" && bad="$bad demo-has:$p"
    has "$full_pkgs" "$p" || bad="$bad full-lacks:$p"
done
if [ -z "$bad" ] && [ -n "$demo_pkgs" ]; then
    ok "bootstrap --demo asks apt for the build's packages only (no PostgreSQL, Chromium, clang, cmake, test tools); the full one for all"
else
    not_ok "bootstrap apt lists" "$bad" "demo: $(echo $demo_pkgs)"
fi

# ---- with llama.cpp and the USE-lite weights in place ----
# (their stamps; an unreachable registry proves nothing else is fetched)
for d in node-llama-cpp llama-linux-x64 use-lite llama.cpp; do
    mkdir -p "$C/third_party/$d"
    touch "$C/third_party/$d/.stamp-3.22.1"
done
touch "$C/third_party/use-lite/.stamp-0.2.0"
npm_config_registry=http://127.0.0.1:9 MEDTRUST_NPM_TIMEOUT=60 boot --demo
demo_rc=$rc
demo_out=$(cat "$TMP/out")
npm_config_registry=http://127.0.0.1:9 MEDTRUST_NPM_TIMEOUT=60 boot
if [ $demo_rc -eq 0 ] && echo "$demo_out" | grep -q 'ok (what make demo uses' &&
    ! echo "$demo_out" | grep -q 'fetching\|llama-server' &&
    [ ! -e "$C/third_party/llama-server" ] && [ ! -e "$C/third_party/browser" ] &&
    [ $rc -eq 1 ] &&
    grep -q 'cannot fetch the JS reference packages @energetic-ai/core@0.2.0' "$TMP/out"; then
    ok "bootstrap --demo needs nothing past llama.cpp and USE-lite (no test tools, no llama-server); the full bootstrap goes on to them"
else
    not_ok "bootstrap --demo subset" "demo rc=$demo_rc: $demo_out" "full rc=$rc: $(tail -3 "$TMP/out")"
fi
