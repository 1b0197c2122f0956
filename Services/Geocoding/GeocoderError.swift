/// Why an upstream geocoder gave no answer; the gateway maps each to one HTTP status.
public enum GeocoderError: Error, Hashable, Sendable {
    /// The upstream could not be reached: refused, reset, or not resolvable.
    case upstreamUnavailable
    /// The upstream did not answer within the configured time.
    case upstreamTimedOut
    /// The upstream answered, but not with a usable result: a non-2xx status, or a body that is not
    /// Nominatim's JSON (then `status` is the one it came with).
    case upstreamFailed(status: Int)
}
