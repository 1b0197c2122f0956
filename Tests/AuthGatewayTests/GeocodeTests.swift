import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// `GET /v1/geocode` as a client uses it before posting a pin.
@Suite struct GeocodeTests {
    static func candidates(_ reply: Reply) -> [[String: Any]] { reply.json["results"] as? [[String: Any]] ?? [] }

    @Test func resolvesTheCitiesStudentsTypeBestFirst() async throws {
        try await withGatewayRouter { client, _ in
            let expected: [(String, String, Double, Double)] = [
                ("Mountain View, CA", "US", 37.39, -122.08), ("Huntsville, Alabama", "US", 34.73, -86.59),
                ("Patiala, Punjab", "IN", 30.34, 76.39), ("Berlin", "DE", 52.52, 13.41),
                ("são paulo, BRAZIL", "BR", -23.55, -46.63), ("Lagos, Nigeria", "NG", 6.45, 3.39),
            ]
            for (query, country, latitude, longitude) in expected {
                let encoded = query.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)!
                let reply = try await client.send(.get, "/v1/geocode?q=\(encoded)")
                #expect(reply.status == .ok, "\(query)")
                let best = try #require(Self.candidates(reply).first, "\(query)")
                #expect(best["countryCode"] as? String == country, "\(query)")
                #expect(abs((best["latitude"] as? Double ?? 0) - latitude) < 0.5, "\(query)")
                #expect(abs((best["longitude"] as? Double ?? 0) - longitude) < 0.5, "\(query)")
                #expect((best["displayName"] as? String)?.isEmpty == false)
            }
        }
    }

    @Test func nonsenseIs404AndAMissingQueryIs400() async throws {
        try await withGatewayRouter { client, _ in
            let nonsense = try await client.send(.get, "/v1/geocode?q=Xqzzyv%20Plokk")
            #expect(nonsense.status == .notFound)
            #expect(nonsense.body == #"{"status":404,"error":"No place matches \"Xqzzyv Plokk\"."}"#)
            let missing = try await client.send(.get, "/v1/geocode")
            #expect(missing.status == .badRequest)
            let limited = try await client.send(.get, "/v1/geocode?q=Springfield&limit=3")
            #expect(Self.candidates(limited).count == 3)
        }
    }

    /// A Nominatim-compatible upstream on loopback answers street addresses the gazetteer cannot.
    @Test func streetAddressesGoToTheConfiguredUpstream() async throws {
        let router = Router()
        router.get("search") { request, _ -> Response in
            let query = request.uri.queryParameters["q"].map(String.init) ?? ""
            let body =
                query.contains("Amphitheatre")
                ? """
                [{"place_id":1,"lat":"37.4224857","lon":"-122.0855846","name":"Google Building 41","display_name":"1600, Amphitheatre Parkway, Mountain View, Santa Clara County, California, 94043, United States","address":{"house_number":"1600","road":"Amphitheatre Parkway","town":"Mountain View","state":"California","country":"United States","country_code":"us"}}]
                """ : "[]"
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).withLoopbackServer { port in
            try await withGatewayRouter(configure: { $0.geocoderURL = "http://127.0.0.1:\(port)" }) { client, _ in
                let reply = try await client.send(.get, "/v1/geocode?q=1600%20Amphitheatre%20Parkway,%20Mountain%20View")
                #expect(reply.status == .ok)
                let best = try #require(Self.candidates(reply).first)
                #expect(abs((best["latitude"] as? Double ?? 0) - 37.4224857) < 0.0001)
                #expect(best["countryCode"] as? String == "US")
                let city = try await client.send(.get, "/v1/geocode?q=Berlin")
                #expect(Self.candidates(city).first?["countryCode"] as? String == "DE", "city names stay with the gazetteer")
            }
        }
    }
}
