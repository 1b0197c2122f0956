import Foundation
import TestSupport
import Testing

/// A client that announces its body (`Expect: 100-continue`, as curl does for a body over 1 KB) and waits to
/// be told to send it is told at once, and its request answered.
@Suite struct AnnouncedBodyTests {
    @Test func aPostThatAnnouncesItsBodyIsToldToSendIt() async throws {
        try await withSystem { gateway, _ in
            let http = CookielessClient(port: gateway.port)
            let session = try await http.newStudentSession(email: "kay@example.com", firstName: "Kay", lastName: "Ada")
            let link = "https://example.com/" + String(repeating: "a", count: 1200)
            let pin = #"{"mapString":"Lima","mediaURL":"\#(link)","latitude":-12.0,"longitude":-77.0}"#
            let connection = try RawConnection(port: gateway.port)
            defer { connection.close() }
            try connection.send(
                "POST /v1/StudentLocation HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(session)\r\n"
                    + "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: \(pin.utf8.count)\r\n\r\n")
            // Without the interim answer this read waits out the connection's 10 s receive timeout and has nothing.
            #expect(try await connection.receiveHead() == "HTTP/1.1 100 Continue\r\n\r\n")
            try connection.send(pin)
            let answer = try await connection.receiveResponse()
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.contains(#""objectId":"#), "\(answer)")
        }
    }
}
