/// Headers that only travel between the gateway and the services behind it.
public enum InternalHeaders {
    /// Who acts: base64url (no padding) of `{"key":…,"firstName":…,"lastName":…}`. See `Actor`.
    public static let actor = "X-Actor"
    /// Carried through from the client so a retried POST appends nothing new.
    public static let idempotencyKey = "Idempotency-Key"
    /// On a POST with an idempotency key: append nothing, answer only the earlier post with that key (412
    /// when there is none). The gateway asks so for a write past its limit, whose earlier attempt may have
    /// been made.
    public static let replayOnly = "X-Replay-Only"
    /// On the answer to a POST: it is the answer to an earlier post with the same idempotency key, and
    /// nothing was appended.
    public static let replayed = "Idempotent-Replayed"
    /// Kept from the client or made by the gateway; appears in every log line of the request.
    public static let requestID = "X-Request-ID"
}
