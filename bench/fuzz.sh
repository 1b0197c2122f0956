#!/usr/bin/env bash
# The long fuzzing pass: every parser of client input for a million runs (scripts/fuzz.sh), its figures
# written to the "Fuzzing" section of BENCHMARKS.md (replaced if there, appended if not). bench/run.py
# calls it after rewriting the rest of the file.
#
# Usage: bench/fuzz.sh [RUNS]   (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
mkdir -p bench/results
summary=bench/results/fuzz-summary.txt
rm -f "$summary"

FUZZ_SUMMARY=$summary scripts/fuzz.sh "$runs" | tee bench/results/fuzz.txt

commit=unknown
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Shared Services Fuzz Package.swift || echo ' with local changes')"
fi
swift_version=$(PATH="/opt/swift/usr/bin:$PATH" swift --version 2>/dev/null | sed -n 's/.*Swift version \([^ ]*\).*/\1/p' | head -n 1)

python3 - "$summary" BENCHMARKS.md "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$swift_version" "$(nproc)" <<'EOF'
import sys

sys.path.insert(0, "bench")
from report import write_sections

summary, target, date, commit, swift, cpus = sys.argv[1:]
reads = {
    "location-input": "`POST`/`PUT` pin bodies (`LocationInput.decode`)",
    "where": "the list's `where=` JSON filter (`WhereFilter.parse`)",
    "timestamp": "ISO-8601 timestamps (`Timestamp(iso8601:)`)",
    "actor": "the `X-Actor` header (`Actor(headerValue:)`), as sent and as base64url of fuzzed JSON",
    "cookie": "`Cookie` headers (Hummingbird's `Cookies(from:)`) and the session cookie's value",
    "bearer": "`Authorization: Bearer` (`SessionCredentials.bearer`)",
}
rows = [line.split() for line in open(summary, encoding="utf-8") if line.strip()]
section = [
    "## Fuzzing",
    "",
    "`bench/fuzz.sh`: each parser of client input under libFuzzer, coverage-guided from its seed corpus in",
    "`Fuzz/corpus/`, checking on every input the properties in `Fuzz/FuzzTargets.swift` (what parses writes",
    "back and reads back the same; no blanks around a bearer token; no `;` in a cookie value). One parser at",
    f"a time on one core. Run on {date}, commit {commit}, Swift {swift}, {cpus} cores.",
    "",
    "| Parser | Reads | Runs | exec/s | Coverage (edges / features) | New inputs | Crashes |",
    "| --- | --- | --- | --- | --- | --- | --- |",
]
for name, runs, rate, edges, features, found, seconds in rows:
    section.append(f"| {name} | {reads.get(name, '')} | {int(runs):,} | {int(rate):,} | {edges} / {features} | {found} | 0 |")
section.append("")

write_sections(section, target)
EOF
echo "bench/fuzz.sh: wrote the Fuzzing section of BENCHMARKS.md"
