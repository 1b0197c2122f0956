import HTTPTypes
import OnTheMapShared

/// The headers the gateway and locations-service speak between them (`InternalHeaders`), as field names.
extension HTTPField.Name {
    public static let requestID = HTTPField.Name(InternalHeaders.requestID)!
    public static let actor = HTTPField.Name(InternalHeaders.actor)!
    public static let idempotencyKey = HTTPField.Name(InternalHeaders.idempotencyKey)!
    public static let replayOnly = HTTPField.Name(InternalHeaders.replayOnly)!
    public static let replayed = HTTPField.Name(InternalHeaders.replayed)!
}
