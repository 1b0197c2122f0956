import Foundation
import HTTPTypes
import ServiceKit

/// The default list answered before the router (see `HTTPServerBuilder.http1(serverName:…)`), while the
/// gateway's copy can be trusted. Anything else is left to the router, which answers these requests the
/// same way from the same copy.
struct LatestListHotRead: Sendable {
    let latest: LatestListCache

    func answer(_ request: HTTPRequest) -> PreparedResponse? {
        guard let target = request.path else { return nil }
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard LocationsProxyController.mounts.contains(where: { $0.0 == parts[0] }),
              LatestListCache.isDefaultList(parts.count > 1 ? String(parts[1]) : nil),
              let list = latest.current
        else { return nil }
        var answer = list.answer(ifNoneMatch: request.headerFields[.ifNoneMatch])
        answer.headers[.requestID] = RequestIDMiddleware.acceptable(request.headerFields[.requestID]) ?? UUID().uuidString.lowercased()
        return answer
    }
}
