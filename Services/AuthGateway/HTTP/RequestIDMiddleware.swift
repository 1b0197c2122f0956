import Foundation
import HTTPTypes
import Hummingbird
import OnTheMapShared

/// Keeps the client's `X-Request-ID` (or makes one), puts it in every log line of the request, sends it on
/// to locations-service, and returns it in the response, so one request can be followed across both logs.
struct RequestIDMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    static var header: HTTPField.Name { .requestID }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let id = Self.acceptable(request.headers[Self.header]) ?? UUID().uuidString.lowercased()
        context.requestID = id
        context.logger[metadataKey: "request_id"] = "\(id)"
        var response = try await next(request, context)
        response.headers[Self.header] = id
        return response
    }

    /// Printable ASCII of sensible length, so a client cannot forge log lines.
    static func acceptable(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 128, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return value
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name(InternalHeaders.requestID)!
}

