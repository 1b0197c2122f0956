import AsyncHTTPClient
import Foundation
import NIOCore
import OnTheMapShared

/// How the live feed's connection is doing, for a program that wants to say so.
public enum LiveFeedStatus: Sendable {
    case connected
    /// The connection is gone; the feed connects again after `retryIn`, resuming after the last event.
    case disconnected(OnTheMapError, retryIn: Duration)
}

/// What the live feed delivers, in the order it happened.
public enum LiveUpdate: Sendable, Equatable {
    case change(LocationChangeEvent)
    /// The gateway could not send everything missed while the feed was away (more than it replays to a
    /// resumed stream): reload the pins (`list()`), then go on with the changes that follow.
    case reset
}

extension OnTheMapClient {
    /// `GET /v1/StudentLocation/events`: pin changes as they happen, for as long as the sequence is iterated;
    /// on a class map, that map's changes alone.
    ///
    /// After a dropped connection or a gateway restart it connects again with `Last-Event-ID` set to the
    /// last event it delivered, so nothing is missed and nothing comes twice. It ends only when its consumer
    /// stops, or with an error the gateway will not get over by waiting (a refused request). A resume the
    /// gateway cannot replay delivers `.reset`.
    public func liveChanges(
        after lastEventID: String? = nil, maximumPause: Duration = .seconds(2),
        onStatus: (@Sendable (LiveFeedStatus) -> Void)? = nil
    ) -> AsyncThrowingStream<LiveUpdate, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LiveUpdate.self)
        let task = Task {
            var last = lastEventID
            var pause = Duration.milliseconds(250)
            while !Task.isCancelled {
                let failure: OnTheMapError
                do {
                    var headers = [("Accept", "text/event-stream")]
                    if let last { headers.append(("Last-Event-ID", last)) }
                    let request = request(
                        .GET, mapPrefix + "/v1/StudentLocation/events", headers: headers, authorized: map != nil && session != nil)
                    exchangeLog?(ExchangeLog.describe(request, hiding: []))
                    let response = try await http.execute(request.httpClientRequest, deadline: .distantFuture)
                    exchangeLog?("< \(response.status.code) (event stream)")
                    if response.status.code != 200 {
                        let buffer = try await response.body.collect(upTo: 64 * 1024)
                        let answer = Answer(status: Int(response.status.code), headers: response.headers, body: Array(buffer.readableBytesView))
                        let error = locationRouteError(answer)
                        switch error {
                        case .throttled(let seconds, _):
                            onStatus?(.disconnected(error, retryIn: .seconds(seconds ?? 10)))
                            try await Task.sleep(for: .seconds(seconds ?? 10))
                            continue
                        case .serverFault: throw error
                        default:
                            continuation.finish(throwing: error)
                            return
                        }
                    }
                    onStatus?(.connected)
                    pause = .milliseconds(250)
                    var parser = ServerSentEventParser()
                    for try await buffer in response.body {
                        for event in parser.consume(buffer.readableBytesView) {
                            if event.event == "reset", let id = event.id {
                                last = id
                                continuation.yield(.reset)
                                continue
                            }
                            guard let change = Self.change(event) else { continue }
                            // The gateway sends nothing at or before the id we resumed from; this keeps
                            // that promise even against a gateway that does not.
                            if let last, let seen = LogPosition(last), let position = LogPosition(change.id), position <= seen { continue }
                            last = change.id
                            continuation.yield(.change(change))
                        }
                    }
                    failure = .unreachable(gateway: gateway, reason: "the live feed ended")
                } catch let error as OnTheMapError {
                    failure = error
                } catch is CancellationError {
                    break
                } catch {
                    failure = unreachable(error)
                }
                if Task.isCancelled { break }
                onStatus?(.disconnected(failure, retryIn: pause))
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, maximumPause)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// A frame of the feed as a change; nil for anything else (comments, heartbeats, unknown events).
    static func change(_ event: ServerSentEvent) -> LocationChangeEvent? {
        guard let id = event.id, let type = event.event.flatMap(LocationEventType.init(rawValue:)) else { return nil }
        let data = Data(event.data.utf8)
        let decoder = JSONDecoder()
        switch type {
        case .posted, .updated, .unhidden:
            guard let location = try? decoder.decode(StudentLocation.self, from: data) else { return nil }
            return LocationChangeEvent(id: id, change: .upserted(location), type: type)
        case .deleted, .hidden:
            guard let deletion = try? decoder.decode(LocationDeleted.self, from: data) else { return nil }
            return LocationChangeEvent(id: id, change: .deleted(deletion), type: type)
        }
    }
}
