import Foundation
import TestSupport
import Testing

/// A client that pipelines (sends its next requests before its answers come, as HTTP/1.1 allows and some
/// proxies do) gets every answer, in order, whichever door answers each, without sending anything more.
@Suite struct PipelinedRequestTests {
    @Test func requestsPipelinedBehindAForwardedPostAreAllAnswered() async throws {
        try await withSystem { gateway, _ in
            let http = CookielessClient(port: gateway.port)
            let session = try await http.newStudentSession(email: "ada@example.com", firstName: "Ada", lastName: "Lovelace")
            let pin = #"{"mapString":"London","mediaURL":"https://example.com","latitude":51.5,"longitude":-0.1}"#
            let first = try await http.send("POST", "/v1/StudentLocation", body: pin, headers: ["Authorization": "Bearer \(session)"])
            let objectId = try #require(first.body.firstMatch(of: /"objectId":"([^"]+)"/)?.1)

            // One send: a post the gateway forwards to locations-service and answers when it has the answer,
            // then the pin's history and the API document (the router's), then the latest list (from memory).
            let connection = try RawConnection(port: gateway.port)
            defer { connection.close() }
            let host = "Host: 127.0.0.1\r\n"
            try connection.send(
                "POST /v1/StudentLocation HTTP/1.1\r\n\(host)Authorization: Bearer \(session)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(pin.utf8.count)\r\n\r\n\(pin)"
                    + "GET /v1/StudentLocation/\(objectId)/history HTTP/1.1\r\n\(host)\r\n"
                    + "GET /openapi.yaml HTTP/1.1\r\n\(host)\r\n"
                    + "GET /v1/StudentLocation HTTP/1.1\r\n\(host)\r\n")
            // Answers that do not come leave the list short once the connection's receive timeout (10 s) has passed.
            #expect(try await connection.receiveStatuses(4) == [200, 200, 200, 200])
        }
    }
}
