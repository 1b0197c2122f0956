import Foundation
import OnTheMapShared

/// One element of Nominatim's `format=jsonv2&addressdetails=1` answer, as far as a pin needs it.
/// Nominatim sends coordinates as strings.
struct NominatimPlace: Decodable {
    struct Address: Decodable {
        var city: String?
        var town: String?
        var village: String?
        var hamlet: String?
        var state: String?
        var region: String?
        var country: String?
        var countryCode: String?

        enum CodingKeys: String, CodingKey {
            case city, town, village, hamlet, state, region, country
            case countryCode = "country_code"
        }
    }

    var lat: String
    var lon: String
    var name: String?
    var displayName: String
    var address: Address?

    enum CodingKeys: String, CodingKey {
        case lat, lon, name, address
        case displayName = "display_name"
    }

    /// Nil when the coordinates are not numbers, so one odd element doesn't spoil the rest.
    var candidate: GeocodeCandidate? {
        guard let latitude = Double(lat), let longitude = Double(lon),
            (-90...90).contains(latitude), (-180...180).contains(longitude)
        else { return nil }
        let locality = address?.city ?? address?.town ?? address?.village ?? address?.hamlet
        let firstPart = displayName.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let placeName = [name, locality].compactMap { $0 }.first { !$0.isEmpty } ?? firstPart
        return GeocodeCandidate(
            name: placeName,
            region: address?.state ?? address?.region ?? "",
            country: address?.country ?? "",
            countryCode: (address?.countryCode ?? "").uppercased(),
            latitude: latitude, longitude: longitude,
            displayName: displayName)
    }
}
