import AsyncHTTPClient
import Foundation
import NIOCore
import OnTheMapShared
import ServiceKit

/// Geocodes through a Nominatim-compatible server (`GEOCODER_URL`), for what the gazetteer cannot
/// place: street addresses, landmarks.
///
/// Every call answers within `timeout`, whatever the upstream does; failures arrive as `GeocoderError`.
public struct NominatimGeocoder: Geocoder {
    /// Nominatim's usage policy asks every client to name itself.
    public static let defaultUserAgent = "OnTheMap/1.0 (student map pins; geocoding)"
    /// Answers are a handful of small objects; anything far larger is not a search answer.
    static let maximumBodyBytes = 1 << 20

    private let searchURL: String
    private let httpClient: HTTPClient
    private let timeout: Duration
    private let userAgent: String

    public init(
        baseURL: String, httpClient: HTTPClient, timeout: Duration = .seconds(5),
        userAgent: String = NominatimGeocoder.defaultUserAgent
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.searchURL = base + "/search"
        self.httpClient = httpClient
        self.timeout = timeout
        self.userAgent = userAgent
    }

    public func geocode(_ query: String, limit: Int) async throws -> [GeocodeCandidate] {
        guard limit > 0 else { return [] }
        // Nominatim answers at most 40 results whatever is asked.
        var request = HTTPClientRequest(url: url(for: query, limit: min(limit, 40)))
        request.headers.add(name: "User-Agent", value: userAgent)
        request.headers.add(name: "Accept", value: "application/json")
        let started = ContinuousClock.now
        let (status, body) = try await withUpstreamErrors {
            let response = try await httpClient.execute(request, timeout: TimeAmount(timeout))
            // The timeout above covers only the response head; the body gets what time is left.
            let body = try await withDeadline(timeout - (ContinuousClock.now - started)) {
                try await response.body.collect(upTo: Self.maximumBodyBytes)
            }
            return (Int(response.status.code), body)
        }
        guard (200..<300).contains(status) else { throw GeocoderError.upstreamFailed(status: status) }
        guard let places = try? JSONDecoder().decode([NominatimPlace].self, from: Data(body.readableBytesView)) else {
            throw GeocoderError.upstreamFailed(status: status)
        }
        return Array(places.compactMap(\.candidate).prefix(limit))
    }

    func url(for query: String, limit: Int) -> String {
        "\(searchURL)?q=\(PercentEncoding.component(query))&format=jsonv2&addressdetails=1&limit=\(limit)"
    }

}

/// Translates what the HTTP client throws into the upstream errors the gateway knows how to answer.
private func withUpstreamErrors<T>(_ operation: () async throws -> T) async throws -> T {
    do {
        return try await operation()
    } catch let error as GeocoderError {
        throw error
    } catch is DeadlineExceeded {
        throw GeocoderError.upstreamTimedOut
    } catch let error as HTTPClientError {
        if Task.isCancelled { throw CancellationError() }
        switch error {
        case .deadlineExceeded, .readTimeout, .writeTimeout, .cancelled, .getConnectionFromPoolTimeout:
            throw GeocoderError.upstreamTimedOut
        default:
            throw GeocoderError.upstreamUnavailable
        }
    } catch is CancellationError {
        throw CancellationError()
    } catch is NIOTooManyBytesError {
        throw GeocoderError.upstreamFailed(status: 200)
    } catch {
        // Socket-level failures: connection refused, reset, unknown host.
        throw GeocoderError.upstreamUnavailable
    }
}
