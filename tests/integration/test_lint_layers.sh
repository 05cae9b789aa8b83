#!/usr/bin/env bash
# scripts/lint_layers (make lint's layering check) on small trees: a clean
# one passes; an upward include, a peer include (check <-> qa), a public
# header of a higher layer, an unknown src/ folder and a Makefile LAYERS
# out of order are each named with file and line. Then the real tree.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LINT="$ROOT/scripts/lint_layers"
T="$TMP/tree"

mk_tree() { # a clean tree: core < check, qa < server
    rm -rf "$T"
    mkdir -p "$T"/src/{core,check,qa,server} "$T/include/medtrust"
    printf 'LAYERS   := core check qa \\\n            server\n' >"$T/Makefile"
    printf '#include "core/buf.h"\n' >"$T/src/core/buf.c"
    printf '#include "core/buf.h"\n#include "medtrust/core.h"\n' >"$T/src/check/run.c"
    printf '#include "medtrust/check.h"\n' >"$T/src/server/api.c"
    printf '#include "medtrust/status.h"\n' >"$T/src/qa/qa.c"
    printf '#include "status.h"\n' >"$T/include/medtrust/check.h"
    git -C "$T" init -q
}
commit() { git -C "$T" add -A && git -C "$T" -c user.email=t@t -c user.name=t commit -qm t; }
run_lint() { bash "$LINT" "$T" >"$TMP/out" 2>&1; }

mk_tree; commit
run_lint && [ ! -s "$TMP/out" ] && ok "a layered tree passes silently" ||
    not_ok "clean tree" "$(cat "$TMP/out")"

mk_tree
printf '#include "core/buf.h"\n#include "server/srv_int.h"\n' >"$T/src/core/buf.c"
commit
! run_lint && grep -q 'src/core/buf.c:2: core includes server/srv_int.h' "$TMP/out" &&
    ok "an upward include is named with its file and line" ||
    not_ok "upward include" "$(cat "$TMP/out")"

mk_tree
printf '#include "qa/qa_int.h"\n' >"$T/src/check/run.c"
commit
! run_lint && grep -q 'src/check/run.c:1: check includes qa/qa_int.h' "$TMP/out" &&
    ok "check and qa are peers: neither includes the other" ||
    not_ok "peer include" "$(cat "$TMP/out")"

mk_tree
printf '#include "medtrust/server.h"\n' >"$T/src/qa/qa.c"
printf '#include "server.h"\n' >"$T/include/medtrust/check.h"
commit
! run_lint && grep -q 'src/qa/qa.c:1: qa includes medtrust/server.h' "$TMP/out" &&
    grep -q 'include/medtrust/check.h:1: check includes medtrust/server.h' "$TMP/out" &&
    ok "a public header of a higher layer is refused in src/ and include/" ||
    not_ok "public header" "$(cat "$TMP/out")"

mk_tree
mkdir -p "$T/src/extra"
printf 'int x;\n' >"$T/src/extra/x.c"
sed -i 's/core check/check core/' "$T/Makefile"
commit
! run_lint && grep -q 'src/extra/x.c: src/extra/ is no layer' "$TMP/out" &&
    grep -q "Makefile: LAYERS is 'check core" "$TMP/out" &&
    ok "an undeclared layer and a reordered Makefile LAYERS are named" ||
    not_ok "layer list" "$(cat "$TMP/out")"

if bash "$LINT" "$ROOT" >"$TMP/out" 2>&1; then
    ok "medtrust's own tree is layered"
else not_ok "the tree's layering" "$(head -20 "$TMP/out")"; fi
