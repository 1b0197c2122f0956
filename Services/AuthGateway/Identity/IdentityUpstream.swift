import AsyncHTTPClient
import Logging
import NIOCore
import ServiceKit

/// One call to an outside identity service (a Udacity-compatible API, an OpenID Connect issuer, Facebook's
/// Graph API) within its deadline, counted in the operator metrics as `identity-provider`: the status and the
/// body, or why there was none, kept apart so the user can tell an outage from silence.
enum IdentityUpstream {
    /// No answer of an identity service is longer (a JWKS of a few keys, a profile).
    static let maximumAnswerBytes = 1 << 20

    static func call(
        _ request: HTTPClientRequest, on client: HTTPClient, timeout: TimeAmount, naming name: String, logger: Logger
    ) async throws(LoginError) -> (status: Int, body: ByteBuffer) {
        let start = ContinuousClock.now
        do {
            let response = try await client.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: maximumAnswerBytes)
            OperatorMetrics.called(.identityProvider, result: .ok, since: start)
            return (Int(response.status.code), body)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            OperatorMetrics.called(.identityProvider, result: .timeout, since: start)
            logger.warning("\(name) did not answer in time", metadata: ["error": "\(error)"])
            throw .upstreamTimedOut
        } catch {
            OperatorMetrics.called(.identityProvider, result: .unavailable, since: start)
            logger.warning("\(name) unreachable", metadata: ["error": "\(String(reflecting: error))"])
            throw .upstreamUnavailable
        }
    }
}
