import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

/// `DELETE /v1/accounts/me` through the gateway, both services running: afterwards no route shows anything
/// of the student at any moment, a raw read of the database's files finds nothing once both services'
/// `compact` has run, and an erasure cut short by killing both services ends erased when they run again.
@Suite struct AccountErasureTests {
    /// What only the erased student typed (their email last: the routes show it to nobody).
    static let theirs = ["Zephyrine", "Quillfeather", "Xanadu Lighthouse", "zephyrine-links.example", "Moved Quietly", "zephyrine@example.com"]

    struct Student {
        let key: String
        let session: String
        var bearer: [String: String] { ["Authorization": "Bearer \(session)"] }
    }

    static func student(_ gateway: ServiceProcess, _ email: String, _ firstName: String, _ lastName: String) async throws -> Student {
        let account = #"{"email":"\#(email)","password":"correct horse battery","firstName":"\#(firstName)","lastName":"\#(lastName)"}"#
        let (created, signedUp) = try await gateway.request("POST", "/v1/accounts", body: account, token: false)
        guard created == 201, let key = Self.json(signedUp)["account"].flatMap({ ($0 as? [String: Any])?["key"] as? String }) else {
            throw HarnessError("sign-up: \(created) \(signedUp)")
        }
        let login = #"{"udacity":{"username":"\#(email)","password":"correct horse battery"}}"#
        let (status, body) = try await gateway.request("POST", "/v1/session", body: login, token: false)
        guard status == 200, let id = (Self.json(body)["session"] as? [String: Any])?["id"] as? String else {
            throw HarnessError("login: \(status) \(body)")
        }
        return Student(key: key, session: id)
    }

    static func json(_ body: String) -> [String: Any] {
        let text = body.hasPrefix(")]}'\n") ? String(body.dropFirst(5)) : body
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// Posts a pin and answers its id.
    static func post(_ gateway: ServiceProcess, _ student: Student, _ place: String, link: String, latitude: Double) async throws -> String {
        let pin = #"{"mapString":"\#(place)","mediaURL":"\#(link)","latitude":\#(latitude),"longitude":10}"#
        let (status, body) = try await gateway.request("POST", "/v1/StudentLocation", body: pin, headers: student.bearer, token: false)
        guard status == 200, let id = json(body)["objectId"] as? String else { throw HarnessError("post: \(status) \(body)") }
        return id
    }

    /// A moment strictly between what came before and what comes after: the first millisecond of the clock
    /// after the one it read, and it returns once that millisecond has passed too.
    static func moment() async throws -> String {
        let moment = await nextMillisecond(after: Timestamp.now())
        _ = await nextMillisecond(after: moment)
        return moment.iso8601
    }

    /// The clock's time once it has moved past `earlier` (within a millisecond, yielding meanwhile).
    static func nextMillisecond(after earlier: Timestamp) async -> Timestamp {
        var now = Timestamp.now()
        while now <= earlier {
            await Task.yield()
            now = Timestamp.now()
        }
        return now
    }

    /// What the live stream sends in its first seconds to a client resuming after `lastEventID`.
    static func resumedStream(_ gateway: ServiceProcess, after lastEventID: String) async throws -> String {
        let url = "http://127.0.0.1:\(gateway.port)/v1/StudentLocation/events"
        return try await OpenAPITests.run(["curl", "-sN", "-m", "3", "-H", "Last-Event-ID: \(lastEventID)", url], timeout: .seconds(20)).1
    }

    static func count(_ sql: String, _ client: PostgresClient) async throws -> Int {
        try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).collect().first?.decode(Int.self) ?? -1
    }

    static func compact(_ database: TestDatabase) async throws {
        for service in ["locations-service", "auth-gateway"] {
            let (status, output) = try await OpenAPITests.run(["DATABASE_URL=\(database.url)", ServiceProcess.binary(service).path, "compact"])
            #expect(status == 0, "\(service) compact: \(output)")
        }
    }

    @Test func anErasedStudentIsGoneFromEveryRouteAtEveryMomentAndFromTheFiles() async throws {
        let database = try await TestDatabase.create()
        try await withSystem(on: database) { gateway, _ in
            let other = try await Self.student(gateway, "olive@example.com", "Olive", "Other")
            let gone = try await Self.student(gateway, "zephyrine@example.com", "Zephyrine", "Quillfeather")
            var moments = [try await Self.moment()]
            let kept = try await Self.post(gateway, other, "Lima, Peru", link: "https://olive.example/1", latitude: -12)
            moments.append(try await Self.moment())
            let first = try await Self.post(gateway, gone, "Xanadu Lighthouse", link: "https://zephyrine-links.example/a", latitude: 40)
            moments.append(try await Self.moment())
            let moved = #"{"mapString":"Moved Quietly","mediaURL":"https://zephyrine-links.example/b","latitude":41,"longitude":11}"#
            #expect(try await gateway.request("PUT", "/v1/StudentLocation/\(first)", body: moved, headers: gone.bearer, token: false).0 == 200)
            moments.append(try await Self.moment())
            let second = try await Self.post(gateway, gone, "Xanadu Lighthouse 2", link: "https://zephyrine-links.example/c", latitude: 42)
            moments.append(try await Self.moment())
            #expect(try await gateway.request("DELETE", "/v1/StudentLocation/\(second)", headers: gone.bearer, token: false).0 == 200)
            moments.append(try await Self.moment())
            let edit = #"{"mapString":"Lima, Peru","mediaURL":"https://olive.example/2","latitude":-12,"longitude":-77}"#
            #expect(try await gateway.request("PUT", "/v1/StudentLocation/\(kept)", body: edit, headers: other.bearer, token: false).0 == 200)
            moments.append(try await Self.moment())

            // Every read that shows a student's pins, at every moment, and their pins' histories.
            var reads = ["/v1/StudentLocation", "/v1/StudentLocation.geojson", "/v1/StudentLocation/\(first)", "/v1/users/\(gone.key)"]
            for at in moments {
                reads += ["/v1/StudentLocation?at=\(at)", "/v1/StudentLocation.geojson?at=\(at)"]
            }
            let histories = ["/v1/StudentLocation/\(first)/history", "/v1/StudentLocation/\(second)/history"]
            var shown = ""
            for path in reads + histories { shown += try await gateway.request("GET", path, headers: other.bearer, token: false).1 }
            shown += try await Self.resumedStream(gateway, after: LogPosition.start.description)
            #expect(Self.theirs.dropLast().allSatisfy { shown.contains($0) }, "the reads show the student before: \(shown)")
            let keptHistory = try await gateway.request("GET", "/v1/StudentLocation/\(kept)/history", token: false)
            try await withPostgresClient(try database.databaseURL, logger: TestDatabase.logger) { client in
                try await Self.compact(database)
                #expect(try await TestDatabase.filesHolding(Self.theirs, client) == Set(Self.theirs), "the files hold the student before")
            }

            let (status, body) = try await gateway.request("DELETE", "/v1/accounts/me", headers: gone.bearer, token: false)
            #expect(status == 200)
            #expect(body == #"{"erased":{"key":"\#(gone.key)","pins":2}}"#)

            for path in reads {
                let (status, answer) = try await gateway.request("GET", path, headers: other.bearer, token: false)
                #expect(!Self.theirs.contains { answer.contains($0) }, "\(path): \(status) \(answer)")
            }
            for path in histories {
                let (status, answer) = try await gateway.request("GET", path, token: false)
                #expect(status == 404 && !Self.theirs.contains { answer.contains($0) }, "\(path): \(status) \(answer)")
            }
            #expect(try await gateway.request("GET", "/v1/StudentLocation/\(kept)/history", token: false) == keptHistory, "unchanged")
            let (mapStatus, map) = try await gateway.request("GET", "/v1/StudentLocation", token: false)
            #expect(mapStatus == 200 && map.contains("Olive") && map.contains(kept))
            let resumed = try await Self.resumedStream(gateway, after: LogPosition.start.description)
            #expect(!Self.theirs.contains { resumed.contains($0) }, "\(resumed)")
            #expect(resumed.contains(#"{"objectId":"\#(first)","uniqueKey":"""#), "a live map takes the pin off: \(resumed)")

            try await withPostgresClient(try database.databaseURL, logger: TestDatabase.logger) { client in
                try await Self.compact(database)
                let left = try await TestDatabase.relationsHolding(Self.theirs + [gone.key], client)
                #expect(left.isEmpty, "\(left)")
            }
            // A login that fails is counted under the address it names, erased or not: after the scan.
            let login = #"{"udacity":{"username":"zephyrine@example.com","password":"correct horse battery"}}"#
            #expect(try await gateway.request("POST", "/v1/session", body: login, token: false).0 == 403)
            let (again, refusal) = try await gateway.request("DELETE", "/v1/accounts/me", headers: gone.bearer, token: false)
            #expect(again == 401 && refusal.contains("Log in to erase your account."), "\(refusal)")
            let pin = #"{"mapString":"Oslo","mediaURL":"https://a.example","latitude":59,"longitude":10}"#
            #expect(try await gateway.request("POST", "/v1/StudentLocation", body: pin, headers: gone.bearer, token: false).0 == 401)

        }
    }

    @Test func anErasureCutShortByKillingBothServicesEndsErasedWhenTheyRunAgain() async throws {
        let database = try await TestDatabase.create()
        var locations = try ServiceProcess(locationsOn: database.url)
        defer { locations.terminate() }
        try await locations.waitUntilReady()
        let locationsPort = locations.port
        let settings = ["DATABASE_URL": database.url, "LOCATIONS_URL": "http://127.0.0.1:\(locationsPort)"]
        var gateway = try ServiceProcess("auth-gateway", environment: settings)
        defer { gateway.terminate() }
        try await gateway.waitUntilReady()
        let gone = try await Self.student(gateway, "zephyrine@example.com", "Zephyrine", "Quillfeather")
        for n in 0..<2 { _ = try await Self.post(gateway, gone, "Xanadu Lighthouse \(n)", link: "https://zephyrine-links.example", latitude: 1) }

        let (gatewayNow, locationsNow) = (gateway, locations)
        try await withPostgresClient(try database.databaseURL, logger: TestDatabase.logger) { client in
            try await client.withConnection { holder in
                // The student's count row locked: the service's erasure waits for it, half-way through.
                try await holder.query("BEGIN", logger: TestDatabase.logger)
                try await holder.query("SELECT pins FROM locations.pin_counts WHERE unique_key = \(gone.key) FOR UPDATE", logger: TestDatabase.logger)
                let asking = Task { try? await gatewayNow.request("DELETE", "/v1/accounts/me", headers: gone.bearer, token: false, timeout: 30) }
                let waiting = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%erase_student(%' AND wait_event_type = 'Lock'"
                #expect(try await waitFor(within: .seconds(10)) { try await Self.count(waiting, client) == 1 } != nil, "the erasure waits")
                kill(gatewayNow.process.processIdentifier, SIGKILL)
                kill(locationsNow.process.processIdentifier, SIGKILL)
                // A killed service's transaction dies with its connection.
                try await client.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%erase_student(%' AND pid <> pg_backend_pid()",
                    logger: TestDatabase.logger)
                try await holder.query("ROLLBACK", logger: TestDatabase.logger)
                #expect(await asking.value == nil, "the gateway died before it answered")
            }
            #expect(try await Self.count("SELECT count(*) FROM auth.erasures", client) == 1, "the erasure is recorded")
            #expect(try await Self.count("SELECT count(*) FROM locations.pins WHERE first_name = 'Zephyrine'", client) == 2, "nothing erased yet")
            #expect(try await Self.count("SELECT count(*) FROM auth.sessions WHERE revoked_at IS NULL", client) == 0, "the session is over")
        }

        locations = try ServiceProcess(locationsOn: database.url, port: locationsPort)
        try await locations.waitUntilReady()
        gateway = try ServiceProcess("auth-gateway", environment: settings)
        try await gateway.waitUntilReady()
        try await withPostgresClient(try database.databaseURL, logger: TestDatabase.logger) { client async throws in
            #expect(try await waitFor(within: .seconds(20)) { try await Self.count("SELECT count(*) FROM auth.erasures", client) == 0 } != nil)
            #expect(try await Self.count("SELECT count(*) FROM auth.accounts", client) == 0)
            #expect(try await Self.count("SELECT count(*) FROM locations.pins", client) == 0)
            #expect(try await Self.count("SELECT count(*) FROM locations.pin_versions", client) == 0)
            #expect(try await Self.count("SELECT count(*) FROM locations.events WHERE data::text LIKE '%Zephyrine%'", client) == 0)
            #expect(try await Self.count("SELECT count(*) FROM locations.events", client) == 2, "a deletion in place of each erased stream")
        }
        #expect(await gateway.output(contains: "an interrupted erasure is finished"))
    }
}
