"""Replay at scale: `locations-service replay` over logs of REPLAY_SIZES pins (4 events each: 1,000,000, 4,000,000
and 10,000,000 events by default), each against the same rebuild in one SQL statement (bench/rebuild.sql and
its indexes), ROUNDS rounds alternated, replay's memory sampled as it runs. Goals: on the largest log, the
median of the rounds' ratios at most 1.0x the SQL rebuild; at every size, replay's peak memory at most
150 MB, and flat (the largest size's peak over the smallest's). Each log's rebuilt read model must equal the
SQL rebuild row for row, and `replay --verify` must find it clean. Writes the "Replay at scale" section.

The logs are written and replayed as the main run's replay log is (limits.ReplayLog)."""
import statistics

from bench.limits import ROUNDS, Benchmarks, ReplayLog
from bench.processes import RESULTS_DIR, log, setting
from bench.report import Results, meets, stamp, write_sections

SIZES = [int(n) for n in setting("REPLAY_SIZES", "250000 1000000 2500000", str).split()]
RATIO_GOAL = 1.0        # replay over the SQL rebuild, on the largest log
MEMORY_GOAL_MB = 150    # replay's peak, at every size


def figures(replayed):
    """Each round's (replay s, SQL s, ratio, replay's peak MB) of REPLAYED, from what was recorded."""
    values = replayed.benchmarks.results.values

    def num(name):
        return float(values[f"{replayed.key}_{name}"])

    return [(num(f"service_{k}_seconds"), num(f"sql_{k}_seconds"),
             num(f"service_{k}_seconds") / num(f"sql_{k}_seconds"), num(f"service_{k}_rss_peak_kb") / 1024)
            for k in range(1, ROUNDS + 1)]


def section(logs):
    by_size = {replayed.pins: figures(replayed) for replayed in logs}
    values = logs[0].benchmarks.results.values
    largest, smallest = logs[-1], logs[0]
    ratio = statistics.median(r[2] for r in by_size[largest.pins])
    peaks = {pins: statistics.median(r[3] for r in rounds) for pins, rounds in by_size.items()}
    highest = max(r[3] for rounds in by_size.values() for r in rounds)
    growth = peaks[largest.pins] / peaks[smallest.pins]
    lines = [
        "## Replay at scale",
        "",
        f"`bench/run.py replay`: `locations-service replay` over logs of "
        f"{', '.join(f'{replayed.pins * 4:,}' for replayed in logs)} events (4 per pin, from bench/generate-events.sql), "
        f"each against one SQL statement rebuilding the same read model with its indexes (bench/rebuild.sql, "
        f"bench/rebuild-indexes.sql), {ROUNDS} rounds alternated; replay's wall clock includes its start-up, its "
        f"catch-up and the swap, and its peak memory (VmRSS) is sampled as it runs. The default durability (fsync "
        f"and synchronous commit on) while measured. Each log's read model equals the SQL rebuild row for row and "
        f"`replay --verify` finds it clean. Release build; "
        f"{stamp('Services/LocationsService', 'Shared', 'Package.swift', 'bench/replay.py')}.",
        "",
        "| events | pins now | replay (median) | SQL rebuild (median) | ratio (median of rounds) | peak memory (median; highest) | written in |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for replayed in logs:
        rounds = by_size[replayed.pins]
        lines.append(
            f"| {int(values[f'{replayed.key}_events']):,} | {int(values[f'{replayed.key}_live_pins']):,} | "
            f"{statistics.median(r[0] for r in rounds):.2f} s | {statistics.median(r[1] for r in rounds):.2f} s | "
            f"**{statistics.median(r[2] for r in rounds):.2f}×** | **{peaks[replayed.pins]:.1f} MB**; "
            f"{max(r[3] for r in rounds):.1f} MB | {float(values[f'{replayed.key}_generate_seconds']):.0f} s |")
    lines += [
        "",
        f"- Goal: replay of the largest log at most {RATIO_GOAL}× the SQL rebuild: **{ratio:.2f}×**, {meets(ratio <= RATIO_GOAL)}.",
        f"- Goal: peak memory at most {MEMORY_GOAL_MB} MB whatever the number of pins: the highest of every round is "
        f"**{highest:.1f} MB**, {meets(highest <= MEMORY_GOAL_MB)}; from {smallest.pins:,} to {largest.pins:,} pins written "
        f"its median goes from {peaks[smallest.pins]:.1f} to {peaks[largest.pins]:.1f} MB ({growth:.2f}×).",
        "",
        "Each round: replay s / SQL s = ratio, replay's peak MB.",
        "",
        "| events | " + " | ".join(f"round {k}" for k in range(1, ROUNDS + 1)) + " |",
        "| --- |" + " --- |" * ROUNDS,
    ]
    for replayed in logs:
        cells = [f"{r[0]:.2f} / {r[1]:.2f} = {r[2]:.2f}×, {r[3]:.1f} MB" for r in by_size[replayed.pins]]
        lines.append(f"| {replayed.pins * 4:,} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines, ratio, highest


def run(bench):
    binaries = bench.binaries("locations-service", log_name="replay-build")
    pg = bench.postgres()
    results = Results(RESULTS_DIR / "replay.env")
    benchmarks = Benchmarks(bench, results, pg, binaries)
    logs = [ReplayLog(benchmarks, f"bench_replay_{pins}", pins, key=f"replay_{pins}") for pins in sorted(SIZES)]
    for replayed in logs:
        replayed.write()
    # All written first, then measured smallest to largest, so the rounds of one size sit close together.
    for replayed in logs:
        replayed.rounds()
        replayed.verify()
    lines, ratio, highest = section(logs)
    write_sections(lines)
    log(f"replay at scale: {ratio:.2f}x the SQL rebuild on the largest log (goal {RATIO_GOAL}x), peak memory at most "
        f"{highest:.1f} MB (goal {MEMORY_GOAL_MB} MB); wrote the section of BENCHMARKS.md")
