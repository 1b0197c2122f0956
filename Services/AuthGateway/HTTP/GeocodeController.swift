import Foundation
import Geocoding
import Hummingbird
import Logging
import OnTheMapShared
import ServiceKit

/// `GET /v1/geocode?q=&limit=`: candidates for a place, best first. The built-in gazetteer answers city
/// names; a configured Nominatim-compatible upstream is asked for what looks like a street address (it has
/// digits) or for what the gazetteer does not know.
struct GeocodeController: Sendable {
    let gazetteer: Gazetteer
    let upstream: (any Geocoder)?
    let logger: Logger

    static let maximumQueryLength = 200
    static let defaultLimit = 5
    static let maximumLimit = 20

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.get(use: geocode)
    }

    @Sendable func geocode(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let parameters = request.uri.queryParameters
        let query = (parameters["q"].map(String.init) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !query.isEmpty, query.count <= Self.maximumQueryLength, !query.contains("\u{0}") else {
            throw GatewayError.geocodeQueryMissing
        }
        var limit = Self.defaultLimit
        if let text = parameters["limit"] {
            guard let value = Int(text), (1...Self.maximumLimit).contains(value) else { throw GatewayError.geocodeQueryMissing }
            limit = value
        }
        var results = gazetteer.search(query, limit: limit)
        if let upstream, results.isEmpty || query.contains(where: \.isNumber) {
            let start = ContinuousClock.now
            do {
                results = Array((try await upstream.geocode(query, limit: limit) + results).prefix(limit))
                OperatorMetrics.called(.geocoder, result: .ok, since: start)
            } catch let error as GeocoderError where results.isEmpty {
                OperatorMetrics.called(.geocoder, result: error == .upstreamTimedOut ? .timeout : .unavailable, since: start)
                switch error {
                case .upstreamTimedOut: throw GatewayError.geocoderTimedOut
                case .upstreamUnavailable, .upstreamFailed: throw GatewayError.geocoderUnavailable
                }
            } catch {
                OperatorMetrics.called(.geocoder, result: .error, since: start)
                context.logger.warning("geocoder upstream failed; answering from the gazetteer", metadata: ["error": "\(error)"])
            }
        }
        guard !results.isEmpty else { throw GatewayError.noGeocodeMatch(query) }
        return Response.json(ByteBuffer(bytes: try JSONEncoder().encode(GeocodeAnswer(results: results))))
    }
}
