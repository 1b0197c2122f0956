/// One place a geocoder offers for a query: where it is and how to show it.
public struct GeocodeCandidate: Hashable, Sendable, Codable {
    public var name: String
    /// The first-level division (state, province, region); empty when the source has none.
    public var region: String
    public var country: String
    /// ISO 3166-1 alpha-2, upper case.
    public var countryCode: String
    public var latitude: Double
    public var longitude: Double
    /// "Mountain View, California, United States": what a person picks from.
    public var displayName: String

    public init(
        name: String, region: String, country: String, countryCode: String,
        latitude: Double, longitude: Double, displayName: String
    ) {
        self.name = name
        self.region = region
        self.country = country
        self.countryCode = countryCode
        self.latitude = latitude
        self.longitude = longitude
        self.displayName = displayName
    }
}

/// The answer to `GET /v1/geocode?q=`: candidates, best first.
public struct GeocodeAnswer: Hashable, Sendable, Codable {
    public var results: [GeocodeCandidate]

    public init(results: [GeocodeCandidate]) { self.results = results }
}
