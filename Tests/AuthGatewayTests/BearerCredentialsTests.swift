import OnTheMapShared
import Testing

/// `Authorization: Bearer <session id>`: the scheme in any case, blanks around the id ignored.
@Suite struct BearerCredentialsTests {
    @Test func theSchemeInAnyCaseWithBlanksAroundTheId() {
        #expect(SessionCredentials.bearer("Bearer 1700000000Sab") == "1700000000Sab")
        #expect(SessionCredentials.bearer("bearer 1700000000Sab") == "1700000000Sab")
        #expect(SessionCredentials.bearer("BEARER \t 1700000000Sab \t") == "1700000000Sab")
    }

    @Test func otherSchemesAndEmptyCredentialsAreNone() {
        for header in ["Bearer ", "Bearer  \t ", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Bearer1700000000Sab", "Bear", "", "Bearar x"] {
            #expect(SessionCredentials.bearer(header) == nil, "\(header)")
        }
    }

    @Test func aBearerTokenWinsOverTheCookieAndAnEmptyCookieIsNone() {
        #expect(SessionCredentials.sessionID(authorization: "Bearer 1700000000Sab", cookie: "1700000000Scd") == "1700000000Sab")
        #expect(SessionCredentials.sessionID(authorization: "Basic YWxhZGRpbjpvcGVuc2VzYW1l", cookie: "1700000000Scd") == "1700000000Scd")
        #expect(SessionCredentials.sessionID(authorization: nil, cookie: "") == nil)
    }
}
