import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// What a client hears for a path the gateway does not serve, or a method a path does not take: the list
/// comes from the router's own routes.
@Suite struct UnknownRouteTests {
    @Test func aWrongMethodIs405NamingTheMethodsThePathTakesAndAnUnknownPathIs404() async throws {
        try await withGatewayRouter { client, _ in
            let wrongMethods: [(HTTPRequest.Method, String, Set<String>)] = [
                (.patch, "/v1/session", ["POST", "DELETE"]),
                (.get, "/api/session", ["POST", "DELETE"]),
                (.put, "/v1/StudentLocation", ["GET", "HEAD", "POST"]),
                (.post, "/v1/users/12345", ["GET", "HEAD"]),
                (.delete, "/v1/accounts", ["POST"]),
                (.post, "/v1/StudentLocation/events", ["GET", "HEAD"]),
                (.post, "/openapi.yaml", ["GET", "HEAD"]),
                (.delete, "/", ["GET", "HEAD"]),
            ]
            for (method, path, methods) in wrongMethods {
                try await client.execute(uri: path, method: method) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                    let allow = response.headers[.allow].map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
                    #expect(allow == methods, "\(method) \(path)")
                    #expect(String(buffer: response.body) == #"{"status":405,"error":"\#(method) is not allowed on \#(path)."}"#)
                }
            }
            for path in ["/v1/nowhere", "/v1/StudentLocation/abc123/more", "/v2/StudentLocation"] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .notFound, "\(path)")
                    #expect(String(buffer: response.body) == #"{"status":404,"error":"No route for GET \#(path)."}"#)
                }
            }
        }
    }

    /// Old Parse clients read every error under `/parse` and `/1` as `{code, error}`: a refused method too.
    @Test func underTheParsePathsAWrongMethodAndAnUnknownPathAnswerInParsesShape() async throws {
        try await withGatewayRouter { client, _ in
            for root in ["/parse/classes/StudentLocation", "/1/classes/StudentLocation"] {
                let wrongMethods: [(HTTPRequest.Method, String, Set<String>)] = [
                    (.patch, root, ["GET", "HEAD", "POST"]),
                    (.init("TRACE")!, root, ["GET", "HEAD", "POST"]),
                    (.options, root, ["GET", "HEAD", "POST"]),
                    (.post, root + "/abc123", ["GET", "HEAD", "PUT", "DELETE"]),
                    (.patch, root + "/abc123", ["GET", "HEAD", "PUT", "DELETE"]),
                ]
                for (method, path, methods) in wrongMethods {
                    let reply = try await client.send(method, path)
                    #expect(reply.status == .methodNotAllowed, "\(method) \(path)")
                    let allow = reply.headers[.allow].map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
                    #expect(allow == methods, "\(method) \(path)")
                    #expect(reply.headers[.contentType] == "application/json")
                    #expect(reply.body == #"{"code":119,"error":"\#(method) is not allowed on \#(path)."}"#)
                }
            }
            for path in [
                "/parse/classes/StudentLocation/abc123/more", "/parse/classes/Other", "/1/classes/StudentLocation/a/b", "/1/login", "/parse",
            ] {
                let reply = try await client.send(.get, path)
                #expect(reply.status == .notFound, "\(path)")
                #expect(reply.body == #"{"code":101,"error":"No route for GET \#(path)."}"#)
            }
            // A path that only starts like a Parse root is not under it.
            let elsewhere = try await client.send(.get, "/parsed")
            #expect(elsewhere.body == #"{"status":404,"error":"No route for GET /parsed."}"#)
        }
    }

    /// The refusals a Parse client's write meets before it reaches the map, the same at either door.
    @Test func underTheParsePathsEveryRefusalIsParsesShapeThroughEitherDoor() async throws {
        try await withGatewaySocket { client, _ in
            let port = try #require(client.port)
            let student = try await client.signedUpAndLoggedIn("parse-refusals@example.com")
            let bearer = "Authorization: Bearer \(student.token)"
            let tooLarge = #"{"mapString":""# + String(repeating: "x", count: 17 * 1024) + #""}"#
            for root in ["/parse/classes/StudentLocation", "/1/classes/StudentLocation"] {
                let cases: [(method: String, path: String, body: String, status: String, answer: String)] = [
                    ("PATCH", root, TestPin.json, "405 Method Not Allowed", #"{"code":119,"error":"PATCH is not allowed on \#(root)."}"#),
                    ("POST", root, tooLarge, "413 Payload Too Large", #"{"code":142,"error":"The request body is larger than 16 KiB."}"#),
                    ("POST", root + "/x/y", TestPin.json, "404 Not Found", #"{"code":101,"error":"No route for POST \#(root)/x/y."}"#),
                ]
                for framing in Framing.allCases {
                    for refused in cases {
                        let answer = try await rawExchange(framing, refused.method, refused.path, body: refused.body, headers: [bearer], port: port)
                        #expect(answer.status.hasSuffix(refused.status), "\(framing) \(refused.method) \(refused.path): \(answer.status)")
                        #expect(answer.body == refused.answer, "\(framing): \(answer.body)")
                    }
                }
                let malformed = try await client.send(.post, root, body: #"{"mapString":"#, headers: [student.bearer])
                #expect(malformed.status == .badRequest)
                #expect(malformed.json["code"] as? Int == 107, "\(malformed.body)")
                let badQuery = try await client.send(.get, root + "?where=%7Bnot%20json")
                #expect(badQuery.status == .badRequest)
                #expect(badQuery.json["code"] as? Int == 102, "\(badQuery.body)")
            }
        }
    }
}
