#!/usr/bin/env bash
# Runs every test but the longest: installs what is missing, starts a private PostgreSQL, builds, tests
# (contract, router, PostgreSQL, end-to-end, the web client in a browser, HTTPS, the Prometheus rules).
# scripts/test-long.sh runs the longer proofs (schemathesis and libFuzzer, faults under load, the compose
# bring-up); .ci/run runs both.
# Usage: scripts/test.sh [extra `swift test` arguments, e.g. --filter ReplayTests]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain

# The code's layout first, as .swift-format describes it (swift format ships with the toolchain); fix with
# `swift format format -i -r -p` and the same paths.
swift_sources=(Services Shared Clients Tests Fuzz bench/micro bench/floor Package.swift)
swift format lint --strict -r -p "${swift_sources[@]}"
# The Python harness's own checks (Tests/harness: what lost, doubled or reordered pins look like), a second or two.
python3 -m unittest discover -s Tests/harness -t Tests

# The end-to-end tests check the published API document, and the GeoJSON feed, with the tools their users
# would use: schemathesis and openapi-spec-validator; GDAL's ogrinfo and the geojson package's validator.
# The traces test's OTLP receiver decodes what the services export with OpenTelemetry's own definitions.
python3 -c "import schemathesis, openapi_spec_validator, geojson, opentelemetry.proto" 2>/dev/null \
    || python3 -m pip install -q --disable-pip-version-check schemathesis openapi-spec-validator geojson opentelemetry-proto
# The basemap tests write their PMTiles archives with the format's own Python writer.
python3 -c "import pmtiles" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check pmtiles
# The sign-in tests run a real OpenID Connect provider on loopback: django-oidc-provider, served by waitress.
python3 -c "import oidc_provider, waitress" 2>/dev/null \
    || python3 -m pip install -q --disable-pip-version-check django-oidc-provider==0.9.0 Django==5.2.19 waitress==3.0.2
if ! command -v ogrinfo >/dev/null; then
    echo "installing gdal-bin..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq gdal-bin >/dev/null
fi

data_dir=$(mktemp -d /tmp/onthemap-test-pg.XXXXXX)
port=$(free_port)
# What the tests leave in the temporary folder (the CLI's config homes, the browser's profiles, the sign-in
# provider's files, hundreds a run) goes into one folder of this run's, removed with it. Open to all as /tmp
# is: the clusters some tests start run as postgres.
scratch=$(mktemp -d /tmp/onthemap-test-tmp.XXXXXX)
chmod 1777 "$scratch"
export TMPDIR=$scratch
cleanup() {
    stop_private_postgres "$data_dir"
    rm -rf "$data_dir" "$data_dir.initdb.log" "$scratch"
}
trap cleanup EXIT

# fsync off: the test cluster is thrown away, and the tests measure behaviour, not durability.
# Tests run side by side, each with its own services and their pools (up to 40 connections each): 300
# connections ran out once the attack suites joined, so the test cluster takes 1,000.
start_private_postgres "$data_dir" "$port" fsync=off max_connections=1000
export TEST_DATABASE_URL="postgres://onthemap@127.0.0.1:$port/postgres"
echo "test PostgreSQL on 127.0.0.1:$port"

# test_phase SECONDS ARGUMENTS...: `swift test --skip-build ARGUMENTS`, its output passed on a line at a time
# (so the log always shows which tests have started), stopped if it runs past SECONDS: a test that waits
# forever must not hold the run until CI gives up on it. The tests then started and not ended are named.
test_phase() {
    local limit=$1 output status
    shift
    output=$(mktemp /tmp/onthemap-test-phase.XXXXXX)
    set +e
    timeout --signal=KILL "$limit" stdbuf -oL -eL swift test --skip-build "$@" 2>&1 | tee "$output"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" = 137 ]; then
        echo "scripts/test.sh: the tests ran past ${limit} s and were stopped; started and never ended:"
        python3 - "$output" <<'UNENDED'
import re, sys
started, ended = [], set()
for line in open(sys.argv[1], errors="replace"):
    if found := re.search(r"◇ Test (\S+) started", line):
        started.append(found.group(1))
    elif found := re.search(r"[✔✘] Test (\S+)", line):
        ended.add(found.group(1))
for name in dict.fromkeys(started):
    if name not in ended:
        print(f"  {name}")
UNENDED
    fi
    rm -f "$output"
    return "$status"
}

swift build --build-tests
if [ $# -gt 0 ]; then
    swift test --skip-build "$@"
else
    # Everything in parallel, then, one at a time on a machine no other test is loading, the three suites
    # whose tests hold a wait to a bound against the wall clock: locations-service's whole processes (a
    # change crossing replicas within 200 ms, a drain on SIGTERM, an outage answered within seconds, an
    # operator's hide leaving the list within 1 s), its slow sockets cut off at their timeouts, and the
    # gateway's (TimedGatewayTests: a student served within 1 s while slow clients are cut off, a stopped
    # service's 503 within 2 s, every refusal within 2.5 s while its database is away, a hide reaching every
    # open stream within 1 s, a disabled account's session refused on every replica within 2 s), and one
    # test of OpenID Connect sign-in (a silent identity provider answered with a 504 within 5 s: 2 s alone
    # here, 8.3 s once among the parallel tests, where the whole test took 59 s against 4 s alone).
    timed='ProcessTests|SlowClientTests|TimedGatewayTests|anUnreachableIssuerIs502AndASilentOneIs504'
    # At most 4 tests at once: with no bound all 270 start together, and on a slower 2-core machine their
    # 2 s query deadlines and time bounds ran out under the load of them all (4 failures; the phase took
    # 261 s). With 8 the same machine passed in 232 s: schemathesis alone takes 200 s of it. With 8 and
    # 636 tests, two clean-clone runs in a row here each failed one test on the load (a 2 s query deadline
    # run out behind a class map's delete, 104 s into its test; a 5 s bound on a sign-in's 504); with 6,
    # one run of three (a sign-up's 503 on a 2 s query deadline). Most of that was tests that read raw
    # sockets on Swift's shared thread pool, stopping every test's tasks for up to 10 s; they read on
    # threads of their own now (RawConnection's asynchronous reads), and 4 at once is no slower than 6.
    # schemathesis, the fuzzing of the published document (two Python processes for over two minutes), is
    # one of the longer proofs: scripts/test-long.sh runs it.
    fuzzing='schemathesisFindsNoServerErrorAndNoAnswerThatBreaksTheDocument'
    # Each phase has a bound well past its usual time here (about 150 s and 50 s).
    SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=4 test_phase 900 --skip "$timed|$fuzzing"
    test_phase 600 --no-parallel --filter "$timed"
    # The web client in headless Chromium against the real services (its own PostgreSQL and stack).
    scripts/browser-test.sh
    # HTTPS at the gateway with a test CA: curl, Python's ssl, a SIGHUP reload, eight tabs over HTTP/2.
    scripts/https-test.sh
    # The Prometheus rules operators load: well formed, and each alert firing and resolving on synthetic
    # series (promtool, from Debian's prometheus).
    if ! command -v promtool >/dev/null; then
        echo "installing prometheus (promtool)..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    fi
    promtool check rules docs/prometheus/onthemap-rules.yml
    promtool test rules docs/prometheus/onthemap-rules.test.yml
    # The compose `monitoring` profile's scrape configuration. Syntax only: the token file it names exists
    # in the container alone, and the rules it loads are checked above.
    promtool check config --syntax-only docs/prometheus/prometheus.yml
fi
