import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AuthGateway

/// What a client hears for a path the gateway does not serve, or a method a path does not take: the list
/// comes from the router's own routes.
@Suite struct UnknownRouteTests {
    @Test func aWrongMethodIs405NamingTheMethodsThePathTakesAndAnUnknownPathIs404() async throws {
        try await withGatewayRouter { client, _ in
            let wrongMethods: [(HTTPRequest.Method, String, Set<String>)] = [
                (.patch, "/v1/session", ["POST", "DELETE"]),
                (.get, "/api/session", ["POST", "DELETE"]),
                (.put, "/v1/StudentLocation", ["GET", "POST"]),
                (.post, "/parse/classes/StudentLocation/abc123", ["GET", "PUT", "DELETE"]),
                (.post, "/v1/users/12345", ["GET"]),
                (.delete, "/v1/accounts", ["POST"]),
                (.post, "/v1/StudentLocation/events", ["GET"]),
                (.post, "/openapi.yaml", ["GET"]),
                (.delete, "/", ["GET"]),
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
}
