import HTTPTypes
import Hummingbird
import OnTheMapShared
import ServiceKit
import Synchronization

/// Keeps the client's `X-Request-ID` (or makes one), puts it in every log line of the request, sends it on
/// to locations-service, and returns it in the response, so one request can be followed across both logs.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    static var header: HTTPField.Name { .requestID }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let id = Self.resolve(request.headers[Self.header])
        context.requestID = id
        context.logger[metadataKey: "request_id"] = "\(id)"
        // The answers a route gives at both doors read the id from the request (`resolve`).
        var request = request
        if request.headers[Self.header] != id {
            var head = request.head
            head.headerFields[Self.header] = id
            request = Request(head: head, body: request.body)
        }
        var response = try await next(request, context)
        response.headers[Self.header] = id
        return response
    }

    /// The client's id when it is acceptable, else a new one: for both doors' answers.
    static func resolve(_ header: String?) -> String {
        acceptable(header) ?? make()
    }

    /// A new id, unique across replicas and restarts: this process's random prefix and a counter.
    /// (Cheaper than a UUID, which showed in the hot read's profile reading the system's random source.)
    static func make() -> String {
        id(counter.add(1, ordering: .relaxed).newValue)
    }

    /// The id numbered `count`: the prefix, a dash, and `count` in lower-case hexadecimal.
    static func id(_ count: UInt64) -> String {
        var digits = 1
        while digits < 16, count >> (4 * digits) != 0 { digits += 1 }
        // Written in place, once: the prefix, a dash and the counter's digits concatenated made three
        // strings for every answer the gateway gives.
        return String(unsafeUninitializedCapacity: prefix.utf8.count + 1 + digits) { buffer in
            var end = buffer.initialize(fromContentsOf: prefix.utf8)
            buffer[end] = UInt8(ascii: "-")
            end += 1
            for shift in stride(from: 4 * (digits - 1), through: 0, by: -4) {
                buffer[end] = hexDigit(UInt8(truncatingIfNeeded: count >> UInt64(shift)) & 0xF)
                end += 1
            }
            return end
        }
    }

    private static let prefix: String = {
        let random = UInt64.random(in: .min ... .max)
        let hex = String(random, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }()
    private static let counter = Atomic<UInt64>(0)

    /// Printable ASCII of sensible length, so a client cannot forge log lines.
    static func acceptable(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 128, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return value
    }
}
