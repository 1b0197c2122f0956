/// Headers that only travel between the gateway and the services behind it.
public enum InternalHeaders {
    /// Who acts: base64url (no padding) of `{"key":…,"firstName":…,"lastName":…}`. See `Actor`.
    public static let actor = "X-Actor"
    /// Carried through from the client so a retried POST appends nothing new.
    public static let idempotencyKey = "Idempotency-Key"
    /// Kept from the client or made by the gateway; appears in every log line of the request.
    public static let requestID = "X-Request-ID"
}
