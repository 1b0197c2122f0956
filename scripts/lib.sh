# Sourced by the other scripts: the toolchain check, and a private PostgreSQL cluster (installed if missing).
# The server refuses to run as root, so as root the cluster belongs to the `postgres` system user.

ensure_postgres_installed() {
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        echo "installing PostgreSQL..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
    fi
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    export PG_BIN
}

# ensure_ha_installed: the engines of the highly available topology (scripts/ha-up.sh), from Debian:
# etcd, Patroni (and its etcd client), HAProxy, pgBackRest; and a `postgres` user for Patroni to run
# PostgreSQL as.
ensure_ha_installed() {
    local missing=() pair
    for pair in etcd=etcd-server patroni=patroni haproxy=haproxy pgbackrest=pgbackrest; do
        command -v "${pair%%=*}" >/dev/null || missing+=("${pair#*=}")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing ${missing[*]}..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    fi
}

# ensure_leaflet_installed: Debian's libjs-leaflet, the web client's map, where the gateway looks for it
# unless LEAFLET_DIR says otherwise.
ensure_leaflet_installed() {
    if [ ! -f /usr/share/javascript/leaflet/leaflet.js ]; then
        echo "installing Leaflet..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq libjs-leaflet >/dev/null
    fi
}

# How every binary that is run for real is built (scripts/up.sh, bench/; the Dockerfile spells the same
# flags): optimised, with the Swift runtime and Foundation linked in. Such a binary runs where no toolchain
# is installed, and starts without the dynamic loader binding thousands of symbols: `onthemap --version`
# took 18 ms dynamically linked and 11 ms static, and a CLI command is mostly start-up. Exclusive access is
# checked when compiling, not again at run time: the run-time checks cost the hot read 6 to 15% of its
# throughput (the same code built both ways, served side by side), and the debug build the tests run keeps them.
RELEASE_BUILD=(-c release --static-swift-stdlib -Xswiftc -enforce-exclusivity=unchecked)

# as_db_owner CMD...: runs CMD as the unprivileged owner of the cluster.
as_db_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# start_private_postgres DATA_DIR PORT [extra postgres -c settings...]
# Creates the cluster on first use (superuser `onthemap`, trust on loopback only) and starts it on
# 127.0.0.1:PORT with its socket inside DATA_DIR, waiting up to PG_START_TIMEOUT seconds (60) for it.
start_private_postgres() {
    local data_dir=$1 port=$2
    shift 2
    ensure_postgres_installed
    mkdir -p "$data_dir"
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
        chown postgres "$data_dir"
        chmod 700 "$data_dir"
    fi
    if [ ! -f "$data_dir/PG_VERSION" ]; then
        as_db_owner "$PG_BIN/initdb" -D "$data_dir" -U onthemap --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$data_dir.initdb.log" 2>&1 \
            || { cat "$data_dir.initdb.log"; return 1; }
    fi
    local options="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data_dir -c max_connections=300"
    for setting in "$@"; do options="$options -c $setting"; done
    as_db_owner "$PG_BIN/pg_ctl" -D "$data_dir" -o "$options" -l "$data_dir/server.log" -w -t "${PG_START_TIMEOUT:-60}" start >/dev/null \
        || { tail -n 20 "$data_dir/server.log"; return 1; }
}

# private_postgres_running DATA_DIR: whether the cluster's server runs.
private_postgres_running() {
    ensure_postgres_installed
    as_db_owner "$PG_BIN/pg_ctl" -D "$1" status >/dev/null 2>&1
}

# stop_private_postgres DATA_DIR [MODE]: stops the cluster if it runs; MODE is pg_ctl's (fast by default,
# immediate for a crash-like stop that recovers from the WAL on the next start).
stop_private_postgres() {
    local data_dir=$1 mode=${2:-fast}
    ensure_postgres_installed
    [ -f "$data_dir/postmaster.pid" ] && as_db_owner "$PG_BIN/pg_ctl" -D "$data_dir" -m "$mode" -w stop >/dev/null 2>&1
    return 0
}

# free_port: a TCP port nobody listens on right now.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# ensure_toolchain: Swift on PATH (a toolchain in /opt/swift is picked up), python3 for small helpers, and
# the C libraries the services link: zlib and libbrotli, for gzip and brotli answers.
ensure_toolchain() {
    export PATH="/opt/swift/usr/bin:$PATH"
    command -v swift >/dev/null || { echo "swift is not installed (expected a Swift 6 toolchain on PATH)"; exit 1; }
    local missing=()
    command -v python3 >/dev/null || missing+=(python3)
    [ -e /usr/include/zlib.h ] || missing+=(zlib1g-dev)
    [ -e /usr/include/brotli/encode.h ] || missing+=(libbrotli-dev)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing ${missing[*]}..." >&2
        apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# ensure_browser_tools [COMMAND=PACKAGE...]: headless Chromium, its driver, Debian's Leaflet and Python's
# Selenium for the browser tests, and each COMMAND from its Debian PACKAGE; installs what is missing.
ensure_browser_tools() {
    local missing=() pair
    command -v chromium >/dev/null || missing+=(chromium)
    command -v chromedriver >/dev/null || missing+=(chromium-driver)
    [ -f /usr/share/javascript/leaflet/leaflet.css ] || missing+=(libjs-leaflet)
    for pair in "$@"; do command -v "${pair%%=*}" >/dev/null || missing+=("${pair#*=}"); done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing ${missing[*]}..." >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    python3 -c "import selenium" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check selenium
}

# build_services: builds both services (debug) and prints the folder of their binaries.
build_services() {
    local product
    for product in locations-service auth-gateway; do swift build -q --product "$product" >&2; done
    swift build --show-bin-path
}
