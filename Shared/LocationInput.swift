import Foundation
import NIOCore

/// The body of `POST` and `PUT /StudentLocation`. Every field is optional here: a PUT may change a few
/// fields, and which are required is the service's rule, not the wire's. Unknown keys are ignored.
///
/// `uniqueKey`, `firstName` and `lastName` are read but never trusted: the acting account replaces them.
public struct LocationInput: Hashable, Sendable, Codable {
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

    /// Decodes a body; a field that is present with the wrong JSON type is an error, `null` counts as absent
    /// (what the synthesized `decodeIfPresent` of each optional field does). The field named in a type error
    /// is the last key of the decoder's coding path.
    public static func decode(_ body: some Collection<UInt8>) throws(ReadError) -> LocationInput {
        do {
            return try JSONDecoder().decode(LocationInput.self, from: Data(body))
        } catch DecodingError.typeMismatch(let type, let context) {
            guard let field = context.codingPath.last?.stringValue else { throw .notAnObject }
            throw .wrongType(field: field, expected: type == String.self ? "a string" : "a number")
        } catch {
            throw .malformedJSON
        }
    }

    public var json: ByteBuffer {
        var writer = JSONWriter()
        writer.beginObject()
        if let uniqueKey { writer.field("uniqueKey", uniqueKey) }
        if let firstName { writer.field("firstName", firstName) }
        if let lastName { writer.field("lastName", lastName) }
        if let mapString { writer.field("mapString", mapString) }
        if let mediaURL { writer.field("mediaURL", mediaURL) }
        if let latitude { writer.field("latitude", latitude) }
        if let longitude { writer.field("longitude", longitude) }
        writer.endObject()
        return writer.buffer
    }
}
