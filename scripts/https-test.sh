#!/usr/bin/env bash
# HTTPS at the gateway: curl and Python's ssl against a gateway serving TLS with a test CA made here, and
# headless Chromium holding live streams in eight tabs over HTTP/2. Both services run on a private
# PostgreSQL (Tests/browser/stack.sh), beside a plain-HTTP gateway the answers are compared with.
# The CA, the certificates and their keys are made afresh by openssl in a temporary folder, deleted after.
# Usage: scripts/https-test.sh [test name, e.g. test_sighup_serves_a_new_certificate_to_new_connections]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
source Tests/browser/stack.sh
ensure_toolchain

ensure_browser_tools openssl=openssl curl=curl certutil=libnss3-tools
bin=$(build_services)

output="$PWD/test-output/https"
rm -rf "$output"
mkdir -p "$output"
tls=$(mktemp -d /tmp/onthemap-tls.XXXXXX)
tls_pid=
stop_all() {
    [ -n "$tls_pid" ] && kill -TERM "$tls_pid" 2>/dev/null && wait "$tls_pid" 2>/dev/null
    web_stack_stop "$output"
    rm -rf "$tls"
}
trap stop_all EXIT

# A test CA, and two server certificates it signs for localhost and 127.0.0.1 (the second for the reload).
openssl_quiet() { openssl "$@" 2>/dev/null; }
openssl_quiet req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=On The Map test CA" \
    -keyout "$tls/ca.key" -out "$tls/ca.pem"
for name in server next; do
    openssl_quiet req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost ($name)" \
        -keyout "$tls/$name.key" -out "$tls/$name.csr"
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tls/$name.ext"
    openssl_quiet x509 -req -in "$tls/$name.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
        -extfile "$tls/$name.ext" -out "$tls/$name.pem"
done
export STACK_TLS_DIR=$tls

web_stack_start "$bin" "$output"
tls_port=$(free_port)
LOCATIONS_URL=$STACK_LOCATIONS PORT=$tls_port TLS_CERT="$tls/server.pem" TLS_KEY="$tls/server.key" \
    TILE_URL="$STACK_TILES/{z}/{x}/{y}.png" "$bin/auth-gateway" serve --host 127.0.0.1 >"$output/gateway-tls.log" 2>&1 &
tls_pid=$!
export STACK_GATEWAY_TLS="https://localhost:$tls_port" STACK_GATEWAY_BIN="$bin/auth-gateway"
for _ in $(seq 1 150); do
    curl -sf --cacert "$tls/ca.pem" "$STACK_GATEWAY_TLS/readyz" >/dev/null && break
    sleep 0.2
done

web_stack_unittest Tests/https test_https.HTTPSTests "$output" "$@"
