#!/usr/bin/env bash
# The Python package (python/): its pytest suites, run with Debian's
# python3 against this build's libmedtrust.so, each test one TAP line.
#
# make test's build is sanitized, and so is its libmedtrust.so: Python
# loads it with the ASan runtime preloaded (it must come first in the
# process; a separate unsanitized build would cost a second compile of the
# library in every make test), so the package's calls run under ASan and UBSan as the C
# suites do, at no extra compile. Leak checks are off in the Python
# process only (the interpreter keeps its memory until exit); the
# binaries the tests start get them back (conftest.sub_env).
. "$(dirname "$0")/lib.sh"
B=${MEDTRUST_BUILD:?MEDTRUST_BUILD not set}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${MEDTRUST_PYTHON:-/usr/bin/python3}
need "the shared library (make)" "$B/libmedtrust.so"
if ! "$PY" -c 'import pytest' 2>/dev/null; then
    not_ok "python3-pytest is installed" "run make bootstrap"
    exit 1
fi
export MEDTRUST_LIB="$B/libmedtrust.so"
if readelf -d "$MEDTRUST_LIB" | grep -q 'NEEDED.*libasan'; then
    # libstdc++ too: ASan finds the C++ runtime's __cxa_throw when it
    # starts, and llama.cpp's (loaded later by the library) throws and
    # catches exceptions; without it the first one aborts in ASan's
    # interceptor
    LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
    export LD_PRELOAD
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fi
cd "$ROOT/python" || exit 1
"$PY" -m pytest -q -p no:cacheprovider --junitxml="$TMP/junit.xml" \
    tests >"$TMP/pytest.log" 2>&1
rc=$?
if [ ! -s "$TMP/junit.xml" ]; then
    not_ok "pytest ran" "$(tail -20 "$TMP/pytest.log")"
    exit 1
fi
# junit XML -> TAP: a failure or error is "not ok" with its message, a
# skip "ok ... # SKIP why".
"$PY" - "$TMP/junit.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
for tc in ET.parse(sys.argv[1]).iter("testcase"):
    name = "python: %s::%s" % (tc.get("classname", "").split(".")[-1],
                               tc.get("name"))
    bad = tc.find("failure")
    if bad is None:
        bad = tc.find("error")
    skip = tc.find("skipped")
    if bad is not None:
        print("not ok - " + name)
        for line in (bad.get("message") or "").splitlines()[:12]:
            print("# " + line)
    elif skip is not None:
        print("ok - %s # SKIP %s" % (name, skip.get("message", "")))
    else:
        print("ok - " + name)
PY
[ $rc -eq 0 ] || tail -40 "$TMP/pytest.log" | sed 's/^/# /'
