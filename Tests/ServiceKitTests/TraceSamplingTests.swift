import Testing

@testable import ServiceKit

/// Which requests are traced whole: the settings, and the share `keepsNext` keeps.
@Suite struct TraceSamplingTests {
    @Test func theSettingsAreReadOrRefusedWithWhatIsWrong() throws {
        #expect(try TraceSampling(environment: [:]) == TraceSampling(ratio: 0.1, slow: .milliseconds(500)))
        #expect(try TraceSampling(environment: ["TRACE_SAMPLE_RATIO": "0.25", "TRACE_SLOW_MS": "0"]) == TraceSampling(ratio: 0.25, slow: .zero))
        for (name, value) in [
            ("TRACE_SAMPLE_RATIO", "1.5"), ("TRACE_SAMPLE_RATIO", "-0.1"), ("TRACE_SAMPLE_RATIO", "all"), ("TRACE_SLOW_MS", "-1"),
            ("TRACE_SLOW_MS", "0.5"),
        ] {
            #expect(throws: ConfigurationError.self, "\(name)=\(value)") { try TraceSampling(environment: [name: value]) }
        }
    }

    @Test(arguments: [0.0, 0.01, 0.1, 0.5, 1.0])
    func theShareKeptIsTheRatio(ratio: Double) {
        let sampling = TraceSampling(ratio: ratio)
        let draws = 200_000
        let kept = (0..<draws).reduce(0) { count, _ in count + (sampling.keepsNext() ? 1 : 0) }
        let share = Double(kept) / Double(draws)
        // Within five standard deviations of a binomial draw of this size.
        let spread = 5 * (ratio * (1 - ratio) / Double(draws)).squareRoot()
        #expect(abs(share - ratio) <= spread, "kept \(share) of requests at a ratio of \(ratio)")
    }
}
