# Helpers to start `medtrust serve` on loopback and call it, with no setup
# of their own (api_lib.sh adds the PubMedQA store and the user alice).
# Source after lib.sh; the caller kills the servers in $SERVE_PIDS at exit.

# serve_url OUT: waits up to SERVE_WAIT tenths of a second (default 100)
# for a server's "listening on" line in its stdout file OUT; prints
# http://127.0.0.1:PORT (nothing when it never came). Remove OUT before
# starting a server that writes it again: an old port is not this one's.
serve_url() {
    for _ in $(seq "${SERVE_WAIT:-100}"); do
        grep -q listening "$1" 2>/dev/null && break
        sleep 0.1
    done
    sed -n 's/^listening on http:\/\/[a-z0-9.]*:\([0-9]*\)$/http:\/\/127.0.0.1:\1/p' "$1"
}

# serve_start NAME ARGS...: starts a server on $SERVE_DB (default
# $TMP/db), waits for it to listen (serve_url) and logs alice in; sets U,
# A (curl auth args).
serve_start() {
    local name=$1 csrf
    shift
    # a server of the same name may have run before: its "listening" line
    # (an old port) must not be read before this one truncates the file
    rm -f "$TMP/$name.out"
    "$MT" serve --db "${SERVE_DB:-$TMP/db}" --listen 127.0.0.1:0 "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" &
    SERVE_PIDS+=($!)
    U=$(serve_url "$TMP/$name.out")
    curl -s -c "$TMP/$name.jar" "$U/v1/login" -H "Content-Type: application/json" \
        -d '{"username":"alice","password":"alice-password"}' >"$TMP/body"
    csrf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/body")
    A=(-b "$TMP/$name.jar" -H "X-CSRF-Token: $csrf")
}
# code CURL-ARGS...: the HTTP status; the body in $TMP/body.
code() { curl -s -o "$TMP/body" -w '%{http_code}' "$@"; }
