import Foundation
import OnTheMapShared
import TestSupport
import Testing

@testable import LocationsService

/// Whole service processes: replicas sharing one database, shutdown by signal, a database outage.
@Suite(.serialized) struct ProcessTests {
    static var actorHeader: [String: String] { [InternalHeaders.actor: TestActors.jarrod.headerValue] }

    static func waitForListener(_ service: ServiceProcess) async throws {
        guard try await service.metric("onthemap_change_listener_connected", reaches: 1, within: .seconds(10)) else {
            throw HarnessError("change listener never connected:\n\(service.output)")
        }
    }

    @Test func aWriteThroughOneReplicaShowsInTheOthersHotReadWithin200ms() async throws {
        let database = try await TestDatabase.create()
        // Both start at once against an empty database: the migration lock lets exactly one migrate.
        let a = try ServiceProcess(locationsOn: database.url)
        let b = try ServiceProcess(locationsOn: database.url)
        try await a.waitUntilReady()
        try await b.waitUntilReady()
        try await Self.waitForListener(b)

        var delays: [Duration] = []
        for round in 0..<5 {
            // Warm b's cache so the change must reach it through a notification.
            _ = try await b.get("/v1/StudentLocation")
            let before = try await b.get("/v1/StudentLocation")
            let (status, answer) = try await a.request("POST", "/v1/StudentLocation", body: TestPin.json, headers: Self.actorHeader)
            #expect(status == 200)
            let objectId = try #require((try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])?["objectId"] as? String)
            #expect(!before.1.contains(objectId))
            // b tells nothing when the notification reaches it: its hot read is looked at until it shows the pin.
            let delay = try await waitFor(within: .seconds(5), every: .milliseconds(2)) {
                try await b.get("/v1/StudentLocation").1.contains(objectId)
            }
            #expect(delay != nil, "round \(round): never arrived")
            delays.append(delay ?? .seconds(5))
        }
        #expect(delays.allSatisfy { $0 < .milliseconds(200) }, "delays: \(delays)")
        a.terminate()
        b.terminate()
    }

    @Test func sigtermFinishesTheRequestInFlightThenExitsZero() async throws {
        let database = try await TestDatabase.create()
        let service = try ServiceProcess(locationsOn: database.url, logLevel: "debug")
        try await service.waitUntilReady()

        let connection = try RawConnection(port: service.port)
        let head = """
            POST /v1/StudentLocation HTTP/1.1\r
            Host: 127.0.0.1\r
            Authorization: Bearer \(TestDatabase.internalToken)\r
            \(InternalHeaders.actor): \(TestActors.jarrod.headerValue)\r
            Content-Type: application/json\r
            Content-Length: \(TestPin.json.utf8.count)\r
            \r

            """
        let split = TestPin.json.index(TestPin.json.startIndex, offsetBy: 20)
        try connection.send(head + TestPin.json[..<split])
        // The service logs each request as it starts (LOG_LEVEL=debug), and the signal once its group has it:
        // the rest of the body goes only after both, so it is a request in flight that the drain must wait for.
        #expect(await service.output(contains: "hb.request.method=POST hb.request.path=/v1/StudentLocation"), "\(service.output)")
        service.terminate()
        #expect(await service.output(contains: "Signal caught. Shutting down the group."), "\(service.output)")
        #expect(service.process.isRunning, "the service must wait for the request it is reading")
        try connection.send(String(TestPin.json[split...]))
        let reply = try await connection.receiveResponse()
        #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply)")
        #expect(reply.contains("\"objectId\":"))
        let status = await service.waitForExit(timeout: .seconds(10))
        #expect(status == 0, "exit status \(String(describing: status))\n\(service.output)")
    }

    /// The gateway's live feed always has a long poll open here: a drain that waited it out held every
    /// SIGTERM for up to 5 s. The poll is answered at once, with the cursor it was given.
    @Test func sigtermAnswersALongPollAtOnceThenExitsZero() async throws {
        let database = try await TestDatabase.create()
        let service = try ServiceProcess(locationsOn: database.url, logLevel: "debug")
        try await service.waitUntilReady()
        let (_, head) = try await service.get("/v1/StudentLocation/changes?after=now&wait=0")
        let cursor = try #require(head.firstMatch(of: /"cursor":"([0-9-]+)"/)?.1)

        let connection = try RawConnection(port: service.port)
        try connection.send(
            "GET /v1/StudentLocation/changes?after=\(cursor)&wait=30 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer \(TestDatabase.internalToken)\r\n\r\n")
        // The service logs each request as it starts (LOG_LEVEL=debug).
        #expect(await service.output(contains: "after=\(cursor)&wait=30"), "\(service.output)")
        let stopped = ContinuousClock.now
        service.terminate()
        let reply = try await connection.receiveResponse()
        #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply)")
        #expect(reply.hasSuffix(#"{"events":[],"cursor":"\#(cursor)"}"#), "\(reply)")
        let status = await service.waitForExit(timeout: .seconds(10))
        #expect(status == 0, "exit status \(String(describing: status))\n\(service.output)")
        // 250 ms at most between two looks at the log, and the drain; the 30 s poll would have held it.
        #expect(ContinuousClock.now - stopped < .seconds(3))
    }

    @Test func aDatabaseOutageGivesQuick503sAndTheServiceRecoversWithoutRestart() async throws {
        let database = try await TestDatabase.create()
        let target = URLComponents(string: database.url)!
        let proxy = TCPProxy(upstreamHost: target.host!, upstreamPort: target.port!)
        try await proxy.start()
        var viaProxy = target
        viaProxy.port = proxy.port
        let service = try ServiceProcess(locationsOn: viaProxy.string!)
        try await service.waitUntilReady()
        #expect(try await service.request("POST", "/v1/StudentLocation", body: TestPin.json, headers: Self.actorHeader).0 == 200)
        let ready = try await ServiceProcess.healthCheck("locations-service", port: service.port)
        #expect(ready.status == 0 && ready.output == "locations-service on 127.0.0.1:\(service.port) is ready\n", "\(ready)")

        await proxy.cut()
        for (method, path, body) in [
            ("GET", "/v1/StudentLocation?limit=5", nil), ("POST", "/v1/StudentLocation", TestPin.json),
            ("GET", "/v1/StudentLocation", nil),
        ] {
            let started = ContinuousClock.now
            let (status, answer) = try await service.request(method, path, body: body, headers: Self.actorHeader)
            let took = ContinuousClock.now - started
            #expect(status == 503, "\(method) \(path): \(answer)")
            #expect(answer == #"{"code":100,"error":"The database is unavailable; try again shortly."}"#)
            #expect(took < .seconds(3), "\(method) \(path) took \(took)")
        }
        #expect(try await service.get("/readyz", token: false).0 == 503)
        // What a container's health check sees: not ready, and why.
        let down = try await ServiceProcess.healthCheck("locations-service", port: service.port)
        #expect(down.status == 1, "\(down)")
        #expect(down.output.hasPrefix("locations-service on 127.0.0.1:\(service.port) is not ready: HTTP/1.1 503 Service Unavailable"), "\(down)")
        #expect(down.output.contains(#""status":"unavailable""#) && down.output.hasSuffix("}\n"), "\(down)")
        #expect(service.process.isRunning)

        try await proxy.start()
        let recovered = try await waitFor(within: .seconds(20), every: .milliseconds(100)) {
            try await service.request("POST", "/v1/StudentLocation", body: TestPin.json, headers: Self.actorHeader).0 == 200
        }
        #expect(recovered != nil, "\(service.output)")
        let (status, list) = try await service.get("/v1/StudentLocation")
        #expect(status == 200)
        let results = (try JSONSerialization.jsonObject(with: Data(list.utf8)) as? [String: Any])?["results"] as? [Any]
        #expect(results?.count == 2)
        service.terminate()
        await proxy.cut()
    }

    @Test func theHealthCheckOfAPortNobodyListensOnSaysSoAndFails() async throws {
        let port = freePort()
        let answer = try await ServiceProcess.healthCheck("locations-service", port: port)
        #expect(answer.status == 1)
        #expect(answer.output == "locations-service on 127.0.0.1:\(port) is not ready: cannot connect: Connection refused\n")
    }
}
