import OnTheMapShared

/// Turns a free-text place ("Mountain View, CA") into candidate coordinates, best first.
public protocol Geocoder: Sendable {
    func geocode(_ query: String, limit: Int) async throws -> [GeocodeCandidate]
}
