import ContentCoding
import Foundation
import HTTPTypes
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

/// What a client that asks for compression gets from the gateway, on a real socket with locations-service
/// and PostgreSQL behind it: on every route that answers text worth coding, the same bytes as without it
/// once decoded, brotli or gzip as asked, `Vary: Accept-Encoding` on each form, and a 304 for each form's tag
/// where the route revalidates.
@Suite struct CodedAnswersTests {
    /// The routes, and whether each answers `If-None-Match`.
    static func routes(pin: String) -> [(path: String, revalidates: Bool)] {
        [
            ("/v1/StudentLocation", true),
            ("/parse/classes/StudentLocation", true),
            ("/v1/StudentLocation.geojson", true),
            ("/", true),
            ("/v1/StudentLocation?order=mapString", false),
            ("/v1/StudentLocation/\(pin)/history", false),
            ("/openapi.yaml", false),
        ]
    }

    @Test func everyCodedAnswerDecodesToThePlainOneAndRevalidatesByItsOwnTag() async throws {
        try await withGateway { client, _ in
            let student = try await client.signedUpAndLoggedIn("coded@example.com", firstName: "Katherine", lastName: "Johnson")
            var pin = ""
            for place in ["White Sulphur Springs, West Virginia", "Hampton, Virginia", "Newport News, Virginia"] {
                pin = try await client.postPin(as: student, mapString: place)
            }
            for (path, revalidates) in Self.routes(pin: pin) {
                let (status, plainHeaders, plain) = try await WebClientTests.fetch(client, path)
                #expect(status == .ok, "\(path)")
                #expect(plainHeaders[.contentEncoding] == nil, "\(path)")
                #expect(plainHeaders[.vary] == "Accept-Encoding", "\(path): the plain answer says it varies too")
                #expect(plain.count >= CodedForms.smallest, "\(path): \(plain.count) bytes is too short to be coded")
                for (asked, coding) in [("gzip", ContentCoding.gzip), ("br", .br), ("gzip, deflate, br", .br), ("br;q=0.5, gzip", .gzip)] {
                    let (status, headers, body) = try await WebClientTests.fetch(client, path, headers: [.acceptEncoding: asked])
                    #expect(status == .ok, "\(path) \(asked)")
                    #expect(headers[.contentEncoding] == coding.rawValue, "\(path) \(asked)")
                    #expect(headers[.vary] == "Accept-Encoding", "\(path) \(asked)")
                    #expect(body.count < plain.count, "\(path) \(asked)")
                    let decoded = coding == .gzip ? try await gunzipWithTheTool(body) : try Brotli.decompress(body, limit: 1 << 24)
                    #expect(decoded == plain, "\(path) \(asked): decodes to other bytes than the plain answer")
                    #expect(headers[.contentType] == plainHeaders[.contentType], "\(path) \(asked)")
                    guard let plainTag = plainHeaders[.eTag] else { continue }
                    let tag = try #require(headers[.eTag], "\(path) \(asked)")
                    #expect(tag == EntityTags.coded(plainTag, coding), "\(path) \(asked)")
                    guard revalidates else { continue }
                    let (again, againHeaders, againBody) = try await WebClientTests.fetch(
                        client, path, headers: [.acceptEncoding: asked, .ifNoneMatch: tag])
                    #expect(again == .notModified && againBody.isEmpty, "\(path) \(asked)")
                    #expect(againHeaders[.eTag] == tag && againHeaders[.vary] == "Accept-Encoding", "\(path) \(asked)")
                }
                if revalidates, let plainTag = plainHeaders[.eTag] {
                    let (again, againHeaders, _) = try await WebClientTests.fetch(client, path, headers: [.ifNoneMatch: plainTag])
                    #expect(again == .notModified && againHeaders[.vary] == "Accept-Encoding", "\(path)")
                }
            }
        }
    }

    @Test func shortAnswersAndErrorsAreSentAsTheyAre() async throws {
        try await withGateway { client, _ in
            // The empty list is shorter than any coding saves on.
            let (_, emptyHeaders, empty) = try await WebClientTests.fetch(client, "/v1/StudentLocation", headers: [.acceptEncoding: "br"])
            #expect(emptyHeaders[.contentEncoding] == nil && String(decoding: empty, as: UTF8.self) == #"{"results":[]}"#)
            let (missing, missingHeaders, _) = try await WebClientTests.fetch(
                client, "/v1/StudentLocation/AAAAAAAAAA", headers: [.acceptEncoding: "gzip, br"])
            #expect(missing == .notFound && missingHeaders[.contentEncoding] == nil)
        }
    }
}
