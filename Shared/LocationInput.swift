import Foundation

/// The body of `POST` and `PUT /StudentLocation`. Every field is optional here: a PUT may change a few
/// fields, and which are required is the service's rule, not the wire's. Unknown keys are ignored.
///
/// `uniqueKey`, `firstName` and `lastName` are read but never trusted: the acting account replaces them.
public struct LocationInput: Hashable, Sendable {
    public var uniqueKey: String?
    public var firstName: String?
    public var lastName: String?
    public var mapString: String?
    public var mediaURL: String?
    public var latitude: Double?
    public var longitude: Double?

    public init(
        uniqueKey: String? = nil, firstName: String? = nil, lastName: String? = nil, mapString: String? = nil,
        mediaURL: String? = nil, latitude: Double? = nil, longitude: Double? = nil
    ) {
        self.uniqueKey = uniqueKey
        self.firstName = firstName
        self.lastName = lastName
        self.mapString = mapString
        self.mediaURL = mediaURL
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Why a body could not be read, in Parse's terms.
    public enum ReadError: Error, Hashable, Sendable {
        case malformedJSON
        case notAnObject
        case wrongType(field: String, expected: String)

        public var parseError: ParseError {
            switch self {
            case .malformedJSON: ParseError(.invalidJSON, "The request body is not valid JSON.")
            case .notAnObject: ParseError(.invalidJSON, "The request body must be a JSON object.")
            case .wrongType(let field, let expected): ParseError(.incorrectType, "\(field) must be \(expected).")
            }
        }
    }

    /// Decodes a body; a field that is present with the wrong JSON type is an error, `null` counts as absent.
    public static func decode(_ body: some Collection<UInt8>) throws(ReadError) -> LocationInput {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw .malformedJSON
        }
        guard let object = value as? [String: Any] else { throw .notAnObject }

        func string(_ field: String) throws(ReadError) -> String? {
            guard let raw = object[field], !(raw is NSNull) else { return nil }
            guard let text = raw as? String else { throw .wrongType(field: field, expected: "a string") }
            return text
        }
        func number(_ field: String) throws(ReadError) -> Double? {
            guard let raw = object[field], !(raw is NSNull) else { return nil }
            guard let number = raw as? NSNumber, !number.isBoolean else { throw .wrongType(field: field, expected: "a number") }
            // A number with many digits arrives as an NSDecimalNumber whose `doubleValue` can be a unit in the
            // last place off (-122.0838511111111 became -122.08385111111109); its text reads back exactly.
            return Double(number.stringValue) ?? number.doubleValue
        }
        return LocationInput(
            uniqueKey: try string("uniqueKey"),
            firstName: try string("firstName"),
            lastName: try string("lastName"),
            mapString: try string("mapString"),
            mediaURL: try string("mediaURL"),
            latitude: try number("latitude"),
            longitude: try number("longitude")
        )
    }

    public var jsonBytes: [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        if let uniqueKey { json.field("uniqueKey", uniqueKey) }
        if let firstName { json.field("firstName", firstName) }
        if let lastName { json.field("lastName", lastName) }
        if let mapString { json.field("mapString", mapString) }
        if let mediaURL { json.field("mediaURL", mediaURL) }
        if let latitude { json.field("latitude", latitude) }
        if let longitude { json.field("longitude", longitude) }
        json.endObject()
        return json.bytes
    }
}

extension NSNumber {
    /// JSON `true`/`false` arrive as NSNumber too (type code `c`); JSON numbers never use that code.
    var isBoolean: Bool { String(cString: objCType) == "c" }
}
