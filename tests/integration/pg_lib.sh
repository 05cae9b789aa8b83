# A throwaway PostgreSQL cluster for integration tests (issue 19). Source
# it after lib.sh (and the other libraries, whose exit trap it keeps):
# pg_start sets PG_URL (postgresql://...) and stops and removes the
# cluster when the script exits; pg_restart restarts the server on the
# same port (fast shutdown: every session is cut).
PG_FIX="$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)/pg_cluster.sh"
PG_URL=

pg_start() {
    if ! PG_URL=$(bash "$PG_FIX" start "$TMP/pg" 2>"$TMP/pg.err"); then
        not_ok "a throwaway PostgreSQL cluster starts" "$(tail -5 "$TMP/pg.err")"
        bash "$PG_FIX" stop "$TMP/pg" >/dev/null 2>&1
        exit 1
    fi
    # the cluster goes first: the earlier trap removes $TMP, which holds
    # where the cluster is
    local prev
    prev=$(trap -p EXIT | sed "s/^trap -- '\(.*\)' EXIT\$/\1/")
    trap 'bash "$PG_FIX" stop "$TMP/pg" >/dev/null 2>&1; '"${prev:-rm -rf \"\$TMP\"}" EXIT
}

pg_restart() {
    bash "$PG_FIX" restart "$TMP/pg"
}

# pg_down: stops the server, keeping the cluster (pg_restart starts it
# again on the same port).
pg_down() {
    bash "$PG_FIX" kill "$TMP/pg"
}
