# Helpers for integration tests: TAP-like "ok"/"not ok" lines that
# tests/run.sh counts. Source it; $MEDTRUST_BIN is the binary under test.
MT=${MEDTRUST_BIN:?MEDTRUST_BIN not set}
DATA=${MEDTRUST_DATA:?MEDTRUST_DATA not set}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; shift; for l in "$@"; do echo "# $l"; done; }

# check NAME CMD...: passes when CMD exits 0.
check() {
    local name=$1
    shift
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        ok "$name"
    else
        not_ok "$name" "command: $*" "$(tail -5 "$TMP/err")"
    fi
}
