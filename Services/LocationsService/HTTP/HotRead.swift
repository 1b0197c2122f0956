import HTTPTypes
import Hummingbird
import HummingbirdCore
import ServiceKit

/// The hot read answered before the router (see `HTTPServerBuilder.http1(serverName:…)`): a GET of the
/// default list that carries the internal token, while the cache is ready. Anything else is left to the
/// router, which answers these requests the same way from the same cache.
struct HotRead: Sendable {
    let cache: LatestLocationsCache
    let token: InternalToken

    func answer(_ request: HTTPRequest) -> PreparedResponse? {
        guard let target = request.path, target.hasPrefix(Self.path) else { return nil }
        let uri = URI(target)
        guard uri.path == Self.path, token.admits(authorization: request.headerFields[.authorization]),
              (try? ListQueryParser.parse(uri.queryParameters)) == .latest,
              let list = cache.ready
        else { return nil }
        return list.answer(ifNoneMatch: request.headerFields[.ifNoneMatch])
    }

    static let path = "/v1/StudentLocation"
}
