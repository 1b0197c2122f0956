import Foundation
import TestSupport

/// Both services on a fresh database (or `given`): the gateway (with `gatewaySettings` besides its own), and
/// locations-service behind it (with `locationsSettings`).
func withSystem(
    on given: TestDatabase? = nil, gatewaySettings: [String: String] = [:], locationsSettings: [String: String] = [:],
    _ body: (_ gateway: ServiceProcess, _ locations: ServiceProcess) async throws -> Void
) async throws {
    let database: TestDatabase
    if let given { database = given } else { database = try await TestDatabase.create() }
    let locations = try ServiceProcess("locations-service", environment: ["DATABASE_URL": database.url].merging(locationsSettings) { $1 })
    defer { locations.terminate() }
    try await locations.waitUntilReady()
    let gateway = try ServiceProcess(
        "auth-gateway",
        environment: [
            "DATABASE_URL": database.url, "LOCATIONS_URL": "http://127.0.0.1:\(locations.port)",
        ].merging(gatewaySettings) { _, setting in setting })
    defer { gateway.terminate() }
    try await gateway.waitUntilReady()
    try await body(gateway, locations)
}
