#!/usr/bin/env bash
# Loads a score report in headless Chromium (tests/browser/test_report.js):
# charts render, no console error, table sorts and filters; the screenshot
# goes to $MEDTRUST_BUILD/test-logs.
set -u
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MEDEC="$DATA/medec/MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
LOGS=${MEDTRUST_BUILD:-$ROOT/build/test}/test-logs
PW="$ROOT/third_party/browser/node_modules/playwright-core"

need_verb score
need "browser test prerequisites" /usr/bin/chromium "$PW" "$(command -v node)"
mkdir -p "$LOGS"
python3 - "$MEDEC" "$TMP" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8-sig")))
with open(sys.argv[2] + "/a.txt", "w") as a, open(sys.argv[2] + "/b.txt", "w") as b:
    for i, r in enumerate(rows):
        c = " ".join(r["Corrected Sentence"].split()) or "NA"
        a.write('%s %s %s "%s"\n' % (r["Text ID"], r["Error Flag"],
                                     r["Error Sentence ID"], c))
        words = c.split()
        half = " ".join(words[: max(1, len(words) // 2)])
        b.write("%s %s %s %s\n" % (r["Text ID"], 1 if i % 3 else 0,
                                   r["Error Sentence ID"], half))
PY
if ! "$MT" score --ref "$MEDEC" --pred "$TMP/a.txt" --pred "$TMP/b.txt" \
    --report "$TMP/report.html" >/dev/null 2>"$TMP/err"; then
    not_ok "report written" "$(tail -3 "$TMP/err")"
    exit 1
fi
ok "report written"
cp "$TMP/report.html" "$LOGS/score_report.html"
timeout 120 node "$ROOT/tests/browser/test_report.js" "$TMP/report.html" \
    "$LOGS/score_report.png" "$TMP/profile"
