import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// `GET /v1/StudentLocation.geojson` through the gateway, over the real log: the list's pins as an RFC 7946
/// FeatureCollection, tagged for 304s, readable from any origin, errors included.
@Suite struct GeoJSONFeedTests {
    @Test func theFeedIsTheListAsGeoJSONTaggedAndReadableFromAnyOrigin() async throws {
        try await withGatewaySocket { client, _ in
            let student = try await client.signedUpAndLoggedIn("geojson@example.com", firstName: "Katherine", lastName: "Johnson")
            let lima = try await client.postPin(as: student, mapString: "Lima, Peru")
            let oslo = try await client.postPin(as: student, mapString: "Oslo, Norway")
            let moved = try await client.send(
                .put, "/v1/StudentLocation/\(oslo)", body: #"{"latitude":59.9,"longitude":10.75}"#, headers: [student.bearer])
            #expect(moved.status == .ok)

            // No session: public, as the list is.
            let feed = try await client.send(.get, "/v1/StudentLocation.geojson")
            #expect(feed.status == .ok)
            #expect(feed.headers[.contentType] == "application/geo+json")
            #expect(feed.headers[.accessControlAllowOrigin] == "*" && feed.headers[.accessControlExposeHeaders] == "ETag")
            let etag = try #require(feed.headers[.eTag])
            #expect(feed.json["type"] as? String == "FeatureCollection")
            let features = try #require(feed.json["features"] as? [[String: Any]])
            let list = try await client.pins()
            #expect(features.map { $0["id"] as? String } == list.map { $0["objectId"] as? String }, "in the list's order")
            #expect(features.map { $0["id"] as? String } == [oslo, lima])
            let first = features[0]
            #expect(first["type"] as? String == "Feature" && first.count == 4)
            let geometry = try #require(first["geometry"] as? [String: Any])
            #expect(geometry["type"] as? String == "Point")
            #expect(geometry["coordinates"] as? [Double] == [10.75, 59.9], "longitude first")
            let properties = try #require(first["properties"] as? [String: String])
            #expect(
                properties == [
                    "name": "Katherine Johnson", "link": "https://udacity.com", "place": "Oslo, Norway",
                    "updatedAt": list[0]["updatedAt"] as? String ?? "",
                ])
            #expect(feed.body.hasPrefix(#"{"type":"FeatureCollection","features":[{"type":"Feature","id":""# + oslo))

            // Unchanged, a poller gets 304 and the tag; a post changes both.
            let again = try await client.send(.get, "/v1/StudentLocation.geojson", headers: [HTTPField(name: .ifNoneMatch, value: etag)])
            #expect(again.status == .notModified && again.headers[.eTag] == etag && again.body.isEmpty)
            #expect(again.headers[.accessControlAllowOrigin] == "*")
            _ = try await client.postPin(as: student, mapString: "Accra, Ghana")
            let changed = try await client.send(.get, "/v1/StudentLocation.geojson", headers: [HTTPField(name: .ifNoneMatch, value: etag)])
            #expect(changed.status == .ok && changed.headers[.eTag] != etag)
            #expect((changed.json["features"] as? [[String: Any]])?.count == 3)

            // The list's query, as for the list.
            let limited = try await client.send(.get, "/v1/StudentLocation.geojson?limit=1&order=mapString")
            let places = (limited.json["features"] as? [[String: Any]])?.map { ($0["properties"] as? [String: Any])?["place"] as? String }
            #expect(places == ["Accra, Ghana"])
            let mine = try await client.send(
                .get,
                "/v1/StudentLocation.geojson?where=" + #"{"mapString":"Lima, Peru"}"#.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            #expect((mine.json["features"] as? [[String: Any]])?.map { $0["id"] as? String } == [lima], "\(mine.body)")

            // A bad query is refused in Parse's shape, readable from another origin too.
            let bad = try await client.send(.get, "/v1/StudentLocation.geojson?limit=many")
            #expect(bad.status == .badRequest && bad.json["code"] as? Int == 102, "\(bad.body)")
            #expect(bad.headers[.accessControlAllowOrigin] == "*")

            // A browser's preflight.
            let preflight = try await client.send(
                .options, "/v1/StudentLocation.geojson",
                headers: [
                    HTTPField(name: .origin, value: "https://umap.example.org"),
                    HTTPField(name: .accessControlRequestMethod, value: "GET"),
                    HTTPField(name: .accessControlRequestHeaders, value: "if-none-match"),
                ])
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == "*" && preflight.headers[.accessControlAllowMethods] == "GET, HEAD")
            #expect(preflight.headers[.accessControlAllowHeaders] == "If-None-Match")

            // The list itself stays as it was: no CORS headers.
            let plain = try await client.send(.get, "/v1/StudentLocation")
            #expect(plain.headers[.accessControlAllowOrigin] == nil)
        }
    }
}
