import Testing
@testable import AuthGateway

/// `Authorization: Bearer <session id>`: the scheme in any case, blanks around the id ignored.
@Suite struct BearerCredentialsTests {
    @Test func theSchemeInAnyCaseWithBlanksAroundTheId() {
        #expect(SessionCookies.bearerCredentials("Bearer 1700000000Sab") == "1700000000Sab")
        #expect(SessionCookies.bearerCredentials("bearer 1700000000Sab") == "1700000000Sab")
        #expect(SessionCookies.bearerCredentials("BEARER \t 1700000000Sab \t") == "1700000000Sab")
    }

    @Test func otherSchemesAndEmptyCredentialsAreNone() {
        for header in ["Bearer ", "Bearer  \t ", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Bearer1700000000Sab", "Bear", "", "Bearar x"] {
            #expect(SessionCookies.bearerCredentials(header) == nil, "\(header)")
        }
    }
}
