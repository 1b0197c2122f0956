import AsyncHTTPClient
import Foundation
import Geocoding
import OnTheMapShared
import Testing

/// The upstream geocoder maps Nominatim's answers to candidates and turns every upstream failure
/// into a `GeocoderError` within its time limit.
@Suite struct NominatimGeocoderTests {
    func geocoder(_ baseURL: String, timeout: Duration = .seconds(5)) -> NominatimGeocoder {
        NominatimGeocoder(baseURL: baseURL, httpClient: .shared, timeout: timeout)
    }

    @Test func answersAreMappedToCandidates() async throws {
        let results = try await FakeNominatim.withServer { base in
            try await geocoder(base + "/ok").geocode("Mountain View, CA", limit: 5)
        }
        #expect(results.count == 2)
        let city = try #require(results.first)
        #expect(
            city
                == GeocodeCandidate(
                    name: "Mountain View", region: "California", country: "United States", countryCode: "US",
                    latitude: 37.3893889, longitude: -122.0832101,
                    displayName: "Mountain View, Santa Clara County, California, United States"))
        // An unnamed result takes its locality's name.
        #expect(results.last?.name == "Mountain View")
        #expect(results.last?.latitude == 37.4220)
    }

    @Test func theLimitIsHonoured() async throws {
        let results = try await FakeNominatim.withServer { base in
            try await geocoder(base + "/ok/").geocode("Mountain View", limit: 1)
        }
        #expect(results.count == 1)
    }

    @Test func theQueryIsPercentEncodedAndTheClientNamesItself() async throws {
        let recorder = FakeNominatim.Recorder()
        let results = try await FakeNominatim.withServer(recorder: recorder) { base in
            try await geocoder(base + "/echo").geocode("São Paulo & Co+1", limit: 3)
        }
        #expect(results.first?.name == "São Paulo & Co+1")
        #expect(results.first?.countryCode == "XX")
        #expect(await recorder.rawQuery == "q=S%C3%A3o%20Paulo%20%26%20Co%2B1&format=jsonv2&addressdetails=1&limit=3")
        #expect(await recorder.userAgent == NominatimGeocoder.defaultUserAgent)
    }

    @Test func aServerErrorIsUpstreamFailed() async throws {
        await #expect(throws: GeocoderError.upstreamFailed(status: 500)) {
            try await FakeNominatim.withServer { base in
                try await geocoder(base + "/broken").geocode("Berlin", limit: 1)
            }
        }
    }

    @Test func aBodyThatIsNotNominatimJSONIsUpstreamFailed() async throws {
        await #expect(throws: GeocoderError.upstreamFailed(status: 200)) {
            try await FakeNominatim.withServer { base in
                try await geocoder(base + "/garbage").geocode("Berlin", limit: 1)
            }
        }
    }

    @Test func aMissingEndpointIsUpstreamFailed() async throws {
        await #expect(throws: GeocoderError.upstreamFailed(status: 404)) {
            try await FakeNominatim.withServer { base in
                try await geocoder(base + "/nowhere").geocode("Berlin", limit: 1)
            }
        }
    }

    /// `/silent` never sends its head; `/trickle` sends it and then stalls in the body. Either would keep
    /// going until the server stops; the answer comes at the limit (with room for a busy machine).
    @Test(arguments: ["/silent", "/trickle"])
    func aStalledUpstreamTimesOutWithinTheLimit(path: String) async throws {
        let waited = try await FakeNominatim.withServer { base in
            let clock = ContinuousClock()
            let start = clock.now
            await #expect(throws: GeocoderError.upstreamTimedOut) {
                try await geocoder(base + path, timeout: .milliseconds(300)).geocode("Berlin", limit: 1)
            }
            return clock.now - start
        }
        #expect(waited < .seconds(3))
    }

    @Test func aRefusedConnectionIsUpstreamUnavailable() async throws {
        // Nothing listens on the discard port of loopback. (A port freed by a test server could be handed
        // to another test's server meanwhile.)
        await #expect(throws: GeocoderError.upstreamUnavailable) {
            try await geocoder("http://127.0.0.1:9", timeout: .seconds(1)).geocode("Berlin", limit: 1)
        }
    }

    @Test func aZeroLimitAsksNothing() async throws {
        #expect(try await geocoder("http://127.0.0.1:9").geocode("Berlin", limit: 0).isEmpty)
    }
}
