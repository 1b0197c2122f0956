import Testing
@testable import LocationsService
@Test func placeholder() {}
