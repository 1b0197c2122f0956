import HTTPTypes
import Hummingbird
import OnTheMapShared
import PreparedHTTP
import ServiceKit

/// The hot read answered before the router (see `HTTPServerBuilder.http1(serverName:…)`): a GET of the
/// default list that carries the internal token, while the cache is ready. Anything else is left to the
/// router, which answers these requests the same way from the same cache.
struct HotRead: Sendable {
    let cache: LatestLocationsCache
    let token: InternalToken

    func answer(_ request: PreparedRequest) -> PreparedResponse? {
        // The common spellings of the default list; rarer ones take the router's path to the same cache.
        guard request.method == .GET, request.path == Self.path, LatestListQuery.matches(request.query),
            token.admits(authorization: request.header(.authorization)),
            let list = cache.ready
        else { return nil }
        return list.answer(ifNoneMatch: request.header(.ifNoneMatch))
    }

    static let path = "/v1/StudentLocation"
}
