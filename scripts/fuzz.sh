#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that read what clients send (Fuzz/FuzzTargets.swift): pin bodies,
# the list's `where=` filter, timestamps, `X-Actor`, `Cookie` and `Authorization: Bearer`. Each runs under
# libFuzzer (shipped with the Swift toolchain) from its seed corpus in Fuzz/corpus/<parser>/; a crash or a
# broken property fails the run and leaves the input in .build-fuzz/crashes/.
#
# Usage: scripts/fuzz.sh [RUNS] [PARSER...]   (default 20000 runs each, every parser)
#   FUZZ_SUMMARY=FILE  also writes one line per parser: name runs exec/s edges features corpus seconds
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_toolchain

runs=${1:-20000}
shift || true
parsers=("$@")
[ ${#parsers[@]} -gt 0 ] || parsers=(location-input where timestamp actor cookie bearer)

toolchain=$(dirname "$(dirname "$(command -v swift)")")
ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 \
    || { echo "fuzz: this Swift toolchain has no libFuzzer (lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a); use a swift.org toolchain" >&2; exit 1; }

scratch=.build-fuzz
mkdir -p "$scratch/crashes"
build=(swift build --sanitize=fuzzer -Xswiftc -DFUZZING --product ParserFuzzer --scratch-path "$scratch")
started=$SECONDS
"${build[@]}" >"$scratch/build.log" 2>&1 || { tail -n 30 "$scratch/build.log"; echo "fuzz: build failed" >&2; exit 1; }
fuzzer=$("${build[@]}" --show-bin-path)/ParserFuzzer
echo "fuzz: built ParserFuzzer with libFuzzer in $((SECONDS - started)) s; $runs runs per parser"

# Longest input per parser: past each limit the services enforce, so the limit itself is exercised.
max_len() {
    case $1 in
        where) echo 8300 ;;  # the service refuses a `where` over 8192 bytes
        *) echo 4200 ;;      # headers and bodies: X-Actor stops at 4096 bytes
    esac
}

printf '%-15s %10s %10s %8s %9s %11s\n' parser runs exec/s edges features new-inputs
for parser in "${parsers[@]}"; do
    [ -d "Fuzz/corpus/$parser" ] || { echo "fuzz: no parser $parser (Fuzz/corpus/$parser is missing)" >&2; exit 1; }
    # New inputs go to a scratch folder first; the committed seeds stay as they are.
    work=$(mktemp -d "/tmp/onthemap-fuzz-$parser.XXXXXX")
    log=$scratch/$parser.log
    begin=$(date +%s%N)
    status=0
    FUZZ_PARSER=$parser SWIFT_BACKTRACE=enable=no "$fuzzer" -runs="$runs" -max_len="$(max_len "$parser")" -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$scratch/crashes/$parser-" "$work" "Fuzz/corpus/$parser" >"$log" 2>&1 || status=$?
    end=$(date +%s%N)
    corpus=$(find "$work" -type f | wc -l)
    rm -rf "$work"
    if [ $status -ne 0 ]; then
        grep -E 'property broken|Fatal error|ERROR: libFuzzer|SUMMARY' "$log" | head -n 5 >&2 || tail -n 20 "$log" >&2
        artifact=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tail -n 1)
        echo "fuzz: $parser failed (exit $status); log $log${artifact:+; input $artifact}" >&2
        [ -z "$artifact" ] || echo "fuzz: replay it with FUZZ_PARSER=$parser $fuzzer $artifact" >&2
        exit 1
    fi
    done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    read -r edges features < <(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1 | awk '{print $2, $4}')
    seconds=$(python3 -c "print(f'{($end - $begin) / 1e9:.2f}')")
    rate=$(python3 -c "print(round($done_runs / max(($end - $begin) / 1e9, 1e-9)))")
    printf '%-15s %10s %10s %8s %9s %11s\n' "$parser" "$done_runs" "$rate" "$edges" "$features" "$corpus"
    [ -z "${FUZZ_SUMMARY:-}" ] || echo "$parser $done_runs $rate $edges $features $corpus $seconds" >>"$FUZZ_SUMMARY"
done
echo "fuzz: no crash, no broken property ($((SECONDS - started)) s in all)"
