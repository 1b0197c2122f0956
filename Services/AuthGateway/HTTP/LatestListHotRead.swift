import HTTPTypes
import OnTheMapShared
import PreparedHTTP
import ServiceKit

/// The default list answered before the router (see `HTTPServerBuilder.http1(serverName:…)`), while the
/// gateway's copy can be trusted. Anything else is left to the router, which answers these requests the
/// same way from the same copy.
struct LatestListHotRead: Sendable {
    let latest: LatestListCache

    func answer(_ request: PreparedRequest) -> PreparedResponse? {
        let path = request.path
        guard request.method == .GET,
            LocationsProxyController.mounts.contains(where: { $0.0 == path }),
            LatestListQuery.matches(request.query),
            let list = latest.current
        else { return nil }
        var answer = list.answer(ifNoneMatch: request.header(.ifNoneMatch))
        answer.append(HTTPField(name: .requestID, value: RequestIDMiddleware.resolve(request.header(.requestID))))
        return answer
    }
}
