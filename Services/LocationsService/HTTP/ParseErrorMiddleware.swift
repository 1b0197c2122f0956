import Hummingbird
import Logging
import OnTheMapShared
import PostgresNIO
import ServiceKit

/// The one place where failures become HTTP answers: a status and a Parse-style `{code, error}` body,
/// whatever the failure (a rule, a missing route, a database outage).
struct ParseErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as LocationError {
            OperatorMetrics.refused(caseName(error))
            return Self.response(for: error)
        } catch let error as HTTPError {
            switch error.status {
            case .contentTooLarge: return Self.response(for: .bodyTooLarge(limit: LocationsController<Context>.maximumBodySize))
            case .notFound:
                return Self.response(status: .notFound, ParseError(.objectNotFound, "No route for \(request.method) \(request.uri.path)."))
            case .methodNotAllowed:
                return Self.response(
                    status: .methodNotAllowed, ParseError(.operationForbidden, "\(request.method) is not allowed on \(request.uri.path)."))
            default: return Self.response(status: error.status, ParseError(.internalServerError, error.body ?? error.status.reasonPhrase))
            }
        } catch is ServiceStopping {
            OperatorMetrics.refused(caseName(LocationError.stopping))
            return Self.response(for: .stopping)
        } catch  where Database.isOutage(error) {
            context.logger.warning("database unavailable", metadata: ["error": "\(String(reflecting: error))"])
            OperatorMetrics.refused(caseName(LocationError.databaseUnavailable))
            return Self.response(for: .databaseUnavailable)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            OperatorMetrics.refused("internalFailure")
            return Self.response(status: .internalServerError, ParseError(.internalServerError, "Internal server error."))
        }
    }

    static func response(for error: LocationError) -> Response {
        switch error {
        case .notFound:
            response(status: .notFound, ParseError(.objectNotFound, "Object not found."))
        case .notOwner:
            response(status: .forbidden, ParseError(.operationForbidden, "Only the pin's owner may change or delete it."))
        case .invalid(let message):
            response(status: .badRequest, ParseError(.validationFailed, message))
        case .unreadableBody(let reason):
            response(status: .badRequest, reason.parseError)
        case .invalidQuery(let message):
            response(status: .badRequest, ParseError(.invalidQuery, message))
        case .bodyTooLarge(let limit):
            response(status: .contentTooLarge, ParseError(.validationFailed, "The request body is larger than \(limit / 1024) KiB."))
        case .versionMismatch(let expected, let current):
            response(
                status: .preconditionFailed,
                ParseError(
                    .validationFailed, "The pin has changed: If-Match \(expected) does not match its current version \"\(current)\"."))
        case .idempotencyKeyReused:
            response(
                status: .unprocessableContent,
                ParseError(
                    .validationFailed, "This Idempotency-Key was already used for a different request."))
        case .noEarlierPost:
            response(status: .preconditionFailed, ParseError(.objectNotFound, "No earlier post has this Idempotency-Key."))
        case .missingInternalToken:
            response(status: .unauthorized, ParseError(.invalidSessionToken, "This service only answers requests that carry the internal token."))
        case .missingActor:
            response(status: .unauthorized, ParseError(.invalidSessionToken, "Writes need the acting account in a valid X-Actor header."))
        case .databaseUnavailable:
            response(
                status: .serviceUnavailable, ParseError(.connectionFailed, "The database is unavailable; try again shortly."),
                headers: [.retryAfter: "1"])
        case .stopping:
            response(
                status: .serviceUnavailable, ParseError(.connectionFailed, "The service is restarting; try again shortly."),
                headers: [.retryAfter: "1"])
        case .busy:
            response(status: .conflict, ParseError(.internalServerError, "The pin is being changed by other requests; try again."))
        case .forbidden(let message):
            response(status: .forbidden, ParseError(.operationForbidden, message))
        case .taken(let message):
            response(status: .conflict, ParseError(.duplicateValue, message))
        case .absent(let message):
            response(status: .notFound, ParseError(.objectNotFound, message))
        }
    }

    static func response(status: HTTPResponse.Status, _ error: ParseError, headers: HTTPFields = [:]) -> Response {
        .json(error.json, status: status, headers: headers)
    }
}
