#!/usr/bin/env bash
# `make install` gives a self-contained tree: the binary finds llama.cpp's
# libraries and CPU backends in PREFIX/lib/medtrust through its $ORIGIN
# run path, not in the source tree's third_party, and loads a GGUF model.
. "$(dirname "$0")/lib.sh"
B=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
need "llama.cpp's prebuilt libraries" "$ROOT/third_party/llama-linux-x64"

# The same variables as `make test` (its PREFIX too: the data folders under
# PREFIX are baked into two objects, and make rebuilds what another PREFIX
# changes), so nothing is rebuilt under the suites running beside this one.
if make -s -C "$ROOT" install BUILD="$B" SANITIZE=1 WERROR=1 OPT="-O1 -g" \
    DESTDIR="$TMP/root" >"$TMP/make.log" 2>&1; then
    ok "make install DESTDIR=..."
else
    not_ok "make install" "$(tail -5 "$TMP/make.log")"
    exit 0
fi
P=$TMP/root${PREFIX:-/usr/local}
if [ -L "$P/lib/libmedtrust.so" ] && [ -L "$P/lib/libmedtrust.so.0" ] &&
    readelf -d "$P/lib/libmedtrust.so.0.1.0" |
    grep -q 'SONAME.*\[libmedtrust\.so\.0\]'; then
    ok "make install installs libmedtrust.so with its SONAME links"
else
    not_ok "installed shared library" "$(ls -l "$P/lib")"
fi
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
# Chinese KPCS reads jieba's dictionary from PREFIX/share/medtrust/jieba.
if [ -f "$ROOT/third_party/jieba/dict.txt" ]; then
    printf '%s\n' 'Text ID,Sentences,Error Flag,Error Sentence ID,Corrected Sentence,Important Words' \
        'cn-test-0,0 行肝功能检查。,1,0,行血氨检查。,血氨' >"$TMP/cn.csv"
    echo 'cn-test-0 1 0 "行血氨检查。"' >"$TMP/cn.txt"
    if "$P/bin/medtrust" --verbose score --ref "$TMP/cn.csv" \
        --pred "$TMP/cn.txt" >"$TMP/cn.out" 2>&1 &&
        grep -q "jieba: loaded $P/bin/../share/medtrust/jieba" "$TMP/cn.out"; then
        ok "Chinese KPCS reads jieba's dictionary from the install"
    else
        not_ok "jieba's dictionary from the install" "$(tail -5 "$TMP/cn.out")"
    fi
else
    not_ok "third_party/jieba (run scripts/bootstrap)"
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

# Incremental builds (dry runs of five objects, nothing is rebuilt): with
# BUILD given as an absolute path, as here, a changed header (make -W)
# rebuilds what includes it (the .d files name the targets relative), an
# unchanged tree nothing, another compiler flag every object, and a
# different PREFIX (baked into two objects) those two only.
R=${B#"$ROOT"/} # make names the build folder relative to the checkout
OBJS="src/core/buf src/core/jsonl src/cli/main src/model/use_lite_file src/eval/jieba_files"
mk() {
    make -n -C "$ROOT" BUILD="$B" SANITIZE=1 WERROR=1 OPT="-O1 -g" "$@" \
        $(for o in $OBJS; do echo "$R/obj/$o.o"; done) 2>&1 |
        grep -o "echo '  CC      [^']*'" | sed "s/^echo '  CC      //; s/'$//" |
        sort | tr '\n' ' '
}
same=$(mk)
hdr=$(mk -W src/core/buf.h)
flag=$(mk EXTRA_CFLAGS=-DMT_FLAGS_PROBE)
prefix=$(mk PREFIX=/opt/elsewhere)
if [ -z "$same" ] && [[ "$hdr" == "src/core/buf.c src/core/jsonl.c "* ]] &&
    [[ "$hdr" != *src/cli/main.c* ]] &&
    [ "$flag" = "src/cli/main.c src/core/buf.c src/core/jsonl.c src/eval/jieba_files.c src/model/use_lite_file.c " ] &&
    [ "$prefix" = "src/eval/jieba_files.c src/model/use_lite_file.c " ]; then
    ok "make with an absolute BUILD: a changed header, flag or PREFIX rebuilds the objects it touches, nothing else"
else
    not_ok "incremental make (absolute BUILD, flags tracked)" \
        "unchanged: $same" "-W src/core/buf.h: $hdr" "a new flag: $flag" \
        "another PREFIX: $prefix"
fi

# A program of the user's, built against the install with its medtrust.pc
# (moved under DESTDIR, so pkg-config is told the prefix): it compiles,
# links (every library the static libmedtrust.a needs, llama.cpp's from
# PREFIX/lib/medtrust, never the build tree), runs, opens a store and loads
# a GGUF model.
cat >"$TMP/user.c" <<'C'
#include <stdio.h>
#include <medtrust/core.h>
#include <medtrust/model.h>
#include <medtrust/store.h>
int main(int argc, char **argv)
{
    struct mt_error err = {MT_OK, ""};
    struct mt_store *s = NULL;
    struct mt_llm *l = NULL;
    (void)argc;
    if (mt_store_open(argv[1], NULL, &s, &err) != MT_OK ||
        mt_llm_open(argv[2], NULL, &l, &err) != MT_OK) {
        fprintf(stderr, "user: %s\n", err.msg);
        return 1;
    }
    printf("medtrust %s: store schema %d, model open\n", mt_version(),
           mt_store_schema_version(s));
    mt_llm_close(l);
    mt_store_close(s);
    return 0;
}
C
pc=$P/lib/pkgconfig/medtrust.pc
if grep -q "$ROOT\|build/" "$pc"; then
    not_ok "medtrust.pc names no build-tree path" "$(cat "$pc")"
else
    ok "medtrust.pc names no build-tree path"
fi
# shellcheck disable=SC2046 # pkg-config's flags are words
if flags=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --define-variable=prefix="$P" \
    --cflags --libs medtrust 2>"$TMP/pc.err") &&
    cc -std=c11 -o "$TMP/user" "$TMP/user.c" $flags >"$TMP/cc.log" 2>&1 &&
    "$TMP/user" "$TMP/userdb" "gguf:$TMP/chat.gguf" >"$TMP/user.out" 2>&1 &&
    grep -q 'model open' "$TMP/user.out"; then
    ok "a program compiles and links with the installed medtrust.pc and runs"
else
    not_ok "linking with medtrust.pc" "$(cat "$TMP/pc.err" "$TMP/cc.log" \
        "$TMP/user.out" 2>/dev/null | tail -8)"
fi
if ldd "$TMP/user" | grep -q "libmedtrust.so.0 => $P/lib/libmedtrust.so.0"; then
    ok "the program links the installed libmedtrust.so"
else
    not_ok "the program's libmedtrust" "$(ldd "$TMP/user" | grep medtrust)"
fi
libs=$(ldd "$TMP/user" 2>/dev/null | grep -E 'libllama|libggml')
if [ -n "$libs" ] && ! echo "$libs" | grep -v -q "$P/lib/medtrust/"; then
    ok "the program finds llama.cpp in PREFIX/lib/medtrust"
else
    not_ok "the program's llama.cpp" "$libs"
fi

# The Python package installed against the installed library (not the
# build tree), used from elsewhere: it finds PREFIX/lib/libmedtrust.so.0,
# and the library finds the USE-lite weights (PREFIX/share/medtrust) and
# llama.cpp's CPU backends (PREFIX/lib/medtrust) beside itself, as the
# binary does beside it. The library of this build is sanitized: the ASan
# runtime (and libstdc++, for llama.cpp's exceptions) goes first.
PY=/usr/bin/python3
if MEDTRUST_PREFIX=$P MEDTRUST_BUILD_DIR=$TMP/none PIP_NO_CACHE_DIR=1 \
    "$PY" -m pip install --no-build-isolation --no-index --no-deps \
    --target "$TMP/site" "$ROOT/python" >"$TMP/pip.log" 2>&1; then
    ok "pip install ./python against the installed library"
else
    not_ok "pip install ./python" "$(tail -5 "$TMP/pip.log")"
fi
pre=
readelf -d "$P/lib/libmedtrust.so.0" | grep -q 'NEEDED.*libasan' &&
    pre="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
(cd "$TMP" && env -u MEDTRUST_LIB -u MEDTRUST_USE_LITE -u MEDTRUST_LLAMA_LIB \
    PYTHONPATH="$TMP/site" LD_PRELOAD="$pre" ASAN_OPTIONS=detect_leaks=0 \
    "$PY" - "$TMP/pydb" "gguf:$TMP/chat.gguf" >"$TMP/py.out" 2>&1) <<'PY'
import logging, sys
logging.basicConfig(level=logging.DEBUG, format="%(message)s")
import medtrust
print("lib", medtrust.library_path())
st = medtrust.Store(sys.argv[1])
st.add([{"id": "1", "text": "Aspirin lowers fever."}])
st.index(embedder="use-lite")
print("hits", len(st.search("fever", mode="hybrid")))
c = medtrust.Checker(llm=sys.argv[2], strategy="single", max_tokens=4)
try:
    c.check("A man has a fever. He is given aspirin.")
except medtrust.ModelError:
    pass  # a random model's reply: the model ran
print("checked")
PY
if grep -q "^lib $P/lib/libmedtrust.so.0" "$TMP/py.out" &&
    grep -q "use-lite: loaded $P/lib/../share/medtrust" "$TMP/py.out" &&
    grep -q "loaded CPU backend from $P/lib/medtrust/" "$TMP/py.out" &&
    grep -q "^hits 1" "$TMP/py.out" && grep -q "^checked" "$TMP/py.out"; then
    ok "the package uses the installed library, its weights and backends"
else
    not_ok "python over the install" "$(grep -E '^lib|^hits|loaded|Error|error' "$TMP/py.out" | head -8)"
fi
