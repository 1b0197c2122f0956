import Testing
@testable import AuthGateway
@Test func placeholder() {}
