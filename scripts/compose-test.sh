#!/usr/bin/env bash
# Proves docker-compose.yml the way a user runs it, on a machine that reaches no image registry and must
# not use Docker's default bridge. It installs what is missing, starts a Docker engine of its own (no
# bridge, no iptables, everything under one temporary folder), builds the base images from Debian's
# packages and this machine's Swift toolchain (scripts/compose/base-images.sh), and runs the real compose
# file with scripts/compose/host-network.override.yml (host networking on free loopback ports, the local
# base images as build arguments). Then, with docker-compose 1.29 and with `docker compose` v2: up from
# nothing with every service healthy; sign-up, login, post and list through the gateway; the `monitoring`
# profile's Prometheus scraping both services with the rules loaded; the `https` profile's Caddy getting a
# certificate from an ACME server on loopback (pebble, Let's Encrypt's test server), redirecting plain
# HTTP, and a student logging in and posting over HTTPS through it; the `backups` profile's WAL archiving
# and full backup, and scripts/compose-restore.sh to a moment between two pins; replay --verify,
# replay and migrate through compose; locations-service's process killed, restarted by the restart
# policy, no acknowledged pin lost; a second gateway replica sharing sessions, and its logs; down and up
# with the pins kept; down -v and up with nothing left. It checks the image runs as non-root, prints its
# size, and removes everything it made (containers, images, volumes, the engine and its folder).
# Usage: scripts/compose-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain
started=$SECONDS

# What a fresh Debian 12 lacks. Installing docker.io must not start the system's own engine (it would
# make the default bridge), so services are held back while it installs.
install_missing() {
    local packages=()
    command -v dockerd >/dev/null || packages+=(docker.io)
    command -v docker-compose >/dev/null || packages+=(docker-compose)
    command -v mmdebstrap >/dev/null || packages+=(mmdebstrap)
    command -v curl >/dev/null || packages+=(curl)
    command -v git >/dev/null || packages+=(git)
    command -v pebble >/dev/null || packages+=(pebble)
    command -v openssl >/dev/null || packages+=(openssl)
    [ ${#packages[@]} -gt 0 ] || return 0
    echo "installing ${packages[*]}..."
    local held=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && held=yes
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    [ -z "$held" ] || rm -f /usr/sbin/policy-rc.d
}
install_missing

work=$(mktemp -d /tmp/onthemap-compose.XXXXXX)
export DOCKER_HOST="unix://$work/docker.sock" DOCKER_CONFIG="$work/docker-config"
# The classic builder, which needs no BuildKit plugin; docker-compose 1.29 builds through the engine's API.
export DOCKER_BUILDKIT=0 COMPOSE_DOCKER_CLI_BUILD=0
export COMPOSE_FILE=docker-compose.yml:scripts/compose/host-network.override.yml
export COMPOSE_PROJECT_NAME=onthemap-compose-test COMPOSE_INTERACTIVE_NO_CLI=1
export COMPOSE_TEST_RUNTIME_IMAGE=onthemap-compose-test/runtime:bookworm
export COMPOSE_TEST_POSTGRES_IMAGE=onthemap-compose-test/postgres:15
export COMPOSE_TEST_SWIFT_IMAGE=onthemap-compose-test/swift:bookworm
# One session posts a pin every 0.1 s through a crash, and every pin it was answered for must be on the
# map: the write limit and the cap on one student's pins are raised so that neither refuses nor removes any.
export WRITE_BURST=1000 PINS_PER_STUDENT=1000
# Caddy (the `https` profile) forwards from loopback: the gateway believes its X-Forwarded-Proto.
export TRUSTED_PROXIES=127.0.0.1 DOMAIN=onthemap.example.org
mkdir -p "$DOCKER_CONFIG/cli-plugins"
engine=""
acme_pids=""
compose=()
passed=0

fail() {
    echo "compose-test: FAILED: $*" >&2
    exit 1
}
ok() {
    passed=$((passed + 1))
    echo "  ok  $*"
}
elapsed() { echo "$((SECONDS - started)) s"; }

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    set +e
    if [ $status -ne 0 ] && [ -n "$engine" ]; then
        echo "--- compose ps and the last log lines of each service ---"
        [ ${#compose[@]} -gt 0 ] && { "${compose[@]}" ps; "${compose[@]}" logs --no-color --tail 30; } 2>&1 | tail -n 150
        echo "--- the engine's last log lines ---"
        tail -n 20 "$work/dockerd.log"
    fi
    [ -z "$acme_pids" ] || kill $acme_pids 2>/dev/null
    if [ -n "$engine" ]; then
        docker ps -aq | xargs -r docker rm -f >/dev/null 2>&1
        docker volume ls -q | xargs -r docker volume rm -f >/dev/null 2>&1
        docker images -q | sort -u | xargs -r docker rmi -f >/dev/null 2>&1
        [ -z "$(docker images -q)" ] || echo "compose-test: some images were left in the engine's folder; removing it anyway" >&2
        kill -TERM "$engine" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$engine" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$engine" 2>/dev/null
    fi
    # Whatever the engine left mounted under its folder, deepest first.
    awk -v root="$work/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n 1 umount -l 2>/dev/null
    rm -rf "$work"
    [ $status -eq 0 ] || echo "compose-test: failed after $(elapsed)" >&2
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A Docker engine of its own: no bridge and no iptables rules, so containers get no addresses at all;
# overlay2 where the kernel allows it, else vfs.
start_engine() {
    local driver
    for driver in overlay2 vfs; do
        dockerd --bridge=none --iptables=false --ip6tables=false --storage-driver="$driver" \
            --data-root "$work/data" --exec-root "$work/exec" --host "$DOCKER_HOST" --pidfile "$work/docker.pid" \
            >"$work/dockerd.log" 2>&1 &
        engine=$!
        for _ in $(seq 1 100); do
            docker version >/dev/null 2>&1 && { echo "Docker engine ($driver) on $DOCKER_HOST"; return 0; }
            kill -0 "$engine" 2>/dev/null || break
            sleep 0.3
        done
        kill -TERM "$engine" 2>/dev/null; wait "$engine" 2>/dev/null
        engine=""
        echo "the Docker engine did not start with $driver:"; tail -n 5 "$work/dockerd.log"
        rm -rf "$work/data" "$work/exec"
    done
    fail "no Docker engine could be started (see above)"
}

# `docker compose` v2: the system's plugin if there is one, else Debian's own build of it (packaged as
# docker-compose from Debian 13 on; one static binary) fetched with apt into this run's folder.
find_compose_v2() {
    docker compose version >/dev/null 2>&1 && return 0
    local lists="$work/apt" options
    mkdir -p "$lists/lists/partial" "$lists/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$lists/sources.list"
    options=(-o "Dir::Etc::SourceList=$lists/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o "Dir::State::Lists=$lists/lists" -o "Dir::Cache=$lists/cache" -o APT::Sandbox::User=root)
    (cd "$lists" && apt-get "${options[@]}" -qq update && apt-get "${options[@]}" -qq download docker-compose) >/dev/null 2>&1 \
        && dpkg-deb -x "$lists"/docker-compose_2*.deb "$lists/root" \
        && cp "$lists/root/usr/libexec/docker/cli-plugins/docker-compose" "$DOCKER_CONFIG/cli-plugins/" \
        && docker compose version >/dev/null 2>&1
}

not_our_ports() {
    local port
    while :; do
        port=$(free_port)
        case " 8080 8081 54329 $* " in *" $port "*) ;; *) echo "$port"; return ;; esac
    done
}
COMPOSE_TEST_PG_PORT=$(not_our_ports)
COMPOSE_TEST_LOCATIONS_PORT=$(not_our_ports "$COMPOSE_TEST_PG_PORT")
COMPOSE_TEST_GATEWAY_PORT=$(not_our_ports "$COMPOSE_TEST_PG_PORT" "$COMPOSE_TEST_LOCATIONS_PORT")
COMPOSE_TEST_REPLICA_PORT=$(not_our_ports "$COMPOSE_TEST_PG_PORT" "$COMPOSE_TEST_LOCATIONS_PORT" "$COMPOSE_TEST_GATEWAY_PORT")
COMPOSE_TEST_HTTP_PORT=$(not_our_ports "$COMPOSE_TEST_PG_PORT" "$COMPOSE_TEST_LOCATIONS_PORT" "$COMPOSE_TEST_GATEWAY_PORT" "$COMPOSE_TEST_REPLICA_PORT")
COMPOSE_TEST_HTTPS_PORT=$(not_our_ports "$COMPOSE_TEST_PG_PORT" "$COMPOSE_TEST_LOCATIONS_PORT" "$COMPOSE_TEST_GATEWAY_PORT" \
    "$COMPOSE_TEST_REPLICA_PORT" "$COMPOSE_TEST_HTTP_PORT")
COMPOSE_TEST_CADDY_ADMIN_PORT=$(not_our_ports "$COMPOSE_TEST_PG_PORT" "$COMPOSE_TEST_LOCATIONS_PORT" "$COMPOSE_TEST_GATEWAY_PORT" \
    "$COMPOSE_TEST_REPLICA_PORT" "$COMPOSE_TEST_HTTP_PORT" "$COMPOSE_TEST_HTTPS_PORT")
COMPOSE_TEST_PROMETHEUS_PORT=$(not_our_ports "$COMPOSE_TEST_PG_PORT" "$COMPOSE_TEST_LOCATIONS_PORT" "$COMPOSE_TEST_GATEWAY_PORT" \
    "$COMPOSE_TEST_REPLICA_PORT" "$COMPOSE_TEST_HTTP_PORT" "$COMPOSE_TEST_HTTPS_PORT" "$COMPOSE_TEST_CADDY_ADMIN_PORT")
COMPOSE_TEST_ACME_FOLDER=$work/acme
COMPOSE_TEST_PROMETHEUS_CONFIG=$work/prometheus.yml
export COMPOSE_TEST_PG_PORT COMPOSE_TEST_LOCATIONS_PORT COMPOSE_TEST_GATEWAY_PORT COMPOSE_TEST_REPLICA_PORT \
    COMPOSE_TEST_HTTP_PORT COMPOSE_TEST_HTTPS_PORT COMPOSE_TEST_CADDY_ADMIN_PORT COMPOSE_TEST_ACME_FOLDER \
    COMPOSE_TEST_PROMETHEUS_PORT COMPOSE_TEST_PROMETHEUS_CONFIG
gateway="http://127.0.0.1:$COMPOSE_TEST_GATEWAY_PORT"
replica="http://127.0.0.1:$COMPOSE_TEST_REPLICA_PORT"
prometheus="http://127.0.0.1:$COMPOSE_TEST_PROMETHEUS_PORT"
# The `monitoring` profile's scrape configuration as committed, its targets moved to the services' loopback
# ports, and the rule groups Prometheus should load.
sed -e "s/\"auth-gateway:8080\"/\"127.0.0.1:$COMPOSE_TEST_GATEWAY_PORT\"/" \
    -e "s/\"locations-service:8081\"/\"127.0.0.1:$COMPOSE_TEST_LOCATIONS_PORT\"/" \
    docs/prometheus/prometheus.yml >"$COMPOSE_TEST_PROMETHEUS_CONFIG"
chmod 0644 "$COMPOSE_TEST_PROMETHEUS_CONFIG"
[ "$(grep -c '"127.0.0.1:' "$COMPOSE_TEST_PROMETHEUS_CONFIG")" = 2 ] \
    || fail "docs/prometheus/prometheus.yml no longer names the targets auth-gateway:8080 and locations-service:8081"
rule_groups=$(python3 -c 'import sys, yaml; print(" ".join(sorted(g["name"] for g in yaml.safe_load(open(sys.argv[1]))["groups"])))' \
    docs/prometheus/onthemap-rules.yml)

# --- HTTP through the gateway ---------------------------------------------------------------------------

# call METHOD URL [BODY] [curl options...]: the answer's body in $work/body, its status printed.
call() {
    local method=$1 url=$2 body=${3:-}
    shift 3 2>/dev/null || shift $#
    local data=()
    [ -z "$body" ] || data=(--data "$body")
    curl -sS --max-time 10 -o "$work/body" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
        "${data[@]}" "$@" "$url" 2>/dev/null || echo 000
}
# json EXPRESSION: evaluates a Python expression on the answer's JSON (`d`), after the session routes'
# 5-byte prefix when there is one.
json() {
    python3 -c '
import json, sys
text = open(sys.argv[1], "rb").read()
if text.startswith(b")]}\x27\n"): text = text[5:]
d = json.loads(text)
print(eval(sys.argv[2]))' "$work/body" "$1"
}
expect() {
    local what=$1 want=$2 got=$3
    [ "$got" = "$want" ] || fail "$what: status $got, wanted $want: $(head -c 300 "$work/body")"
}

sign_up_and_log_in() {
    local base=$1 email=$2
    expect "sign-up of $email" 201 "$(call POST "$base/v1/accounts" \
        "{\"email\":\"$email\",\"password\":\"correct horse battery\",\"firstName\":\"Ada\",\"lastName\":\"Lovelace\"}")"
    log_in "$base" "$email"
}
log_in() {
    local base=$1 email=$2
    expect "login of $email" 200 "$(call POST "$base/v1/session" "{\"udacity\":{\"username\":\"$email\",\"password\":\"correct horse battery\"}}")"
    [ "$(head -c 5 "$work/body" | od -An -c | tr -d ' ')" = ")]}'\\n" ] || fail "the login answer lacks the )]}' prefix"
    session=$(json 'd["session"]["id"]')
}
# post_pin BASE SESSION NAME: prints the new pin's objectId, or nothing when it was not acknowledged.
post_pin() {
    local status
    status=$(call POST "$1/v1/StudentLocation" \
        "{\"mapString\":\"$3\",\"mediaURL\":\"https://example.com/$3\",\"latitude\":48.85,\"longitude\":2.35}" \
        -H "Authorization: Bearer $2")
    [ "$status" = 200 ] && json 'd["objectId"]'
    return 0
}
pin_count() {
    expect "the list" 200 "$(call GET "$gateway/v1/StudentLocation?limit=1000")"
    json 'len(d["results"])'
}
has_pin() { [ "$(call GET "$gateway/v1/StudentLocation/$1")" = 200 ]; }

# --- an ACME server on loopback -------------------------------------------------------------------------

# Let's Encrypt's test server, pebble, as the `https` profile's CA: its endpoint on a certificate of a CA
# made here (endpoint.pem, which Caddy is told to trust), and pebble-challtestsrv as its DNS, answering
# 127.0.0.1 for every name, so it validates the challenges at Caddy's ports on this machine.
start_acme_server() {
    local acme=$COMPOSE_TEST_ACME_FOLDER dns_port management_port
    mkdir -p "$acme"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=pebble on loopback" \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$acme/endpoint.key" -out "$acme/endpoint.pem" 2>/dev/null \
        || fail "openssl could not make the ACME server's certificate"
    chmod 0644 "$acme/endpoint.pem"
    acme_port=$(free_port) management_port=$(free_port) dns_port=$(free_port)
    cat >"$acme/pebble.json" <<JSON
{"pebble": {"listenAddress": "127.0.0.1:$acme_port", "managementListenAddress": "127.0.0.1:$management_port",
            "certificate": "$acme/endpoint.pem", "privateKey": "$acme/endpoint.key",
            "httpPort": $COMPOSE_TEST_HTTP_PORT, "tlsPort": $COMPOSE_TEST_HTTPS_PORT,
            "ocspResponderURL": "", "externalAccountBindingRequired": false}}
JSON
    pebble-challtestsrv -defaultIPv4 127.0.0.1 -defaultIPv6 "" -dns01 "127.0.0.1:$dns_port" -http01 "" -https01 "" \
        -tlsalpn01 "" -management "127.0.0.1:$(free_port)" >"$acme/challtestsrv.log" 2>&1 &
    acme_pids="$!"
    PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 pebble -config "$acme/pebble.json" -dnsserver "127.0.0.1:$dns_port" \
        >"$acme/pebble.log" 2>&1 &
    acme_pids="$acme_pids $!"
    export ACME_CA="https://127.0.0.1:$acme_port/dir"
    for _ in $(seq 1 50); do
        curl -fsS --cacert "$acme/endpoint.pem" "$ACME_CA" >/dev/null 2>&1 \
            && curl -fsS --cacert "$acme/endpoint.pem" "https://127.0.0.1:$management_port/roots/0" >"$acme/issuing-root.pem" 2>/dev/null \
            && return 0
        sleep 0.2
    done
    tail -n 20 "$acme/pebble.log"
    fail "pebble did not start"
}

# https_call METHOD PATH [BODY] [curl options...]: as `call`, to DOMAIN through Caddy on this machine,
# trusting only the certificates pebble issues; prints the HTTP version, then the status; the answer's
# headers in $work/headers.
https_call() {
    local method=$1 path=$2 body=${3:-}
    shift 3 2>/dev/null || shift $#
    call "$method" "https://$DOMAIN:$COMPOSE_TEST_HTTPS_PORT$path" "$body" --resolve "$DOMAIN:$COMPOSE_TEST_HTTPS_PORT:127.0.0.1" \
        --cacert "$COMPOSE_TEST_ACME_FOLDER/issuing-root.pem" -D "$work/headers" -w '%{http_version} %{http_code}' "$@"
}

# --- compose --------------------------------------------------------------------------------------------

container() { "${compose[@]}" ps -q "$1"; }
state() {
    docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$1" 2>/dev/null
}
# wait_healthy SERVICE...: every one healthy within 3 minutes.
wait_healthy() {
    local service id
    for service in "$@"; do
        for _ in $(seq 1 180); do
            id=$(container "$service")
            [ -n "$id" ] && [ "$(state "$id")" = healthy ] && continue 2
            sleep 1
        done
        fail "$service is not healthy after 3 minutes (state: $(state "$(container "$service")"))"
    done
}
services=(postgres locations-service auth-gateway)
up() {
    "${compose[@]}" up -d "$@" >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "${compose[*]} up -d $*"; }
    wait_healthy "${services[@]}"
}
# task SERVICE COMMAND...: a one-off container of the service, as an operator runs a task (or of
# $task_service, when set, with the options in $task_options).
task_service=""
task_options=()
task() {
    local service=${task_service:-$1}
    shift
    "${compose[@]}" "${task_options[@]}" run --rm -T "$service" "$@" 2>&1
}

# backups_and_restore: the `backups` profile as an operator turns it on (WAL archived, a full backup at
# first start), then scripts/compose-restore.sh to a moment between two pins: the one before it kept (with
# every pin of `kept`), the one after it gone, the services healthy again.
backups_and_restore() {
    local before after point archived
    "${compose[@]}" --profile backups up -d backups >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "--profile backups up -d backups"; }
    for _ in $(seq 1 180); do
        "${compose[@]}" --profile backups logs --no-color backups 2>&1 | grep -q "full backup done" && break
        sleep 1
    done
    "${compose[@]}" --profile backups logs --no-color backups 2>&1 | grep -q "full backup done" \
        || fail "no full backup after 3 minutes: $("${compose[@]}" --profile backups logs --no-color --tail 20 backups 2>&1)"
    archived=$("${compose[@]}" exec -T postgres psql -X -qtA -U onthemap -d onthemap -h /var/run/postgresql \
        -c "SELECT archived_count FROM pg_stat_archiver")
    [ "${archived:-0}" -gt 0 ] || fail "the server archived no WAL segment (archived_count: '$archived')"
    ok "the backups profile: the stanza made, $archived WAL segment(s) archived, a full backup taken"

    before=$(post_pin "$gateway" "$session" "Before-the-restore-point")
    [ -n "$before" ] || fail "post: $(cat "$work/body")"
    kept+=("$before")
    sleep 1.5
    point=$(date -u '+%Y-%m-%d %H:%M:%S.%3N+00')
    sleep 1.5
    after=$(post_pin "$gateway" "$session" "After-the-restore-point")
    [ -n "$after" ] || fail "post: $(cat "$work/body")"
    COMPOSE="${compose[*]}" COMPOSE_PROFILES=backups scripts/compose-restore.sh --to "$point" >"$work/restore.log" 2>&1 \
        || { tail -n 40 "$work/restore.log"; fail "scripts/compose-restore.sh --to '$point'"; }
    grep -q "matches the live one" "$work/restore.log" || fail "the restore's replay --verify said: $(tail -n 20 "$work/restore.log")"
    wait_healthy "${services[@]}"
    has_pin "$before" || fail "the pin acknowledged before the restore point is gone after the restore"
    ! has_pin "$after" || fail "the pin posted after the restore point is back after the restore"
    [ "$(pin_count)" = ${#kept[@]} ] || fail "after the restore the list holds $(pin_count) pins, wanted ${#kept[@]}"
    ok "scripts/compose-restore.sh --to a moment: all ${#kept[@]} pins acknowledged before it there, the one after it gone, replay --verify clean, the services healthy ($(grep -o 'done in [0-9]* s' "$work/restore.log"))"
    "${compose[@]}" --profile backups rm -sf backups >/dev/null 2>&1 || fail "--profile backups rm -sf backups"
}

# prove COMPOSE...: the whole story with one compose command.
prove() {
    compose=("$@")
    local started_here=$SECONDS output id pid restarts kept=() pin

    up
    [ "$(docker inspect -f '{{.State.ExitCode}}' "$("${compose[@]}" ps -aq init-secrets)")" = 0 ] || fail "init-secrets did not exit 0"
    ok "up from nothing: the secrets generated, postgres, locations-service and auth-gateway healthy"
    [ "$(docker network ls -q --filter driver=bridge | wc -l)" = 0 ] \
        && [ -z "$(docker ps -q | xargs docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' | tr -d '\n')" ] \
        || fail "a container has an address of its own, or a bridge network exists"
    ok "no bridge network and no container address"

    sign_up_and_log_in "$gateway" "ada@example.com"
    ok "sign-up (201) and login (200, prefixed) through the gateway"
    pin=$(post_pin "$gateway" "$session" "Paris")
    [ -n "$pin" ] || fail "post: $(cat "$work/body")"
    [ "$(pin_count)" = 1 ] && has_pin "$pin" || fail "the list does not hold the posted pin"
    kept+=("$pin")
    ok "post (200) and list (1 pin) through the gateway"
    output=$(task auth-gateway onthemap list --gateway "$gateway") || fail "onthemap list: $output"
    grep -q "Paris" <<<"$output" || fail "onthemap list shows no pin: $output"
    ok "the image's onthemap lists the pin through the gateway"

    # Monitoring as an operator turns it on (the `monitoring` profile): Prometheus scraping both services,
    # locations-service with the internal token from the secrets volume, and the rules loaded.
    "${compose[@]}" --profile monitoring up -d prometheus >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "--profile monitoring up -d prometheus"; }
    local targets="" groups
    for _ in $(seq 1 60); do
        [ "$(call GET "$prometheus/api/v1/targets")" = 200 ] \
            && targets=$(json '" ".join(sorted(t["labels"]["job"] + "=" + t["health"] for t in d["data"]["activeTargets"]))') \
            && [ "$targets" = "auth-gateway=up locations-service=up" ] && break
        sleep 1
    done
    [ "$targets" = "auth-gateway=up locations-service=up" ] \
        || fail "Prometheus's targets after 60 s: '$targets' ($(json '[t["lastError"] for t in d["data"]["activeTargets"]]' 2>&1)): $("${compose[@]}" --profile monitoring logs --no-color --tail 20 prometheus 2>&1)"
    expect "Prometheus's rules" 200 "$(call GET "$prometheus/api/v1/rules")"
    groups=$(json '" ".join(sorted(g["name"] for g in d["data"]["groups"]))')
    [ "$groups" = "$rule_groups" ] || fail "Prometheus loaded the rule groups '$groups', not '$rule_groups'"
    [ "$(json 'sum(r["health"] == "err" for g in d["data"]["groups"] for r in g["rules"])')" = 0 ] \
        || fail "a rule fails: $(json '[r["lastError"] for g in d["data"]["groups"] for r in g["rules"] if r["health"] == "err"]')"
    "${compose[@]}" --profile monitoring rm -sf prometheus >/dev/null 2>&1 || fail "--profile monitoring rm -sf prometheus"
    ok "the monitoring profile: Prometheus scrapes auth-gateway and locations-service (with the internal token), rule groups $rule_groups loaded"

    # HTTPS as a self-hoster gets it (the `https` profile): Caddy in front of the gateway, a certificate for
    # DOMAIN from the ACME server, plain HTTP redirected, HTTP/2, the scheme passed on to the gateway.
    "${compose[@]}" --profile https up -d caddy >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "--profile https up -d caddy"; }
    local answer=""
    for _ in $(seq 1 90); do
        answer=$(https_call GET /readyz)
        [ "$answer" = "2 200" ] && break
        sleep 1
    done
    [ "$answer" = "2 200" ] || fail "no HTTPS through Caddy after 90 s (last: $answer): $("${compose[@]}" --profile https logs --no-color --tail 20 caddy 2>&1)"
    ok "the https profile: Caddy got a certificate for $DOMAIN from the ACME server and answers over HTTP/2"
    answer=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code} %{redirect_url}' --resolve "$DOMAIN:$COMPOSE_TEST_HTTP_PORT:127.0.0.1" \
        "http://$DOMAIN:$COMPOSE_TEST_HTTP_PORT/v1/StudentLocation" 2>/dev/null || true)
    [ "$answer" = "308 https://$DOMAIN/v1/StudentLocation" ] || fail "plain HTTP to Caddy answered '$answer', not a redirect to HTTPS"
    answer=$(https_call POST /v1/session '{"udacity":{"username":"ada@example.com","password":"correct horse battery"}}')
    [ "$answer" = "2 200" ] || fail "login over HTTPS: $answer: $(head -c 300 "$work/body")"
    grep -qi '^set-cookie: onthemap_session=.*; Secure' "$work/headers" || fail "the session cookie over HTTPS is not Secure: $(grep -i set-cookie "$work/headers")"
    grep -qi '^strict-transport-security: max-age=' "$work/headers" || fail "no Strict-Transport-Security over HTTPS"
    local https_session
    https_session=$(json 'd["session"]["id"]')
    answer=$(https_call POST /v1/StudentLocation '{"mapString":"Lyon","mediaURL":"https://example.com/lyon","latitude":45.76,"longitude":4.84}' \
        -H "Authorization: Bearer $https_session")
    [ "$answer" = "2 200" ] || fail "post over HTTPS: $answer: $(head -c 300 "$work/body")"
    pin=$(json 'd["objectId"]')
    has_pin "$pin" || fail "the pin posted over HTTPS is not listed"
    kept+=("$pin")
    "${compose[@]}" --profile https rm -sf caddy >/dev/null 2>&1 || fail "--profile https rm -sf caddy"
    ok "over HTTPS through Caddy: plain HTTP redirected (308), login with a Secure cookie and HSTS, a pin posted"

    output=$(task locations-service locations-service replay --verify) || fail "replay --verify: $output"
    grep -q "matches the live one" <<<"$output" || fail "replay --verify said: $output"
    ok "replay --verify through compose: the read model matches the log"

    # A crash, as the kernel's OOM killer would make one: `docker kill` counts as a deliberate stop, which
    # a restart policy respects, so the service's process is killed from outside the engine instead.
    # Pins are posted all along; every one acknowledged must survive. A post whose answer the crash cut off
    # may or may not have been stored: the list holds the acknowledged pins and, beside them, only such posts.
    id=$(container locations-service)
    pid=$(docker inspect -f '{{.State.Pid}}' "$id")
    (
        for i in $(seq 1 60); do
            echo "during-crash-$i $(post_pin "$gateway" "$session" "during-crash-$i")" >>"$work/posted"
            sleep 0.1
        done
    ) &
    local poster=$!
    sleep 1
    kill -KILL "$pid"
    for _ in $(seq 1 60); do
        restarts=$(docker inspect -f '{{.RestartCount}}' "$id")
        [ "$restarts" -ge 1 ] && break
        sleep 0.5
    done
    [ "$restarts" -ge 1 ] || fail "locations-service was not restarted after its process was killed"
    wait_healthy locations-service
    wait "$poster"
    # kept: every pin the list must hold from here on.
    local answered listed name unanswered=()
    answered=$(awk 'NF == 2 { n++ } END { print n + 0 }' "$work/posted")
    [ "$answered" -gt 1 ] || fail "no pin was acknowledged around the crash"
    mapfile -t -O ${#kept[@]} kept < <(awk 'NF == 2 { print $2 }' "$work/posted")
    for pin in "${kept[@]}"; do has_pin "$pin" || fail "acknowledged pin $pin is lost"; done
    expect "the list" 200 "$(call GET "$gateway/v1/StudentLocation?limit=1000")"
    listed=$(json '"\n".join(p["objectId"] + " " + p["mapString"] for p in d["results"])')
    while read -r pin name; do
        [[ " ${kept[*]} " == *" $pin "* ]] && continue
        awk -v name="$name" 'NF == 1 && $1 == name { found = 1 } END { exit !found }' "$work/posted" \
            || fail "the list holds $name ($pin), neither acknowledged nor cut off by the crash"
        unanswered+=("$pin")
    done <<<"$listed"
    kept+=("${unanswered[@]}")
    rm -f "$work/posted"
    ok "locations-service killed: restarted by its policy, all $answered pins acknowledged around the crash there$([ ${#unanswered[@]} = 0 ] || echo " (and ${#unanswered[@]} stored whose answer the crash cut off)")"

    output=$(task locations-service locations-service migrate) || fail "migrate: $output"
    grep -q "schema locations is up to date" <<<"$output" || fail "locations-service migrate said: $output"
    output=$(task auth-gateway auth-gateway migrate) || fail "migrate: $output"
    grep -q "schema auth is up to date" <<<"$output" || fail "auth-gateway migrate said: $output"
    output=$(task locations-service locations-service replay) || fail "replay: $output"
    grep -q "swapped the rebuilt read model in" <<<"$output" || fail "replay said: $output"
    [ "$(pin_count)" = ${#kept[@]} ] || fail "the list changed across replay"
    ok "migrate (both services) and replay through compose"

    "${compose[@]}" --profile replica up -d auth-gateway-replica >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "the replica did not start"; }
    wait_healthy auth-gateway-replica
    local first_session=$session
    log_in "$replica" "ada@example.com"
    pin=$(post_pin "$replica" "$session" "Replica")
    [ -n "$pin" ] && has_pin "$pin" || fail "a pin posted through the replica is not listed by the first gateway"
    kept+=("$pin")
    expect "logout on the replica" 200 "$(call DELETE "$replica/v1/session" "" -H "Authorization: Bearer $session")"
    [ "$(call POST "$gateway/v1/StudentLocation" '{"mapString":"x","mediaURL":"https://example.com","latitude":1,"longitude":1}' \
        -H "Authorization: Bearer $session")" = 401 ] || fail "a session ended on the replica still writes on the first gateway"
    session=$first_session
    "${compose[@]}" --profile replica logs --no-color auth-gateway-replica 2>&1 | grep -q "session opened" \
        || fail "the replica's logs do not show the login"
    "${compose[@]}" --profile replica stop auth-gateway-replica >/dev/null 2>&1
    [ "$(docker inspect -f '{{.State.ExitCode}}' "$("${compose[@]}" ps -aq auth-gateway-replica)")" = 0 ] \
        || fail "the replica did not exit 0 on SIGTERM"
    ok "a second gateway replica: shares pins and sessions, has logs, drains and exits 0 on SIGTERM"

    # Backups and a restore, once (with compose v2): the one-off containers of scripts/compose-restore.sh
    # are the ones docker-compose 1.29 cannot link on the host's network.
    if [ "${compose[*]}" = "docker compose" ]; then backups_and_restore; fi

    "${compose[@]}" --profile replica --profile https --profile monitoring --profile backups down >/dev/null 2>&1 || fail "down"
    [ -z "$(docker ps -aq)" ] || fail "containers are left after down"
    up
    [ "$(pin_count)" = ${#kept[@]} ] || fail "after down and up the list holds $(pin_count) pins, wanted ${#kept[@]}"
    log_in "$gateway" "ada@example.com"
    ok "down, then up: all ${#kept[@]} pins and the account still there"

    "${compose[@]}" --profile replica --profile https --profile monitoring --profile backups down -v >/dev/null 2>&1 || fail "down -v"
    [ -z "$(docker volume ls -q)" ] || fail "volumes are left after down -v: $(docker volume ls -q)"
    up
    [ "$(pin_count)" = 0 ] || fail "after down -v and up the list still holds pins"
    [ "$(call POST "$gateway/v1/session" '{"udacity":{"username":"ada@example.com","password":"correct horse battery"}}')" = 403 ] \
        || fail "the account survived down -v"
    "${compose[@]}" --profile replica --profile https --profile monitoring --profile backups down -v >/dev/null 2>&1 || fail "down -v"
    ok "down -v: pins, accounts and secrets gone (a new up starts empty)"
    echo "   in $((SECONDS - started_here)) s"
}

start_engine
start_acme_server
echo "building the base images from Debian's packages..."
scripts/compose/base-images.sh "$COMPOSE_TEST_RUNTIME_IMAGE" "$COMPOSE_TEST_POSTGRES_IMAGE" "$COMPOSE_TEST_SWIFT_IMAGE" \
    >"$work/base-images.log" 2>&1 || { tail -n 40 "$work/base-images.log"; fail "the base images"; }
echo "base images built ($(elapsed))"
echo "building the images through compose (the Swift release build is most of it)..."
docker-compose build >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; fail "docker-compose build"; }
docker-compose --profile https build caddy >>"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; fail "docker-compose build caddy"; }
docker-compose --profile monitoring build prometheus >>"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; fail "docker-compose build prometheus"; }
echo "images built ($(elapsed))"

[ "$(docker run --rm --network none --entrypoint id onthemap:latest -u)" != 0 ] || fail "the image runs as root"
docker run --rm --network none onthemap:latest onthemap --version >/dev/null || fail "onthemap does not run in the image"
docker run --rm --network none --entrypoint sh onthemap:latest -c \
    'test -f /usr/share/javascript/leaflet/leaflet.js && test -d /usr/local/bin/OnTheMap_WebClient.resources && ! command -v swiftc && ! command -v cc' \
    >/dev/null || fail "the image lacks Leaflet or the web client, or holds a compiler"
ok "the image runs as user $(docker run --rm --network none --entrypoint id onthemap:latest -un) ($(docker run --rm --network none --entrypoint id onthemap:latest -u)), holds both services, onthemap, the web client and Leaflet, and no compiler"
size=$(docker image inspect -f '{{.Size}}' onthemap:latest)
echo "   image size: $((size / 1000000)) MB ($size bytes) on the Debian 12 base built here"

# docker-compose 1.29 (through docker-py) refuses to create a container on the host's network that also
# publishes a port, where the engine and compose v2 just ignore the port. So 1.29 runs the same two files
# as resolved by its own `config`, less the gateway's `ports`: the one thing host networking drops anyway.
docker-compose config | python3 -c '
import sys, yaml
config = yaml.safe_load(sys.stdin)
for service in config["services"].values():
    if service.get("network_mode") == "host":
        service.pop("ports", None)
yaml.safe_dump(config, sys.stdout, sort_keys=False)' >"$work/docker-compose.resolved.yml"
# And it links a one-off container to its service's running ones, which the engine refuses on the host's
# network (on the project's network, as users run it, `run locations-service` works): its operator tasks
# run in a one-off container of the replica, a service not running then, of the same image and settings.
echo "== docker-compose $(docker-compose version --short)"
task_service=auth-gateway-replica task_options=(--profile replica)
prove docker-compose --file "$work/docker-compose.resolved.yml"
task_service="" task_options=()
if find_compose_v2; then
    echo "== docker compose $(docker compose version --short)"
    prove docker compose
else
    echo "== docker compose v2: neither installed nor to be had from Debian's packages here; proved with docker-compose 1.29 only"
fi
echo "compose-test: $passed passed, 0 failed in $(elapsed)"
