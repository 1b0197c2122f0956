import Foundation
import Hummingbird
import OnTheMapShared
import ServiceKit
import ServiceLifecycle

/// `GET /v1/StudentLocation/changes?after=<cursor>&wait=<seconds>`: the log in commit order, for the
/// gateway's live stream. With nothing new it waits (long poll) for a change notification, looking again
/// now and then, because an event becomes readable only once no earlier transaction can still commit.
/// `after=now` starts at the head of the log. With `events=false` the page lists nothing and its cursor
/// jumps to the head: for a follower that only needs to know that (and how far) the log moved. With
/// `within=<n>`, a cursor with more than n events after it is not read from: the page is a reset, listing
/// nothing, its cursor the head (the gateway's bound on what a resumed live stream is sent). So is a cursor
/// past the head, which this log never gave (another deployment's, or one from before a restore): followed,
/// it would hold back every change up to it. With `maps=class` (the default map's path only), the page is
/// every class map's instead: their pins' events, each with its map, and `maps`, the class maps that moved
/// (their pins, or their own lives: settings, members, invites), listed with `events=false` too: the
/// gateway follows them all with one long poll, to keep each map's list and live streams.
struct ChangesController<Context: RequestContext>: Sendable {
    let log: any LocationLog
    let watch: LogWatch

    static var pageSize: Int { 500 }
    static var maximumWait: Int { 30 }

    func addRoutes(to group: RouterGroup<Context>) {
        group.get("changes", use: changes)
    }

    @Sendable func changes(_ request: Request, context: Context) async throws -> Response {
        // A class map's feed (`/maps/{slug}/v1/StudentLocation/changes`) lists that map's pins alone. Only the
        // gateway asks for it, having checked that whoever it streams to may read the map.
        let map: String
        if let text = context.parameters.get("slug") {
            guard let slug = MapSlug(text) else { throw MapCommands.notFound }
            map = slug.rawValue
        } else {
            map = ""
        }
        let parameters = request.uri.queryParameters
        let classMaps: Bool
        switch parameters["maps"] {
        case nil: classMaps = false
        case "class"? where map.isEmpty: classMaps = true
        default: throw LocationError.invalidQuery("maps must be class, on the default map's feed.")
        }
        let after: LogPosition
        switch parameters["after"].map(String.init) {
        case nil, "now"?: after = try await log.head()
        case let text?:
            guard let position = LogPosition(text) else { throw LocationError.invalidQuery("after must be a cursor such as 1234-56, or now.") }
            after = position
        }
        let wait = parameters["wait"].flatMap { Int($0) }.map { min(max($0, 0), Self.maximumWait) } ?? 0
        let deadline = ContinuousClock.now + .seconds(wait)
        let listsEvents: Bool
        switch parameters["events"] {
        case nil, "true"?: listsEvents = true
        case "false"?: listsEvents = false
        default: throw LocationError.invalidQuery("events must be true or false.")
        }
        var window: Int?
        if let text = parameters["within"] {
            guard let count = Int(text), count >= 0 else { throw LocationError.invalidQuery("within must be a number of events, 0 or more.") }
            window = count
        }
        if let window {
            let head = try await log.head()
            let tooOld = try await log.positionBefore(latest: window).map { $0 > after } ?? false
            if tooOld || after > head { return .json(LocationChangePage(events: [], cursor: head.description, reset: true).json) }
        }
        if classMaps {
            let page = try await lookAgain(
                until: deadline,
                {
                    let head = try await log.head()
                    var page = try await log.classMapEvents(after: after, limit: Self.pageSize)
                    if page.readThrough == nil, head > after { page.readThrough = head }
                    return page
                },
                untilNew: { $0.readThrough != nil })
            let events = listsEvents ? page.events : []
            let answer = LocationChangePage(
                events: events.map { LocationChangeEvent(id: $0.position.description, change: $0.change, type: $0.type, map: $0.map) },
                cursor: (page.readThrough ?? after).description, maps: page.moved)
            return .json(answer.json)
        }
        guard listsEvents else {
            let head = try await lookAgain(until: deadline, { try await log.head() }, untilNew: { $0 > after })
            return .json(LocationChangePage(events: [], cursor: max(head, after).description).json)
        }
        let page = try await lookAgain(
            until: deadline,
            {
                // A class map's page that found none of its events up to a head read before it may move the
                // cursor to that head: whatever is below it had committed when the page was read. So a quiet
                // map's followers keep up with the log and a resume stays inside the window.
                let head = map.isEmpty ? nil : try await log.head()
                var page = try await log.events(after: after, limit: Self.pageSize, map: map)
                if page.readThrough == nil, let head, head > after { page.readThrough = head }
                return page
            },
            untilNew: { $0.readThrough != nil })
        // A page whose every event was withheld (a hidden pin's) lists none and still moves the cursor on.
        let answer = LocationChangePage(
            events: page.events.map { LocationChangeEvent(id: $0.position.description, change: $0.change, type: $0.type) },
            cursor: (page.readThrough ?? after).description)
        return .json(answer.json)
    }

    /// Reads until the answer shows something new or the deadline passes, looking again at every change
    /// notification and every 250 ms. Once the service is shutting down it answers with what it has: the
    /// drain waits for every request in flight, and the gateway's feed always has a long poll open (it
    /// held each SIGTERM for up to 5 s).
    private func lookAgain<T>(
        until deadline: ContinuousClock.Instant, _ read: () async throws -> T,
        untilNew isNew: (T) -> Bool
    ) async throws -> T {
        var answer = try await read()
        while !isNew(answer), ContinuousClock.now < deadline, !Task.isShuttingDownGracefully {
            await watch.wait(timeout: min(.milliseconds(250), deadline - .now))
            answer = try await read()
        }
        return answer
    }
}
