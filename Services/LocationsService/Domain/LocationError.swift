import OnTheMapShared

/// Everything that can go wrong with a request to this service, by meaning. `ErrorMiddleware` is the one
/// place that turns these into statuses and Parse-style bodies.
enum LocationError: Error, Equatable {
    case notFound
    case notOwner
    case invalid(String)
    case unreadableBody(LocationInput.ReadError)
    case invalidQuery(String)
    case bodyTooLarge(limit: Int)
    case versionMismatch(expected: String, current: Int)
    case idempotencyKeyReused
    /// A post asked only for the answer to an earlier one (`InternalHeaders.replayOnly`), and there is none.
    case noEarlierPost
    case missingInternalToken
    case missingActor
    case databaseUnavailable
    /// The service is shutting down (`ServiceStopping`) and takes no new work.
    case stopping
    case busy
    /// Refused to this caller, who may see what they asked about (a member, a reader of a public map).
    case forbidden(String)
    /// Taken already (a map's slug).
    case taken(String)
    /// Something the caller may not know exists answers as if it did not: `notFound` with its own words.
    case absent(String)
}
