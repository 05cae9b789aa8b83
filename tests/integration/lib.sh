# Helpers for integration tests: TAP-like "ok"/"not ok" lines that
# tests/run.sh counts. Source it; $MEDTRUST_BIN is the binary under test.
MT=${MEDTRUST_BIN:?MEDTRUST_BIN not set}
DATA=${MEDTRUST_DATA:?MEDTRUST_DATA not set}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; shift; for l in "$@"; do echo "# $l"; done; }
# skip NAME WHY: a case that cannot run for a reason no setup fixes;
# tests/run.sh counts it as skipped and prints WHY. Whatever make bootstrap
# or make installs is required instead: need_verb, need.
skip() { echo "ok - $1 # SKIP $2"; }
# need WHAT PATH...: fails the suite (exit 1) unless every PATH exists.
need() {
    local what=$1 p
    shift
    for p in "$@"; do
        if [ -z "$p" ] || [ ! -e "$p" ]; then
            not_ok "$what" "missing ${p:-a command} (run make bootstrap)"
            exit 1
        fi
    done
}
# need_verb VERB...: fails the suite (exit 1) unless the binary has each.
need_verb() {
    local v
    for v in "$@"; do
        if ! "$MT" "$v" --help >/dev/null 2>&1; then
            not_ok "medtrust has a '$v' verb" "$MT $v --help failed"
            exit 1
        fi
    done
}

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

# csv_head SRC N OUT: the header and the first N records of the CSV SRC
# (a MEDEC file: quoted notes span lines), written as Python's csv does.
csv_head() {
    python3 - "$@" <<'PY'
import csv, sys
csv.field_size_limit(10**9)
rows = list(csv.reader(open(sys.argv[1], encoding="utf-8")))
w = csv.writer(open(sys.argv[3], "w", encoding="utf-8", newline=""))
w.writerows(rows[:int(sys.argv[2]) + 1])
PY
}
