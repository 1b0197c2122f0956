-- Prints one machine-readable line when a wrk run ends, so bench/run.py need not parse wrk's human output.
-- Latencies are in microseconds, as wrk measures them.
function done(summary, latency, requests)
   local errors = summary.errors
   local seconds = summary.duration / 1e6
   io.write(string.format(
      "wrk-summary requests=%d seconds=%.3f rps=%.1f p50_us=%d p99_us=%d max_us=%d status_errors=%d socket_errors=%d bytes=%d\n",
      summary.requests, seconds, summary.requests / seconds,
      latency:percentile(50), latency:percentile(99), latency.max,
      errors.status, errors.connect + errors.read + errors.write + errors.timeout, summary.bytes))
end
