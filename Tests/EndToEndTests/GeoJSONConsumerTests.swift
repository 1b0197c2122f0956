import Foundation
import TestSupport
import Testing

/// The GeoJSON feed read by the tools its users would point at it: GDAL (what QGIS reads layers with), from
/// the gateway's URL as a QGIS layer would, and the `geojson` package's validator.
@Suite struct GeoJSONConsumerTests {
    @Test(Needs.gdal) func gdalReadsTheFeedsPointsFromTheURLAndAValidatorAcceptsIt() async throws {
        try await withSystem { gateway, _ in
            let session = try await OpenAPITests.logIn(gateway)
            let places = [("Lima, Peru", -12.046, -77.043), ("Oslo, Norway", 59.913, 10.752), ("Nairobi, Kenya", -1.286, 36.817)]
            for (place, latitude, longitude) in places {
                let pin = #"{"mapString":"\#(place)","mediaURL":"https://example.com","latitude":\#(latitude),"longitude":\#(longitude)}"#
                let (status, body) = try await gateway.request(
                    "POST", "/v1/StudentLocation", body: pin, headers: ["Authorization": "Bearer \(session)"], token: false)
                #expect(status == 200, "\(body)")
            }
            let url = "http://127.0.0.1:\(gateway.port)/v1/StudentLocation.geojson"

            let (summaryStatus, summary) = try await OpenAPITests.run(["ogrinfo", "-ro", "-so", "-al", url], timeout: .seconds(60))
            #expect(summaryStatus == 0, "\(summary)")
            #expect(summary.contains("Feature Count: 3"), "\(summary)")
            #expect(summary.contains("Geometry: Point"), "\(summary)")
            for field in ["name: String", "link: String", "place: String", "updatedAt: DateTime"] {
                #expect(summary.contains(field), "\(field) in \(summary)")
            }
            // Newest first, as the list; GDAL writes each point as POINT (longitude latitude).
            let (featuresStatus, features) = try await OpenAPITests.run(["ogrinfo", "-ro", "-al", "-q", url], timeout: .seconds(60))
            #expect(featuresStatus == 0, "\(features)")
            let points = features.split(separator: "\n").filter { $0.contains("POINT") }.map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(points == ["POINT (36.817 -1.286)", "POINT (10.752 59.913)", "POINT (-77.043 -12.046)"], "\(features)")
            #expect(features.contains("place (String) = Nairobi, Kenya") && features.contains("name (String) = Fuzz Tester"), "\(features)")

            let (status, document) = try await gateway.request("GET", "/v1/StudentLocation.geojson", token: false)
            #expect(status == 200)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString).geojson")
            try document.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let check = """
                import geojson, sys
                feed = geojson.load(open(sys.argv[1]))
                assert isinstance(feed, geojson.FeatureCollection), type(feed)
                print("valid" if feed.is_valid else feed.errors(), len(feed["features"]))
                """
            let (validatorStatus, verdict) = try await OpenAPITests.run(["python3", "-c", check, file.path])
            #expect(validatorStatus == 0 && verdict.trimmingCharacters(in: .whitespacesAndNewlines) == "valid 3", "\(verdict)")
        }
    }
}
