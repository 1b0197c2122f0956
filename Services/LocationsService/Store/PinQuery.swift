import OnTheMapShared

/// A typed request for pins from the read model: which ones, in what order, which page.
/// Built from untrusted query strings by `ListQueryParser`; only its known keys ever reach SQL.
struct PinQuery: Hashable, Sendable {
    enum Key: String, Sendable, CaseIterable {
        case objectId, uniqueKey, firstName, lastName, mapString, mediaURL, latitude, longitude, createdAt, updatedAt

        var column: String {
            switch self {
            case .objectId: "object_id"
            case .uniqueKey: "unique_key"
            case .firstName: "first_name"
            case .lastName: "last_name"
            case .mapString: "map_string"
            case .mediaURL: "media_url"
            case .latitude: "latitude"
            case .longitude: "longitude"
            case .createdAt: "created_at"
            case .updatedAt: "updated_at"
            }
        }
    }

    struct Sort: Hashable, Sendable {
        var key: Key
        var descending: Bool
    }

    var filters: [Key: String] = [:]
    var order: [Sort] = [Sort(key: .updatedAt, descending: true)]
    var limit: Int = 100
    var skip: Int = 0
    /// The map as it was at this moment (`?at=`), from `locations.pin_versions`; nil: as it is.
    var at: Timestamp?
    /// The map whose pins are asked for (`''`: the default map).
    var map: String = ""

    /// The most common read of all: the newest 100 pins. Served from memory.
    static let latest = PinQuery()

    static let maximumLimit = 1000
}
