#!/usr/bin/env bash
# Integration (issue 33 §3): the CLI and the server read one settings
# table per params struct (medtrust/params.h). GET /v1/limits' check
# fields are compared with what `check --help` and `mediqa --help` print
# for the same setting: the same minimum and default, and the same
# maximum unless the table gives the server a lower cap, which the field
# then names ("cli_max") and the help says ("serve: at most N"). The
# bounds are then exercised: a value one past the server's cap is 400 on
# the server, and one past the CLI's is refused by the CLI, naming both.
. "$(dirname "$0")/lib.sh"
need_verb serve check mediqa ask qa-eval search verify
unset MEDTRUST_LLM
trap 'kill "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT

printf '{"id":"d1","title":"Aspirin","text":"Aspirin is given for chest pain."}\n' \
    >"$TMP/c.jsonl"
"$MT" index --db "$TMP/db" --input "$TMP/c.jsonl" --no-progress \
    >/dev/null 2>&1
echo 'alice-password' | "$MT" user add --db "$TMP/db" alice 2>/dev/null
"$MT" serve --db "$TMP/db" --listen 127.0.0.1:0 >"$TMP/s.out" \
    2>"$TMP/s.err" &
SPID=$!
for _ in $(seq 100); do
    grep -q listening "$TMP/s.out" 2>/dev/null && break
    sleep 0.1
done
U=$(sed -n 's/^listening on http:\/\/[a-z0-9.]*:\([0-9]*\)$/http:\/\/127.0.0.1:\1/p' "$TMP/s.out")
curl -s -c "$TMP/jar" "$U/v1/login" -H "Content-Type: application/json" \
    -d '{"username":"alice","password":"alice-password"}' >"$TMP/login"
CSRF=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/login")
curl -s -b "$TMP/jar" "$U/v1/limits" >"$TMP/limits.json"
for v in check mediqa ask qa-eval search verify; do "$MT" "$v" --help >"$TMP/$v.help"; done

# compare SECTION HELP...: each field of /v1/limits' SECTION.fields that
# names a CLI option against that option's line in each --help (a flag,
# such as --allow-fallbacks, is a 0..1 member whose default is off or on).
compare() {
    python3 - "$TMP/limits.json" "$@" <<'PY'
import json, re, sys
fields = json.load(open(sys.argv[1]))[sys.argv[2]]["fields"]
helps = [open(p).read() for p in sys.argv[3:]]
shared = 0
for name, f in fields.items():
    opt = f.get("option")
    if not opt:
        continue
    for h in helps:
        # a flag (no value): a 0..1 integer, given is 1
        flag = re.search(r"--%s {2,}.*\(default (on|off)\)$" % re.escape(opt),
                         h, re.M)
        if flag:
            assert f["min"] == 0 and f["max"] == 1 and f["integer"], (name, f)
            assert f["default"] == (flag.group(1) == "on"), (name, f)
            continue
        m = re.search(r"--%s \S+ +.*, ([0-9.e+-]+)\.\.([0-9.e+-]+) "
                      r"\(default ([^;)]+)(?:; serve: at most ([0-9.]+))?\)"
                      % re.escape(opt), h)
        assert m, "--%s: no range in --help" % opt
        lo, hi, d, cap = m.groups()
        assert float(lo) == f["min"], (name, lo, f)
        if re.fullmatch(r"[0-9.]+", d):
            assert float(d) == f["default"], (name, d, f)
        else:  # a default in words ("any"): no value in the range
            assert not f["min"] <= f["default"] <= f["max"], (name, d, f)
        if "cli_max" in f:
            assert float(hi) == f["cli_max"] and f["max"] < f["cli_max"], f
            assert cap is not None and float(cap) == f["max"], (name, cap, f)
        else:
            assert float(hi) == f["max"] and cap is None, (name, hi, f)
    shared += 1
print(shared)
PY
}
if compare check "$TMP/check.help" "$TMP/mediqa.help" >"$TMP/cmp" 2>&1 &&
    [ "$(cat "$TMP/cmp")" -ge 6 ]; then
    ok "/v1/limits and the CLI's --help agree on all $(cat "$TMP/cmp") shared check settings"
else not_ok "/v1/limits vs check --help" "$(tail -5 "$TMP/cmp")"; fi
if compare ask "$TMP/ask.help" "$TMP/qa-eval.help" >"$TMP/cmp" 2>&1 &&
    [ "$(cat "$TMP/cmp")" -ge 5 ]; then
    ok "/v1/limits and the CLI's --help agree on all $(cat "$TMP/cmp") shared ask settings"
else not_ok "/v1/limits vs ask --help" "$(tail -5 "$TMP/cmp")"; fi

if compare search "$TMP/search.help" >"$TMP/cmp" 2>&1 &&
    [ "$(cat "$TMP/cmp")" -ge 4 ]; then
    ok "/v1/limits and the CLI's --help agree on all $(cat "$TMP/cmp") shared search settings"
else not_ok "/v1/limits vs search --help" "$(tail -5 "$TMP/cmp")"; fi

if compare verify "$TMP/verify.help" >"$TMP/cmp" 2>&1 &&
    [ "$(cat "$TMP/cmp")" -ge 3 ]; then
    ok "/v1/limits and the CLI's --help agree on all $(cat "$TMP/cmp") shared verify settings"
else not_ok "/v1/limits vs verify --help" "$(tail -5 "$TMP/cmp")"; fi
# verify's -k is its own (documents searched per claim), not ask's
if grep -q -- "--top-k N .*documents searched per claim, 1\.\.1000 (default 5; serve: at most 100)" "$TMP/verify.help" &&
    ! "$MT" verify --db "$TMP/db" --llm openai:http://127.0.0.1:9#m --top-k 1001 aspirin >/dev/null 2>"$TMP/err" &&
    grep -q -- "--top-k must be an integer in 1\.\.1000" "$TMP/err"; then
    ok "verify --top-k is verify's setting, bounded as its help says"
else not_ok "verify --top-k" "$(grep -- --top-k "$TMP/verify.help")" "$(cat "$TMP/err")"; fi

# Every shared search setting at its bounds: the highest value each side
# takes is accepted there, and one past it refused, by POST /v1/search and
# by `medtrust search` alike (the same ranges but where the table says the
# server caps lower).
python3 - "$TMP/limits.json" >"$TMP/sbounds" <<'PY'
import json, sys
for k, f in json.load(open(sys.argv[1]))["search"]["fields"].items():
    if f.get("option"):
        cli = f.get("cli_max", f["max"])
        step = 1 if f["integer"] else 0.5
        print(k, f["option"], "%g" % f["max"], "%g" % (f["max"] + step),
              "%g" % cli, "%g" % (cli + step))
PY
[ "$(wc -l <"$TMP/sbounds")" -ge 4 ] && ok "/v1/limits names the CLI option of every search field" ||
    not_ok "search fields with options" "$(cat "$TMP/sbounds")"
while read -r field opt smax sover cmax cover; do
    got=$(curl -s -o "$TMP/body" -w '%{http_code}' -b "$TMP/jar" \
        -H "X-CSRF-Token: $CSRF" "$U/v1/search" \
        -d "{\"query\":\"aspirin\",\"$field\":$smax}")
    bad=$(curl -s -o "$TMP/body2" -w '%{http_code}' -b "$TMP/jar" \
        -H "X-CSRF-Token: $CSRF" "$U/v1/search" \
        -d "{\"query\":\"aspirin\",\"$field\":$sover}")
    if [ "$got" = 200 ] && [ "$bad" = 400 ] && grep -q "\"$field\\\\\" must be" "$TMP/body2"; then
        ok "POST /v1/search: $field=$smax is taken, $sover is 400"
    else not_ok "/v1/search $field bounds" "$got $(cat "$TMP/body")" "$bad $(cat "$TMP/body2")"; fi
    if "$MT" search --db "$TMP/db" "--$opt" "$cmax" aspirin >/dev/null 2>"$TMP/err" &&
        ! "$MT" search --db "$TMP/db" "--$opt" "$cover" aspirin >/dev/null 2>"$TMP/err" &&
        grep -q -- "--$opt must be an* [a-z]* in [0-9]*\.\.$cmax, not" "$TMP/err"; then
        ok "search --$opt $cmax is taken, $cover refused"
    else not_ok "search --$opt bounds" "$(cat "$TMP/err")"; fi
done <"$TMP/sbounds"

# The caps are the ones enforced: one past the server's cap of each
# capped setting is 400 naming it; the CLI refuses one past its own.
python3 - "$TMP/limits.json" >"$TMP/caps" <<'PY'
import json, sys
for k, f in json.load(open(sys.argv[1]))["check"]["fields"].items():
    if "cli_max" in f:
        print(k, f["option"], int(f["max"]) + 1, int(f["cli_max"]) + 1)
PY
[ -s "$TMP/caps" ] && ok "the table caps some settings lower on the server" ||
    not_ok "server caps" "$(cat "$TMP/limits.json")"
while read -r field opt over_srv over_cli; do
    got=$(curl -s -o "$TMP/body" -w '%{http_code}' -b "$TMP/jar" \
        -H "X-CSRF-Token: $CSRF" "$U/v1/check" \
        -d "{\"note\":\"He is given aspirin.\",\"$field\":$over_srv}")
    if [ "$got" = 400 ] && grep -q "\"$field\\\\\" must be an integer in" "$TMP/body"; then
        ok "POST /v1/check: $field=$over_srv is 400"
    else not_ok "$field over the server's cap" "$got $(cat "$TMP/body")"; fi
    if ! "$MT" check --llm openai:http://127.0.0.1:9#m --no-retrieval \
        "--$opt" "$over_cli" - </dev/null >/dev/null 2>"$TMP/err" &&
        grep -q -- "--$opt must be an integer in 1\.\.$((over_cli - 1))" "$TMP/err"; then
        ok "check --$opt $over_cli is refused"
    else not_ok "--$opt over the CLI's bound" "$(cat "$TMP/err")"; fi
done <"$TMP/caps"

# serve's own settings (mt_server_param_table): every numeric option's
# --help line says its bounds and default, the defaults are the ones
# README's limits table gives, and one past each highest value is
# refused before anything starts, naming the option and its bounds.
"$MT" serve --help >"$TMP/serve.help"
python3 - "$TMP/serve.help" >"$TMP/srvb" <<'PY'
import re, sys
h = open(sys.argv[1]).read()
rows = re.findall(r"--([a-z-]+) \S+ +.*?, ([0-9.]+)\.\.([0-9.]+) "
                  r"\(default ([0-9.]+)\)$", h, re.M)
readme = {"max-body": "8388608", "max-conns-per-ip": "64", "sse-idle": "15",
          "replay-max": "1048576", "header-timeout": "10",
          "rate-limit": "20", "rate-burst": "40", "login-failures": "5",
          "login-lock": "2", "grace": "30", "job-lease": "30",
          "event-retention": "604800", "threads": "4", "llm-jobs": "4"}
got = {o: d for o, lo, hi, d in rows}
for o, d in readme.items():
    assert got.get(o) == d, (o, got.get(o), d)
for o, lo, hi, d in rows:
    print(o, lo, hi, "%.10g" % (float(hi) + 1))
PY
if [ "$(wc -l <"$TMP/srvb")" -eq 16 ] &&
    grep -q -- "--secure-cookies  *mark cookies Secure (behind TLS) (default off)" "$TMP/serve.help"; then
    ok "serve --help gives every setting's bounds and the README's defaults"
else not_ok "serve --help settings" "$(cat "$TMP/srvb")" "$(cat "$TMP/serve.help")"; fi
while read -r opt lo hi over; do
    if ! "$MT" serve --db "$TMP/nodb" "--$opt" "$over" >/dev/null 2>"$TMP/err" &&
        grep -q -- "--$opt must be an* [a-z]* in $lo\.\.$hi, not '$over'" "$TMP/err" &&
        [ ! -e "$TMP/nodb" ]; then
        ok "serve --$opt $over is refused before the server starts"
    else not_ok "serve --$opt over its bound" "$(cat "$TMP/err")"; fi
done <"$TMP/srvb"

# worker --serve-jobs runs the server's jobs --jobs at a time: the same
# bound as serve --llm-jobs (the server table's, which mt_server_start
# checks for every caller), refused before the queue is reached; without
# --serve-jobs --jobs keeps mediqa's 1..512.
hi=$(awk '$1 == "llm-jobs" { print $3 }' "$TMP/srvb")
over=$((hi + 1))
if ! "$MT" worker --state postgresql://nobody@127.0.0.1:1/none --serve-jobs \
    --db "$TMP/nodb" --jobs "$over" >/dev/null 2>"$TMP/err" &&
    grep -q -- "--jobs $over with --serve-jobs: a server runs at most $hi jobs at once (serve --llm-jobs' bound); give --jobs $hi or less" "$TMP/err" &&
    ! grep -q "PostgreSQL\|connect" "$TMP/err" && [ ! -e "$TMP/nodb" ]; then
    ok "worker --serve-jobs --jobs $over is refused with serve --llm-jobs' bound"
else not_ok "worker --serve-jobs --jobs over the server's bound" "$(cat "$TMP/err")"; fi
if ! "$MT" worker --state postgresql://nobody@127.0.0.1:1/none \
    --jobs 513 >/dev/null 2>"$TMP/err" &&
    grep -q -- "--jobs must be an integer in 1\.\.512, not '513'" "$TMP/err"; then
    ok "worker --jobs keeps mediqa's 1..512 without --serve-jobs"
else not_ok "worker --jobs 513" "$(cat "$TMP/err")"; fi
