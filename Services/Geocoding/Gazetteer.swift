import Foundation
import OnTheMapShared

/// Forward geocoding of "City, Region" strings from the GeoNames places shipped with the project,
/// with no network: every place of 1,000+ people, ranked so the place most people mean comes first.
///
/// A query is a place name followed by optional comma-separated qualifiers, each a region ("Alabama"),
/// a region abbreviation ("CA", "ON", "NSW"), a country ("Brazil", "USA", "UK") or a country code ("NG").
/// Places that satisfy more qualifiers rank first, then larger places.
public struct Gazetteer: Geocoder {
    let data: GazetteerData

    /// Parses gazetteer text in the bundled file's format (see `scripts/make-gazetteer.py`).
    public init(_ text: String) throws {
        data = try GazetteerData(utf8: Array(text.utf8))
    }

    init(contentsOf url: URL) throws {
        let contents = try Data(contentsOf: url)
        data = try GazetteerData(utf8: contents.withUnsafeBytes { Array($0.bindMemory(to: UInt8.self)) })
    }

    /// The gazetteer shipped in this module's resources, read on first use and shared afterwards.
    public static func bundled() throws -> Gazetteer {
        try shared.get()
    }

    private static let shared = Result<Gazetteer, any Error> {
        guard let url = Bundle.module.url(forResource: "gazetteer", withExtension: "tsv", subdirectory: "Resources") else {
            throw GazetteerError.missingResource
        }
        return try Gazetteer(contentsOf: url)
    }

    public var placeCount: Int { data.places.count }

    public func geocode(_ query: String, limit: Int) async throws -> [GeocodeCandidate] {
        search(query, limit: limit)
    }

    /// The same lookup without `async`, for callers that are not in a task.
    public func search(_ query: String, limit: Int) -> [GeocodeCandidate] {
        guard limit > 0 else { return [] }
        var folder = NameFolder()
        let parts = query.split(separator: ",").map { folder.fold($0) }.filter { !$0.isEmpty }
        guard let name = parts.first else { return [] }
        var ranked = rank(name: name, qualifiers: Array(parts.dropFirst()))
        if ranked.isEmpty, parts.count == 1 {
            ranked = rankSplittingTrailingWords(of: name)
        }
        return ranked.prefix(limit).map { candidate($0.place) }
    }

    private struct Ranked {
        var index: Int32
        var place: GazetteerData.Place
        var qualifiersMet: Int
        var weight: Int
    }

    private func rank(name: String, qualifiers: [String]) -> [Ranked] {
        let matches = data.matches(forName: name)
        guard !matches.isEmpty else { return [] }
        let wanted = qualifiers.map { qualifier in
            (regions: Set(data.regionsByKey[qualifier] ?? []), countries: Set(data.countriesByKey[qualifier] ?? []))
        }
        var best: [Int32: Ranked] = [:]
        for match in matches {
            guard let place = data.place(match.place) else { continue }
            let region = place.region
            let country = data.regions[Int(region)].country
            let met = wanted.count(where: { $0.regions.contains(region) || $0.countries.contains(country) })
            // A place found by a foreign or old form of its name counts as a hundredth its size, so a town
            // that really is called "Pekin" outranks Beijing, while "New York" still finds New York City.
            let weight = match.isAlternate ? place.population / 100 : place.population
            let ranked = Ranked(index: match.place, place: place, qualifiersMet: met, weight: weight)
            if let earlier = best[match.place], earlier.weight >= weight { continue }
            best[match.place] = ranked
        }
        return best.values.sorted { left, right in
            if left.qualifiersMet != right.qualifiersMet { return left.qualifiersMet > right.qualifiersMet }
            if left.weight != right.weight { return left.weight > right.weight }
            return left.index < right.index
        }
    }

    /// "Mountain View CA" typed without a comma: try the trailing words as a qualifier, keeping the first
    /// split under which some place actually meets it.
    private func rankSplittingTrailingWords(of name: String) -> [Ranked] {
        let words = name.split(separator: " ")
        guard words.count > 1 else { return [] }
        for split in stride(from: words.count - 1, to: 0, by: -1) {
            let ranked = rank(name: words[..<split].joined(separator: " "), qualifiers: [words[split...].joined(separator: " ")])
            if let first = ranked.first, first.qualifiersMet > 0 { return ranked }
        }
        return []
    }

    private func candidate(_ place: GazetteerData.Place) -> GeocodeCandidate {
        let region = data.regions[Int(place.region)]
        let country = data.countries[Int(region.country)]
        let displayName = [place.name, region.name, country.name].filter { !$0.isEmpty }.joined(separator: ", ")
        return GeocodeCandidate(
            name: place.name, region: region.name, country: country.name, countryCode: country.code,
            latitude: place.latitude, longitude: place.longitude, displayName: displayName)
    }
}
