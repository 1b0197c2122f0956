import OnTheMapShared
import ServiceKit

/// The caller the gateway names in `X-Actor`, read once per header value: the same students write again and
/// again, and reading one (base64url, then JSON) cost about 30,000 instructions, more than the rest of a
/// POST's headers together.
enum ActorHeader {
    private static let read = KeptResults<String, Actor>()

    /// The actor the header names; nil without one, or when it does not name one (`Actor(headerValue:)`).
    static func actor(_ value: String?) -> Actor? {
        guard let value else { return nil }
        return read.value(for: value) { Actor(headerValue: $0) }
    }
}
