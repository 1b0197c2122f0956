# Sourced by scripts/browser-test.sh: both services on a private PostgreSQL, a stand-in tile server,
# gateways for the browser and, when asked, a test OpenID Connect provider, all on loopback. Needs scripts/lib.sh sourced first.
#
#   web_stack_start BIN_DIR WORK_DIR [oidc]
#                                      sets STACK_GATEWAY (tiles from the stand-in server at STACK_TILES),
#                                      STACK_GATEWAY_NO_TILES (TILE_URL on a closed port), STACK_GATEWAY_PMTILES
#                                      (BASEMAP_TILES: the archive at STACK_PMTILES, z0-z2), STACK_LOCATIONS;
#                                      with oidc, students can also sign in at STACK_GATEWAY with the test
#                                      OpenID Connect provider (Tests/oidc/provider.py) at STACK_OIDC_ISSUER,
#                                      named STACK_OIDC_PROVIDER_NAME, whose one user is STACK_OIDC_USER
#                                      (USERNAME:PASSWORD:GIVEN:FAMILY:EMAIL)
#   web_stack_stop [LOG_DIR]
#   web_stack_unittest FOLDER MODULE.CLASS OUTPUT [TEST...]

STACK_PIDS=()

web_stack_wait_ready() {
    for _ in $(seq 1 150); do
        python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "not ready: $1" >&2
    return 1
}

# web_stack_start_oidc_provider REDIRECT_URI: the test OpenID Connect provider on a free loopback port, with
# the gateway at REDIRECT_URI as its client and STACK_OIDC_USER as its user; sets STACK_OIDC_ISSUER and the
# client's STACK_OIDC_CLIENT_ID and STACK_OIDC_CLIENT_SECRET.
web_stack_start_oidc_provider() {
    local redirect=$1 python
    STACK_OIDC_DIR=$(mktemp -d /tmp/onthemap-web-oidc.XXXXXX)
    STACK_OIDC_CLIENT_ID=on-the-map
    STACK_OIDC_CLIENT_SECRET=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
    # The interpreter itself, so that the process id is the provider's and SIGTERM stops it. The secret may
    # begin with "-": it is given with "=", so that it is not read as an option.
    python=$(python3 -c 'import sys; print(sys.executable)')
    "$python" "$(dirname "${BASH_SOURCE[0]}")/../oidc/provider.py" serve --dir "$STACK_OIDC_DIR" \
        --port-file "$STACK_OIDC_DIR/port" --client-id "$STACK_OIDC_CLIENT_ID" --client-secret="$STACK_OIDC_CLIENT_SECRET" \
        --redirect-uri "$redirect" --user "$STACK_OIDC_USER" >"$STACK_WORK/oidc-provider.log" 2>&1 &
    local pid=$!
    STACK_PIDS+=($pid)
    for _ in $(seq 1 600); do
        if [ -s "$STACK_OIDC_DIR/port" ]; then
            STACK_OIDC_ISSUER="http://127.0.0.1:$(cat "$STACK_OIDC_DIR/port")/openid"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "the test OpenID Connect provider did not start:" >&2
    tail -n 20 "$STACK_WORK/oidc-provider.log" >&2
    return 1
}

web_stack_start() {
    local bin=$1 work=$2 oidc=${3:-}
    STACK_WORK=$work
    # Its own folder: the cluster's owner (an unprivileged user when run as root) must be able to reach it.
    STACK_PG_DATA=$(mktemp -d /tmp/onthemap-web-pg.XXXXXX)
    local pg_port locations_port tile_port gateway_port bare_port closed_port
    pg_port=$(free_port)
    start_private_postgres "$STACK_PG_DATA" "$pg_port" fsync=off
    export DATABASE_URL="postgres://onthemap@127.0.0.1:$pg_port/postgres"
    INTERNAL_TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
    export INTERNAL_TOKEN
    export LOG_LEVEL=${LOG_LEVEL:-warning}
    "$bin/locations-service" migrate >/dev/null
    "$bin/auth-gateway" migrate >/dev/null

    locations_port=$(free_port)
    PORT=$locations_port "$bin/locations-service" serve --host 127.0.0.1 >"$work/locations.log" 2>&1 &
    STACK_PIDS+=($!)
    tile_port=$(free_port)
    python3 "$(dirname "${BASH_SOURCE[0]}")/tile_server.py" "$tile_port" &
    STACK_PIDS+=($!)
    STACK_LOCATIONS="http://127.0.0.1:$locations_port"
    STACK_TILES="http://127.0.0.1:$tile_port"
    web_stack_wait_ready "$STACK_LOCATIONS/readyz"

    gateway_port=$(free_port)
    local oidc_settings=()
    if [ "$oidc" = oidc ]; then
        # Browsers keep cookies by host, not port: the provider shares the gateway's cookie jar, and names its
        # own cookies test_idp_* so that they never meet the gateway's.
        STACK_OIDC_PROVIDER_NAME="Test University"
        STACK_OIDC_USER="hypatia:papyrus-and-stars:Hypatia:of Alexandria:hypatia@university.test"
        web_stack_start_oidc_provider "http://127.0.0.1:$gateway_port/v1/auth/oidc/callback"
        oidc_settings=(OIDC_ISSUER="$STACK_OIDC_ISSUER" OIDC_CLIENT_ID="$STACK_OIDC_CLIENT_ID"
            OIDC_CLIENT_SECRET="$STACK_OIDC_CLIENT_SECRET" OIDC_PROVIDER_NAME="$STACK_OIDC_PROVIDER_NAME"
            PUBLIC_URL="http://127.0.0.1:$gateway_port")
        export STACK_OIDC_ISSUER STACK_OIDC_PROVIDER_NAME STACK_OIDC_USER
    fi
    env "${oidc_settings[@]}" LOCATIONS_URL=$STACK_LOCATIONS PORT=$gateway_port \
        TILE_URL="http://127.0.0.1:$tile_port/{z}/{x}/{y}.png" "$bin/auth-gateway" serve --host 127.0.0.1 >"$work/gateway.log" 2>&1 &
    STACK_PIDS+=($!)
    # Tiles from a port nobody listens on: the map as it is without internet.
    closed_port=$(free_port)
    bare_port=$(free_port)
    LOCATIONS_URL=$STACK_LOCATIONS PORT=$bare_port TILE_URL="http://127.0.0.1:$closed_port/{z}/{x}/{y}.png" \
        "$bin/auth-gateway" serve --host 127.0.0.1 >"$work/gateway-no-tiles.log" 2>&1 &
    STACK_PIDS+=($!)
    # Tiles from the gateway's own PMTiles archive, each tile a colour of its own (scripts/make-test-pmtiles.py).
    STACK_PMTILES="$work/tiles.pmtiles"
    python3 "$(dirname "${BASH_SOURCE[0]}")/../../scripts/make-test-pmtiles.py" "$STACK_PMTILES" --max-zoom 2
    local archive_port
    archive_port=$(free_port)
    LOCATIONS_URL=$STACK_LOCATIONS PORT=$archive_port BASEMAP_TILES="$STACK_PMTILES" \
        "$bin/auth-gateway" serve --host 127.0.0.1 >"$work/gateway-pmtiles.log" 2>&1 &
    STACK_PIDS+=($!)
    STACK_GATEWAY="http://127.0.0.1:$gateway_port"
    STACK_GATEWAY_NO_TILES="http://127.0.0.1:$bare_port"
    STACK_GATEWAY_PMTILES="http://127.0.0.1:$archive_port"
    web_stack_wait_ready "$STACK_GATEWAY/readyz"
    web_stack_wait_ready "$STACK_GATEWAY_NO_TILES/readyz"
    web_stack_wait_ready "$STACK_GATEWAY_PMTILES/readyz"
    # The binaries too, for the operator's commands (`auth-gateway accounts disable`) on this stack's database.
    STACK_BIN=$bin
    export STACK_GATEWAY STACK_GATEWAY_NO_TILES STACK_GATEWAY_PMTILES STACK_PMTILES STACK_LOCATIONS STACK_TILES STACK_BIN
}

# web_stack_stop [LOG_DIR]: stops everything web_stack_start started; the services' logs are kept in LOG_DIR.
web_stack_stop() {
    local pid
    for pid in "${STACK_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${STACK_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    STACK_PIDS=()
    if [ -n "${1:-}" ] && [ -n "${STACK_WORK:-}" ]; then cp "$STACK_WORK"/*.log "$1/" 2>/dev/null || true; fi
    if [ -n "${STACK_PG_DATA:-}" ]; then
        stop_private_postgres "$STACK_PG_DATA"
        rm -rf "$STACK_PG_DATA" "$STACK_PG_DATA.initdb.log"
    fi
    if [ -n "${STACK_OIDC_DIR:-}" ]; then rm -rf "$STACK_OIDC_DIR"; fi
    return 0
}

# web_stack_unittest FOLDER MODULE.CLASS OUTPUT [TEST...]: runs the Python suite in FOLDER/MODULE.py (or only the
# named tests of CLASS) against the stack, its screenshots and logs in OUTPUT ($TEST_OUTPUT); when it fails,
# shows the end of the services' logs. Returns the suite's status.
web_stack_unittest() {
    local folder=$1 suite=$2 output=$3 status=0
    shift 3
    local tests=("${suite%%.*}.py")
    [ $# -gt 0 ] && tests=("${@/#/$suite.}")
    (cd "$folder" && TEST_OUTPUT="$output" python3 -m unittest -v "${tests[@]}") || status=$?
    if [ $status -ne 0 ]; then
        echo "$folder: tests failed; the services' logs:"
        tail -n 20 "$output"/*.log
    fi
    return $status
}
