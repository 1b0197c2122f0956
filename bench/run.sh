#!/usr/bin/env bash
# Benchmarks of locations-service. Each figure is set against a limit measured in the same run, on the
# same machine, so the ratio means something even where the absolute numbers do not travel:
#   1. hot read      GET latest-100 (wrk)               vs nginx serving the same bytes as a static file
#   2. replay        `locations-service replay`, 1M events vs one SQL statement rebuilding the same pins
#   3. durable POST  POST one pin (wrk)                  vs pgbench running one POST's transaction each
#   4. memory        the service's VmRSS: idle, and at peak and end of loads 1 and 3
# and of auth-gateway in front of it:
#   5. gateway read  GET latest-100 through the gateway (wrk) vs nginx serving the same bytes (figure of 1)
#   6. gateway POST  POST one pin with a session (wrk)    vs the service's own POST figure (3)
#   7. memory        the gateway's VmRSS: idle, and at peak and end of loads 5 and 6
# and last, not a limit but a pass: every parser of client input fuzzed a million runs (bench/fuzz.sh),
# then `onthemap list --json` against `curl -s` of the same URL (bench/cli.sh).
# The throughputs (1, 3, 5, 6) are measured in several rounds, each next to its limit (see "rounds" below).
# Rewrites BENCHMARKS.md at the project root; raw outputs and logs go to bench/results/ (not versioned).
#
# Usage (as root on Debian 12; installs wrk, nginx, PostgreSQL, curl, python3 if missing):
#   bench/run.sh
# Shorter runs for trying the script out (the figures in BENCHMARKS.md come from the defaults):
#   LOAD_SECONDS=5 ROUNDS=1 REPLAY_PINS=25000 bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib.sh
export PATH="$PATH:/usr/sbin:/sbin"  # nginx lives in /usr/sbin

load_seconds=${LOAD_SECONDS:-10}     # each measured load (wrk, pgbench)
warmup_seconds=${WARMUP_SECONDS:-3}  # unmeasured load first: connections open, caches and pools warm
rounds=${ROUNDS:-5}                  # each throughput and its limit are measured this many times, alternately
replay_pins=${REPLAY_PINS:-250000}   # the replay log holds 4 events per pin
read_pins=100                        # the hot read returns the newest 100, so 100 pins fill it

results_dir=$root/bench/results
results=$results_dir/results.env     # KEY=VALUE lines; bench/report.py turns them into BENCHMARKS.md
mkdir -p "$results_dir"
rm -f "$results_dir"/*.log "$results_dir"/*.txt "$results"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
record() { printf '%s=%s\n' "$1" "$2" >>"$results"; }
fail() { echo "bench: $*" >&2; exit 1; }

# --- cleanup: everything this script starts is listed here and stopped on exit, whatever happens -------
pids=()
tmp=$(mktemp -d /tmp/onthemap-bench.XXXXXX)
pg_dir=$(mktemp -d /tmp/onthemap-bench-pg.XXXXXX)
made_policy=false

# stop PID: SIGTERM, up to 10 s to finish, then SIGKILL.
stop() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# forget PID: it has been stopped or has ended; don't signal a recycled id later.
forget() {
    local keep=() pid
    for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || keep+=("$pid"); done
    pids=("${keep[@]+"${keep[@]}"}")
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    for pid in "${pids[@]+"${pids[@]}"}"; do stop "$pid"; done
    stop_private_postgres "$pg_dir"
    rm -rf "$tmp" "$pg_dir" "$pg_dir.initdb.log"
    $made_policy && rm -f /usr/sbin/policy-rc.d
    [ $status -eq 0 ] || echo "bench: failed (exit $status); logs are in bench/results/" >&2
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools -----------------------------------------------------------------------------------------------
install_missing() {
    local missing=()
    command -v wrk >/dev/null || missing+=(wrk)
    command -v nginx >/dev/null || missing+=(nginx)
    ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 || missing+=(postgresql)
    command -v curl >/dev/null || missing+=(curl)
    command -v python3 >/dev/null || missing+=(python3)
    [ ${#missing[@]} -gt 0 ] || return 0
    log "installing ${missing[*]}"
    # The packages would start system services of their own (nginx on :80, a cluster on :5432). A
    # policy-rc.d that refuses is Debian's way to prevent that; ours is removed again on exit.
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        made_policy=true
    fi
    export DEBIAN_FRONTEND=noninteractive
    # Package lists are refreshed only when the install cannot go ahead without them.
    apt-get install -y -qq "${missing[@]}" >"$results_dir/apt.log" 2>&1 \
        || { apt-get update -qq >>"$results_dir/apt.log" 2>&1 && apt-get install -y -qq "${missing[@]}" >>"$results_dir/apt.log" 2>&1; } \
        || { tail -n 20 "$results_dir/apt.log"; fail "could not install ${missing[*]}"; }
    if $made_policy; then rm -f /usr/sbin/policy-rc.d; made_policy=false; fi
}

install_missing
ensure_toolchain
ensure_postgres_installed

log "building locations-service and auth-gateway (release)"
# A scratch folder of its own, so a benchmark build never waits on (or disturbs) a development build.
for product in locations-service auth-gateway; do
    timeout 1800 swift build "${RELEASE_BUILD[@]}" --scratch-path .build-bench --product "$product" \
        >>"$results_dir/build.log" 2>&1 || { tail -n 30 "$results_dir/build.log"; fail "build of $product failed"; }
done
bin=$root/.build-bench/release/locations-service
gateway_bin=$root/.build-bench/release/auth-gateway

# --- PostgreSQL: a private cluster with the default durability (fsync and synchronous_commit on) -------
pg_port=$(free_port)
start_private_postgres "$pg_dir" "$pg_port"
log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port"

# psql DB ARGS...: as the superuser over loopback TCP (trust), stopping at the first error.
psql_db() {
    local db=$1
    shift
    timeout 900 "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U onthemap -d "$db" "$@"
}
create_database() { psql_db postgres -c "CREATE DATABASE $1"; }
database_url() { echo "postgres://onthemap@127.0.0.1:$pg_port/$1"; }

token=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')

# actor_header KEY FIRST LAST: the X-Actor value (base64url without padding of the actor's JSON).
actor_header() {
    printf '{"key":"%s","firstName":"%s","lastName":"%s"}' "$1" "$2" "$3" | base64 -w0 | tr '+/' '-_' | tr -d '='
}

# --- the service -----------------------------------------------------------------------------------------
# start_service DB PORT LOG: runs `serve` in the background (sets service_pid), returns once it is ready.
start_service() {
    DATABASE_URL=$(database_url "$1") INTERNAL_TOKEN=$token "$bin" serve --port "$2" >"$3" 2>&1 &
    service_pid=$!
    pids+=("$service_pid")
    for _ in $(seq 1 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$2/readyz" && return 0
        kill -0 "$service_pid" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 20 "$3"
    fail "locations-service did not become ready on port $2"
}

stop_service() {
    stop "$service_pid"
    forget "$service_pid"
}

# expect_service_alive WHAT LOG: a figure measured on a service that died under load means nothing.
expect_service_alive() {
    kill -0 "$service_pid" 2>/dev/null && return 0
    local status=0
    wait "$service_pid" || status=$?
    forget "$service_pid"
    tail -n 20 "$2"
    fail "locations-service ended during $1 (exit status $status; above 128 means signal number status - 128)"
}

# --- the gateway -----------------------------------------------------------------------------------------
# start_gateway DB PORT SERVICE_PORT LOG: runs auth-gateway in front of the service on SERVICE_PORT, with
# its accounts and sessions in database DB (sets gateway_pid); returns once /readyz answers 200.
start_gateway() {
    DATABASE_URL=$(database_url "$1") LOCATIONS_URL=http://127.0.0.1:$3 INTERNAL_TOKEN=$token PORT=$2 \
        LOG_LEVEL=warning "$gateway_bin" serve --host 127.0.0.1 --port "$2" >"$4" 2>&1 &
    gateway_pid=$!
    pids+=("$gateway_pid")
    for _ in $(seq 1 150); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/readyz")" = 200 ] && return 0
        kill -0 "$gateway_pid" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 20 "$4"
    fail "auth-gateway did not become ready on port $2"
}

stop_gateway() {
    stop "$gateway_pid"
    forget "$gateway_pid"
}

expect_gateway_alive() {
    kill -0 "$gateway_pid" 2>/dev/null && return 0
    local status=0
    wait "$gateway_pid" || status=$?
    forget "$gateway_pid"
    tail -n 20 "$2"
    fail "auth-gateway ended during $1 (exit status $status; above 128 means signal number status - 128)"
}

# gateway_session PORT: signs the bench account up (or finds it there already) and logs in once; prints
# the session id. A single login attempt with the right password: login throttling never comes into it.
gateway_session() {
    local base=http://127.0.0.1:$1 status
    status=$(curl -s -o "$tmp/signup.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data '{"email":"bench@example.com","password":"bench-password","firstName":"Bench","lastName":"Mark"}' \
        "$base/v1/accounts")
    [ "$status" = 201 ] || [ "$status" = 409 ] || { cat "$tmp/signup.json" >&2; fail "sign-up answered $status"; }
    status=$(curl -s -o "$tmp/session.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data '{"udacity":{"username":"bench@example.com","password":"bench-password"}}' "$base/v1/session")
    [ "$status" = 200 ] || [ "$status" = 201 ] || { cat "$tmp/session.json" >&2; fail "login answered $status"; }
    # The answer starts with Udacity's 5-byte guard, )]}' and a newline.
    python3 -c 'import json,sys; data=open(sys.argv[1],"rb").read(); assert data[:5]==b")]}\x27\n"; print(json.loads(data[5:])["session"]["id"])' \
        "$tmp/session.json" || fail "no session id in the login answer"
}

# rss_kb PID: resident memory now, in kB.
rss_kb() {
    local key value _
    while read -r key value _; do
        [ "$key" = "VmRSS:" ] && { echo "$value"; return; }
    done <"/proc/$1/status"
}

# sample_process PID SECONDS: samples PID five times a second until it ends or SECONDS pass; prints
# "PEAK_RSS_KB CPU_TICKS": its highest VmRSS, and the CPU time it had used at the last sample.
sample_process() {
    local pid=$1 end=$((SECONDS + $2)) peak=0 ticks=0 now stat fields
    while [ $SECONDS -lt $end ]; do
        now=$(rss_kb "$pid" 2>/dev/null) || break
        [ -n "$now" ] || break  # a zombie has no VmRSS
        stat=$(cat "/proc/$pid/stat" 2>/dev/null) || break
        read -r -a fields <<<"${stat##*) }"  # fields from the third (state) on; utime and stime are 11 and 12
        ticks=$((fields[11] + fields[12]))
        [ "$now" -gt "$peak" ] && peak=$now
        sleep 0.2
    done
    echo "$peak $ticks"
}

# --- CPU accounting: who used the two cores during a measurement ----------------------------------------
hz=$(getconf CLK_TCK)

# children_of PID: the ids of PID's live child processes (read from /proc: procps may not be installed).
children_of() {
    local file line fields
    for file in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null <"$file" || continue  # (it may have ended meanwhile)
        read -r -a fields <<<"${line##*) }"  # fields from the third (state) on; the parent's id is 1
        [ "${fields[1]}" = "$1" ] && echo "${file//[^0-9]/}"
    done
    return 0
}

# proc_ticks PID: CPU clock ticks used so far by PID, its reaped children and its live children
# (the postmaster's children are the backends; nginx's are its workers).
proc_ticks() {
    local total=0 pid stat fields
    for pid in "$1" $(children_of "$1"); do
        stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
        read -r -a fields <<<"${stat##*) }"  # fields from the third (state) on; utime, stime, cutime, cstime are 11-14
        total=$((total + fields[11] + fields[12] + fields[13] + fields[14]))
    done
    echo "$total"
}

# machine_ticks: "BUSY TOTAL INTERRUPTS STEAL" clock ticks of all cores since boot. Idle and iowait count
# as not busy. Interrupt work (irq, softirq: much of loopback TCP) is busy but charged to no process;
# steal is time the hypervisor gave to other guests.
machine_ticks() {
    local _ user nice system idle iowait irq softirq steal
    read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
    echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))" \
        "$((irq + softirq)) $steal"
}

# ticks_to_cores TICKS SECONDS: average number of cores kept busy.
ticks_to_cores() { python3 -c "print(f'{$1 / $hz / $2:.2f}')"; }

postmaster_pid() { head -n 1 "$pg_dir/postmaster.pid"; }

# children_ms: sets children_ms_now to the CPU milliseconds (user + system) of this shell's children that
# have ended, as `times` reports them: a client run in the foreground (wrk, pgbench, psql, replay) counts
# once it has finished. No subshell and no other command here, so that nothing else is counted.
children_ms() {
    times >"$tmp/times"
    local _ user system value minutes seconds total=0
    { read -r _ _; read -r user system; } <"$tmp/times"
    for value in "$user" "$system"; do  # like 1m2.345s
        minutes=${value%%m*}
        seconds=${value#*m}
        seconds=${seconds%s}
        total=$((total + minutes * 60000 + ${seconds%.*} * 1000 + 10#${seconds#*.}))
    done
    children_ms_now=$total
}

# cpu_begin [PID...]: remembers the machine's, PostgreSQL's, each PID's and our clients' CPU time now.
cpu_begin() {
    cpu_start_machine=$(machine_ticks)
    cpu_start_pg=$(proc_ticks "$(postmaster_pid)")
    cpu_start_procs=()
    local pid
    for pid in "$@"; do cpu_start_procs+=("$(proc_ticks "$pid")"); done
    children_ms
    cpu_start_children=$children_ms_now
}

# cpu_end PREFIX [NAME PID]...: records, in cores (1.0 = one core busy all along), how busy the machine
# was since cpu_begin and how much of it was PostgreSQL, the clients that ended meanwhile, and each named
# process (same order as cpu_begin). What is left is other processes on the machine.
cpu_end() {
    local prefix=$1 busy0 total0 irq0 steal0 busy1 total1 irq1 steal1 seconds i=0 client_ms
    shift
    children_ms
    client_ms=$((children_ms_now - cpu_start_children))
    read -r busy0 total0 irq0 steal0 <<<"$cpu_start_machine"
    read -r busy1 total1 irq1 steal1 <<<"$(machine_ticks)"
    # /proc/stat counts ticks of every core: elapsed seconds = total ticks / cores / hz.
    seconds=$(python3 -c "print(($total1 - $total0) / $(nproc) / $hz)")
    record "${prefix}_cpu_machine" "$(ticks_to_cores $((busy1 - busy0)) "$seconds")"
    record "${prefix}_cpu_interrupts" "$(ticks_to_cores $((irq1 - irq0)) "$seconds")"
    record "${prefix}_cpu_steal" "$(ticks_to_cores $((steal1 - steal0)) "$seconds")"
    record "${prefix}_cpu_postgres" "$(ticks_to_cores $(($(proc_ticks "$(postmaster_pid)") - cpu_start_pg)) "$seconds")"
    record "${prefix}_cpu_client" "$(python3 -c "print(f'{$client_ms / 1000 / $seconds:.2f}')")"
    while [ $# -ge 2 ]; do
        record "${prefix}_cpu_$1" "$(ticks_to_cores $(($(proc_ticks "$2") - cpu_start_procs[i])) "$seconds")"
        i=$((i + 1))
        shift 2
    done
}

# --- wrk -------------------------------------------------------------------------------------------------
# run_wrk NAME CONNECTIONS SECONDS URL [wrk args...]: one bounded wrk run; output in bench/results/NAME.txt.
run_wrk() {
    local name=$1 connections=$2 seconds=$3 url=$4
    shift 4
    # The URL before the other arguments: whatever follows `--` is for the Lua script.
    timeout $((seconds + 30)) wrk -t2 -c"$connections" -d"${seconds}s" "$url" "$@" >"$results_dir/$name.txt" 2>&1 \
        || { cat "$results_dir/$name.txt"; fail "wrk run $name failed"; }
}

# record_wrk NAME PREFIX: copies the figures of bench/summary.lua's line into the results as PREFIX_*.
record_wrk() {
    local line field
    line=$(grep '^wrk-summary ' "$results_dir/$1.txt") || fail "no summary in $1.txt"
    for field in ${line#wrk-summary }; do record "$2_${field%%=*}" "${field#*=}"; done
}

# --- rounds ----------------------------------------------------------------------------------------------
# Each throughput is measured in every one of $rounds rounds, right next to the limit it is held to, and
# the order inside a round flips from one round to the next, so a drift of the machine's speed (other
# guests, CPU frequency, a growing table) falls on both sides alike. bench/report.py sets each round's
# figure against its own round's limit and reports the median of those ratios.

# in_order ROUND A B C...: the runs A B C... in that order in odd rounds and reversed in even ones.
in_order() {
    local round=$1
    shift
    if [ $((round % 2)) = 1 ]; then echo "$@"; else echo "$@" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}

# measure_wrk NAME PREFIX CONNECTIONS URL [wrk args...]: one measured wrk run of $load_seconds, recorded
# as PREFIX_*: wrk's figures, the CPU of each process in the array `watched` (pairs: name pid) and the
# peak VmRSS of the first of them.
measure_wrk() {
    local name=$1 prefix=$2 connections=$3 url=$4 i sampler watched_pids=()
    shift 4
    for ((i = 1; i < ${#watched[@]}; i += 2)); do watched_pids+=("${watched[i]}"); done
    sample_process "${watched[1]}" $((load_seconds + 1)) >"$tmp/$name.sample" &
    sampler=$!
    pids+=("$sampler")
    cpu_begin "${watched_pids[@]}"
    run_wrk "$name" "$connections" "$load_seconds" "$url" --latency "$@"
    cpu_end "$prefix" "${watched[@]}"
    wait "$sampler"
    forget "$sampler"
    record "${prefix}_rss_peak_kb" "$(cut -d' ' -f1 "$tmp/$name.sample")"
    record_wrk "$name" "$prefix"
}

# record_max KEY PATTERN: records KEY as the largest value recorded so far under a key matching PATTERN.
record_max() { record "$1" "$(sed -n "s/^$2=//p" "$results" | sort -n | tail -n 1)"; }

# --- 1. hot read, and 5. the hot read through the gateway ------------------------------------------------
bench_hot_read() {
    log "hot read: seeding $read_pins pins"
    create_database bench_read
    local port
    port=$(free_port)
    start_service bench_read "$port" "$results_dir/service-read.log"
    sleep 2
    record rss_idle_kb "$(rss_kb "$service_pid")"

    # Pins as the gateway posts them: different accounts, realistic place names and links (~320 bytes each).
    local places=("Mountain View, California, United States" "Berlin, Brandenburg, Germany" "Lagos, Lagos State, Nigeria"
                  "Kyoto, Kyoto Prefecture, Japan" "Sao Paulo, Sao Paulo, Brazil")
    local firsts=(Ada Grace Alan Edsger Barbara Donald Margaret Ken) lasts=(Lovelace Hopper Turing Dijkstra Liskov Knuth)
    local i actor body
    for i in $(seq 1 "$read_pins"); do
        actor=$(actor_header "$((3903878700 + i))" "${firsts[i % 8]}" "${lasts[i % 6]}")
        body=$(printf '{"mapString":"%s","mediaURL":"https://www.udacity.com/course/ios-developer-nanodegree--nd003?student=%d","latitude":%s,"longitude":%s}' \
            "${places[i % 5]}" "$i" "$((i % 80)).$((100000 + i * 7919 % 900000))" "-$((i % 170)).$((100000 + i * 104729 % 900000))")
        curl -sf -o /dev/null -X POST -H "Authorization: Bearer $token" -H "X-Actor: $actor" \
            -H 'Content-Type: application/json' --data "$body" "http://127.0.0.1:$port/v1/StudentLocation" \
            || fail "seeding pin $i was refused"
    done
    local service_url=http://127.0.0.1:$port/v1/StudentLocation auth=(-H "Authorization: Bearer $token")

    # nginx serves the very bytes the service answers with.
    mkdir -p "$tmp/bodies"
    curl -sf "${auth[@]}" -o "$tmp/bodies/service.json" "$service_url"
    python3 -c 'import json,sys; n=len(json.load(open(sys.argv[1]))["results"]); sys.exit(n != int(sys.argv[2]))' \
        "$tmp/bodies/service.json" "$read_pins" || fail "the hot read did not return $read_pins pins"
    record read_body_bytes "$(stat -c %s "$tmp/bodies/service.json")"
    start_nginx "$tmp/bodies/service.json" service
    local nginx_url=$nginx_url nginx_pid=$nginx_pid

    # The gateway in front of the same service. It keeps the default list once fetched (and drops it when
    # its live feed sees the log move): a few requests fill it before anything is measured.
    create_database bench_gateway_read
    local gateway_port gateway_url
    gateway_port=$(free_port)
    gateway_url=http://127.0.0.1:$gateway_port/v1/StudentLocation
    start_gateway bench_gateway_read "$gateway_port" "$port" "$results_dir/gateway-read.log"
    sleep 2
    record rss_gw_idle_kb "$(rss_kb "$gateway_pid")"
    for _ in 1 2 3 4 5; do curl -sf -o "$tmp/bodies/gateway.json" "$gateway_url" || fail "the gateway's read failed"; done
    record gw_read_body_bytes "$(stat -c %s "$tmp/bodies/gateway.json")"
    # The gateway's limit is nginx serving the gateway's bytes: the same nginx when they are the same.
    local gw_nginx_url=$nginx_url gw_nginx_pid=$nginx_pid
    if cmp -s "$tmp/bodies/gateway.json" "$tmp/bodies/service.json"; then
        record gw_read_same_bytes yes
    else
        record gw_read_same_bytes no
        start_nginx "$tmp/bodies/gateway.json" gateway
        gw_nginx_url=$nginx_url gw_nginx_pid=$nginx_pid
    fi

    log "hot read: ${warmup_seconds}s warm-up each, then $rounds rounds of ${load_seconds}s: nginx, service, gateway"
    run_wrk read-nginx-warmup 64 "$warmup_seconds" "$nginx_url" "${auth[@]}"
    run_wrk read-service-warmup 64 "$warmup_seconds" "$service_url" "${auth[@]}"
    run_wrk gateway-read-warmup 64 "$warmup_seconds" "$gateway_url"
    local round run
    for round in $(seq 1 "$rounds"); do
        for run in $(in_order "$round" nginx service gateway); do
            case $run in
            nginx)
                watched=(nginx "$nginx_pid")
                measure_wrk "read-nginx-$round" "read_nginx_$round" 64 "$nginx_url" "${auth[@]}" -s bench/summary.lua
                if [ "$gw_nginx_pid" != "$nginx_pid" ]; then
                    watched=(nginx "$gw_nginx_pid")
                    measure_wrk "gateway-read-nginx-$round" "gw_read_nginx_$round" 64 "$gw_nginx_url" -s bench/summary.lua
                fi ;;
            service)
                watched=(service "$service_pid")
                measure_wrk "read-service-$round" "read_service_$round" 64 "$service_url" "${auth[@]}" -s bench/summary.lua
                expect_service_alive "the hot read" "$results_dir/service-read.log" ;;
            gateway)
                watched=(gateway "$gateway_pid" service "$service_pid")
                measure_wrk "gateway-read-$round" "gw_read_$round" 64 "$gateway_url" -s bench/summary.lua
                expect_gateway_alive "the hot read" "$results_dir/gateway-read.log"
                expect_service_alive "the hot read through the gateway" "$results_dir/service-read.log" ;;
            esac
        done
        log "hot read: round $round of $rounds done"
    done
    record_max rss_read_peak_kb 'read_service_[0-9]*_rss_peak_kb'
    record rss_read_end_kb "$(rss_kb "$service_pid")"
    record_max rss_gw_read_peak_kb 'gw_read_[0-9]*_rss_peak_kb'
    record rss_gw_read_end_kb "$(rss_kb "$gateway_pid")"
    # The cached list is trusted only while the live feed follows the log: each loss forwards reads again.
    record gw_read_feed_lost "$(grep -c 'live feed lost' "$results_dir/gateway-read.log" || true)"
    stop_gateway

    # For information: the service's smallest route, /healthz (a constant 15-byte body, no token check),
    # is what this HTTP stack costs per request before any work of the service's own.
    log "hot read: locations-service /healthz (for information, ${load_seconds}s)"
    watched=(service "$service_pid")
    measure_wrk read-health read_health 64 "http://127.0.0.1:$port/healthz" -s bench/summary.lua
    expect_service_alive "the /healthz load" "$results_dir/service-read.log"
    stop_service
}

# start_nginx FILE NAME: nginx serves FILE at /v1/StudentLocation (sets nginx_pid and nginx_url) until
# the benchmarks end.
start_nginx() {
    local file=$1 web=$tmp/nginx-$2 web_port
    web_port=$(free_port)
    mkdir -p "$web/www" "$web/tmp"
    cp "$file" "$web/www/latest.json"
    sed -e "s|@DIR@|$web|g" -e "s|@PORT@|$web_port|g" bench/nginx.conf.template >"$web/nginx.conf"
    chmod 755 "$tmp" "$web" "$web/www"  # nginx workers run as nobody
    chmod 644 "$web/www/latest.json"
    nginx -p "$web" -c "$web/nginx.conf" -e "$web/error.log" &
    nginx_pid=$!
    pids+=("$nginx_pid")
    nginx_url=http://127.0.0.1:$web_port/v1/StudentLocation
    for _ in $(seq 1 50); do curl -sf -o "$tmp/from-nginx.json" "$nginx_url" && break; sleep 0.1; done
    cmp -s "$tmp/from-nginx.json" "$file" || fail "nginx does not serve the bytes of $file"
}

# --- 2. replay -------------------------------------------------------------------------------------------
# now_s: wall-clock seconds with nanoseconds, for timing whole commands.
now_s() { date +%s.%N; }
elapsed() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$1" "$2"; }

bench_replay() {
    create_database bench_replay
    local url t0 t1
    url=$(database_url bench_replay)
    DATABASE_URL=$url timeout 120 "$bin" migrate >"$results_dir/replay-migrate.log" 2>&1

    log "replay: writing $((replay_pins * 4)) events over $replay_pins pins"
    t0=$(now_s)
    psql_db bench_replay -v pins="$replay_pins" -v blocks=10 -f bench/generate-events.sql
    t1=$(now_s)
    record replay_generate_seconds "$(elapsed "$t0" "$t1")"
    # Settle the table first (hint bits, visibility map, statistics), so neither contender pays for that.
    psql_db bench_replay -c "VACUUM (ANALYZE) locations.events" -c "CHECKPOINT"
    record replay_events "$(psql_db bench_replay -tAc "SELECT count(*) FROM locations.events")"
    record replay_deleted_streams "$(psql_db bench_replay -tAc "SELECT count(*) FROM locations.events WHERE event_type = 'LocationDeleted'")"
    record replay_transactions "$(psql_db bench_replay -tAc "SELECT count(DISTINCT transaction_id) FROM locations.events")"
    record replay_events_mb "$(psql_db bench_replay -tAc "SELECT pg_total_relation_size('locations.events') / 1048576")"

    log "replay: locations-service replay"
    # Wall clock of the whole command (start-up and connecting included); its memory and CPU time are
    # sampled while it runs.
    cpu_begin
    t0=$(now_s)
    DATABASE_URL=$url timeout 900 "$bin" replay >"$results_dir/replay.log" 2>&1 &
    local guard=$! replay_pid="" sampler
    pids+=("$guard")
    # The process to sample is timeout's child.
    for _ in $(seq 1 100); do
        replay_pid=$(children_of "$guard")
        [ -n "$replay_pid" ] && break
        sleep 0.01
    done
    sample_process "${replay_pid:-$guard}" 900 >"$tmp/replay-sample" &
    sampler=$!
    pids+=("$sampler")
    wait "$guard" || { tail -n 20 "$results_dir/replay.log"; fail "replay failed"; }
    t1=$(now_s)
    forget "$guard"
    cpu_end replay_service
    wait "$sampler"
    forget "$sampler"
    local peak ticks
    read -r peak ticks <"$tmp/replay-sample"
    record replay_service_seconds "$(elapsed "$t0" "$t1")"
    record replay_service_cpu_seconds "$(python3 -c "print(f'{$ticks / $hz:.2f}')")"
    record rss_replay_peak_kb "$peak"
    psql_db bench_replay -c "CHECKPOINT"

    log "replay: the same rebuild in SQL"
    cpu_begin
    t0=$(now_s)
    psql_db bench_replay -f bench/rebuild.sql
    t1=$(now_s)
    psql_db bench_replay -f bench/rebuild-indexes.sql
    local t2
    t2=$(now_s)
    cpu_end replay_sql
    record replay_sql_noindex_seconds "$(elapsed "$t0" "$t1")"
    record replay_sql_seconds "$(elapsed "$t0" "$t2")"

    log "replay: verify"
    t0=$(now_s)
    DATABASE_URL=$url timeout 900 "$bin" replay --verify >"$results_dir/replay-verify.log" 2>&1 \
        || { tail -n 20 "$results_dir/replay-verify.log"; fail "replay --verify found differences"; }
    record replay_verify_seconds "$(elapsed "$t0" "$(now_s)")"
    grep -q "matches the live one" "$results_dir/replay-verify.log" || fail "replay --verify did not confirm a match"
    record replay_verify "match"
    local live sql differing
    IFS='|' read -r live sql differing < <(psql_db bench_replay -tA -f bench/compare.sql)
    record replay_live_pins "$live"
    record replay_sql_pins "$sql"
    record replay_differing_rows "$differing"
    if [ "$differing" != 0 ] || [ "$live" != "$sql" ]; then
        fail "replay and the SQL rebuild disagree ($live vs $sql rows, $differing differ)"
    fi
}

# --- 3. durable POST, and 6. authenticated POST through the gateway -------------------------------------
bench_post() {
    create_database bench_post_service
    local port actors=() i
    port=$(free_port)
    start_service bench_post_service "$port" "$results_dir/service-post.log"
    sleep 2
    record rss_post_idle_kb "$(rss_kb "$service_pid")"
    local firsts=(Ada Grace Alan Edsger Barbara Donald Margaret Ken)
    for i in $(seq 0 7); do actors+=("$(actor_header "$((5550001000 + i))" "${firsts[i]}" "Student")"); done
    local url=http://127.0.0.1:$port/v1/StudentLocation

    # The gateway in front of the same service, with one session.
    create_database bench_gateway_post
    local gateway_port gateway_url session
    gateway_port=$(free_port)
    gateway_url=http://127.0.0.1:$gateway_port/v1/StudentLocation
    start_gateway bench_gateway_post "$gateway_port" "$port" "$results_dir/gateway-post.log"
    sleep 2
    record rss_gw_post_idle_kb "$(rss_kb "$gateway_pid")"
    session=$(gateway_session "$gateway_port")

    # pgbench runs one POST's transaction (bench/append.sql) in a database of its own.
    create_database bench_post_pgbench
    DATABASE_URL=$(database_url bench_post_pgbench) timeout 120 "$bin" migrate >"$results_dir/pgbench-migrate.log" 2>&1

    log "durable POST: ${warmup_seconds}s warm-up each, then $rounds rounds of ${load_seconds}s: pgbench, service, gateway"
    run_wrk post-service-warmup 32 "$warmup_seconds" "$url" -s bench/post.lua -- "$token" "${actors[@]}"
    run_wrk gateway-post-warmup 32 "$warmup_seconds" "$gateway_url" -s bench/gateway-post.lua -- "$session"
    pgbench_run post-pgbench-warmup 32 "$warmup_seconds"
    local round run before
    for round in $(seq 1 "$rounds"); do
        for run in $(in_order "$round" pgbench service gateway); do
            # Every answered POST must be a committed event: the events each load appended are counted.
            before=$(events_in bench_post_service)
            case $run in
            pgbench)
                cpu_begin
                pgbench_run "post-pgbench-$round" 32 "$load_seconds"
                cpu_end "post_pgbench_$round"
                record_pgbench "post-pgbench-$round" "post_pgbench_$round" ;;
            service)
                watched=(service "$service_pid")
                measure_wrk "post-service-$round" "post_service_$round" 32 "$url" -s bench/post.lua -- "$token" "${actors[@]}"
                expect_service_alive "the POST load" "$results_dir/service-post.log"
                record "post_service_${round}_events" "$(($(events_in bench_post_service) - before))" ;;
            gateway)
                watched=(gateway "$gateway_pid" service "$service_pid")
                measure_wrk "gateway-post-$round" "gw_post_$round" 32 "$gateway_url" -s bench/gateway-post.lua -- "$session"
                expect_gateway_alive "the POST load" "$results_dir/gateway-post.log"
                expect_service_alive "the POST load through the gateway" "$results_dir/service-post.log"
                record "gw_post_${round}_events" "$(($(events_in bench_post_service) - before))" ;;
            esac
        done
        log "durable POST: round $round of $rounds done"
    done
    record_max rss_post_peak_kb 'post_service_[0-9]*_rss_peak_kb'
    record rss_post_end_kb "$(rss_kb "$service_pid")"
    record_max rss_gw_post_peak_kb 'gw_post_[0-9]*_rss_peak_kb'
    record rss_gw_post_end_kb "$(rss_kb "$gateway_pid")"
    # The pool keeps what it opened for a while: this is how many connections the loads made it use.
    local connections
    connections=$(psql_db bench_post_service -tAc "SELECT count(*) FROM pg_stat_activity
        WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
    record post_service_db_connections "$connections"
    stop_gateway
    stop_service
    # Transactions committed in that database over the service's whole life (its connections have ended,
    # so their statistics are in), against the events it appended: what each POST costs PostgreSQL in commits.
    sleep 0.5
    record post_service_all_commits "$(psql_db bench_post_service -tAc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")"
    record post_service_all_events "$(events_in bench_post_service)"

    # For information: pgbench with only as many connections as the service could append on (all it
    # opened but the one held for LISTEN). With synchronous commits, throughput follows the number of
    # transactions that can wait for the same WAL flush, so this separates the pool's size from the rest.
    local appenders=$((connections > 1 ? connections - 1 : 1))
    log "durable POST: pgbench with $appenders connections (for information)"
    pgbench_run post-pgbench-pool-warmup "$appenders" "$warmup_seconds"
    cpu_begin
    pgbench_run post-pgbench-pool "$appenders" "$load_seconds"
    cpu_end post_pgbench_pool
    record_pgbench post-pgbench-pool post_pgbench_pool
    record post_pgbench_pool_clients "$appenders"
}

events_in() { psql_db "$1" -tAc "SELECT count(*) FROM locations.events"; }

# pgbench_run NAME CLIENTS SECONDS: bench/append.sql on the pgbench database; output in bench/results/NAME.txt.
pgbench_run() {
    timeout $(($3 + 60)) "$PG_BIN/pgbench" -h 127.0.0.1 -p "$pg_port" -U onthemap -n -M extended -c "$2" -j 2 \
        -T "$3" -f bench/append.sql bench_post_pgbench >"$results_dir/$1.txt" 2>&1 \
        || { cat "$results_dir/$1.txt"; fail "pgbench $1 failed"; }
}

# record_pgbench NAME PREFIX: throughput, mean latency and failures of a pgbench run.
record_pgbench() {
    local out=$results_dir/$1.txt
    record "$2_tps" "$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out")"
    record "$2_latency_ms" "$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$out")"
    record "$2_failed" "$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out")"
}

# --- run -------------------------------------------------------------------------------------------------
record date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
record cpus "$(nproc)"
record cpu_model "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
record memory_mb "$(($(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo) / 1024))"
record os "$(. /etc/os-release && echo "$PRETTY_NAME")"
record load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
record postgres_version "$("$PG_BIN/postgres" --version | awk '{print $3}')"
record nginx_version "$(nginx -v 2>&1 | sed 's|.*/||')"
record wrk_version "$(wrk -v 2>&1 | head -n 1 | awk '{print $2}')"
record swift_version "$(swift --version 2>/dev/null | sed -n 's/.*Swift version \([^ ]*\).*/\1/p' | head -n 1)"
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    record commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Services Shared Package.swift || echo ' with local changes')"
else
    record commit unknown
fi
record load_seconds "$load_seconds"
record warmup_seconds "$warmup_seconds"
record rounds "$rounds"

started=$SECONDS
bench_hot_read
bench_post
bench_replay
record total_seconds "$((SECONDS - started))"
record load_after "$(cut -d' ' -f1-3 /proc/loadavg)"

python3 bench/report.py "$results" BENCHMARKS.md
log "wrote BENCHMARKS.md"
log "fuzzing the parsers of client input, a million runs each"
bench/fuzz.sh >"$results_dir/fuzz.log" 2>&1 || { tail -n 20 "$results_dir/fuzz.log"; fail "fuzzing failed"; }
log "the command-line client against curl (its own section of BENCHMARKS.md)"
bench/cli.sh >"$results_dir/cli.log" 2>&1 || { tail -n 20 "$results_dir/cli.log"; fail "the command-line benchmark failed"; }
sed -n '/^| Benchmark/,/^$/p' BENCHMARKS.md
