import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway

/// Class maps through the gateway, with a real locations-service and PostgreSQL behind it: an app pointed
/// at `/maps/{slug}/` works as at `/`, and whoever may not read a map finds nothing there.
@Suite struct ClassMapTests {
    /// A teacher's members-only map `slug`, with `student` joined through the invite's address.
    static func classMap(
        _ client: any TestClientProtocol, _ slug: String, teacher: Student, students: [Student], read: String = "members"
    ) async throws -> [String: Any] {
        let created = try await client.send(
            .post, "/v1/maps", body: #"{"slug":"\#(slug)","name":"Class \#(slug)","read":"\#(read)","post":"members"}"#,
            headers: [teacher.bearer])
        #expect(created.status == .created, "\(created.body)")
        let invite = try await client.send(.post, "/v1/maps/\(slug)/invites", headers: [teacher.bearer])
        #expect(invite.status == .created, "\(invite.body)")
        let code = try #require(invite.json["code"] as? String)
        for student in students {
            let joined = try await client.send(.post, "/v1/maps/\(slug)/members", body: #"{"code":"\#(code)"}"#, headers: [student.bearer])
            #expect(joined.status == .created, "\(joined.body)")
        }
        return invite.json
    }

    /// The contract's requests (`CONTRACT.md`: session, user, list, post, put, delete, on the v1 and the
    /// legacy Parse paths) sent to a class map's base URL answer as they do at the default map's, in the
    /// same shapes, each map keeping its own pins.
    @Test func aClassMapsBaseURLAnswersTheContractAsTheDefaultMapDoes() async throws {
        // Room for both maps' writes within one burst.
        try await withGateway(configure: { $0.writeLimit.burst = 20 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com", firstName: "Grace", lastName: "Hopper")
            let student = try await client.signUp(Student("app@example.com", firstName: "Ada", lastName: "Lovelace"))
            _ = try await Self.classMap(client, "ios-2027", teacher: teacher, students: [try await client.logIn(student)])
            var shapes: [String: [String]] = [:]
            for base in ["", "/maps/ios-2027"] {
                let login = try await client.send(
                    .post, "\(base)/v1/session", body: #"{"udacity":{"username":"app@example.com","password":"\#(student.password)"}}"#)
                #expect(login.status == .ok)
                #expect(login.body.hasPrefix(")]}'\n"))
                let token = try #require((login.json["session"] as? [String: Any])?["id"] as? String)
                let bearer = HTTPField(name: .authorization, value: "Bearer \(token)")
                let user = try await client.send(.get, "\(base)/v1/users/\(student.key)", headers: [bearer])
                #expect(user.status == .ok)
                #expect((user.json["user"] as? [String: Any])?["last_name"] as? String == "Lovelace")

                let body =
                    #"{"uniqueKey":"1234","firstName":"John","lastName":"Doe","mapString":"Lagos\#(base)","mediaURL":"https://udacity.com","latitude":6.45,"longitude":3.39}"#
                let posted = try await client.send(.post, "\(base)/v1/StudentLocation", body: body, headers: [bearer])
                #expect(posted.status == .ok)
                let legacy = try await client.send(.post, "\(base)/parse/classes/StudentLocation", body: body, headers: [bearer])
                #expect(legacy.status == .created)
                let objectId = try #require(posted.json["objectId"] as? String)
                let list = try await client.send(.get, "\(base)/v1/StudentLocation?limit=100&order=-updatedAt", headers: [bearer])
                let results = try #require(list.json["results"] as? [[String: Any]])
                #expect(results.count == 2)
                #expect(Set(results.compactMap { $0["mapString"] as? String }) == ["Lagos\(base)"])
                #expect(results.allSatisfy { $0["firstName"] as? String == "Ada" })
                let legacyList = try await client.send(.get, "\(base)/1/classes/StudentLocation", headers: [bearer])
                #expect((legacyList.json["results"] as? [[String: Any]])?.count == 2)
                let put = try await client.send(.put, "\(base)/v1/StudentLocation/\(objectId)", body: #"{"mapString":"Abuja"}"#, headers: [bearer])
                #expect(put.status == .ok)
                let deleted = try await client.send(.delete, "\(base)/v1/StudentLocation/\(objectId)", headers: [bearer])
                #expect(deleted.status == .ok)
                #expect(deleted.body == "{}")
                shapes[base] = [posted.body, legacy.body, put.body].map { Self.shape($0) } + [Self.shape(list.body)]
            }
            #expect(shapes[""] == shapes["/maps/ios-2027"])
        }
    }

    /// A body's keys in order, with every value replaced: what two answers must share to have one shape.
    static func shape(_ body: String) -> String {
        body.replacing(try! Regex(#":("([^"\\]|\\.)*"|-?[0-9.eE+-]+)"#), with: ":_")
    }

    @Test func aNonMemberFindsNothingOnAMembersOnlyMapNotEvenItsLiveStream() async throws {
        try await withGateway { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("t2@example.com")
            let member = try await client.signedUpAndLoggedIn("m2@example.com")
            let outsider = try await client.signedUpAndLoggedIn("o2@example.com")
            _ = try await Self.classMap(client, "secret-class", teacher: teacher, students: [member])
            let body = #"{"mapString":"Lima","mediaURL":"https://example.com","latitude":-12.05,"longitude":-77.04}"#
            let pin = try #require(
                try await client.send(.post, "/maps/secret-class/v1/StudentLocation", body: body, headers: [member.bearer]).json["objectId"]
                    as? String)
            let base = "/maps/secret-class"
            let paths = [
                "\(base)/v1/StudentLocation", "\(base)/parse/classes/StudentLocation", "\(base)/1/classes/StudentLocation",
                "\(base)/v1/StudentLocation/\(pin)", "\(base)/v1/StudentLocation/\(pin)/history", "\(base)/v1/StudentLocation.geojson",
                "\(base)/v1/StudentLocation/events", "/v1/maps/secret-class",
            ]
            for headers in [[], [outsider.bearer]] {
                for path in paths {
                    let reply = try await client.send(.get, path, headers: headers)
                    #expect(reply.status == .notFound, "\(path): \(reply.status) \(reply.body)")
                    #expect(reply.json["code"] as? Int == 101)
                    #expect(!reply.body.contains("Lima"))
                }
            }
            // The member reads it all, and the map it is on does not leak to the default map.
            #expect(try await client.send(.get, "\(base)/v1/StudentLocation/\(pin)", headers: [member.bearer]).status == .ok)
            #expect(try await client.send(.get, "/v1/StudentLocation/\(pin)", headers: [member.bearer]).status == .notFound)
            #expect(!(try await client.send(.get, "/v1/StudentLocation").body.contains("Lima")))
            // The map's GeoJSON answers a browser's preflight, as the default map's does.
            let preflight = try await client.send(.options, "\(base)/v1/StudentLocation.geojson")
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == "*")
            // Logging in under a slug spelled as no slug is: not found, as everything under it.
            let login = try await client.send(
                .post, "/maps/SECRET-CLASS/v1/session", body: #"{"udacity":{"username":"m2@example.com","password":"\#(member.password)"}}"#)
            #expect(login.status == .notFound)
            // A slug spelled otherwise names no map.
            for spelling in ["/maps/SECRET-CLASS", "/maps/secret-class.", "/maps/secret--class", "/maps/%73ecret-class", "/maps/.."] {
                let reply = try await client.send(.get, "\(spelling)/v1/StudentLocation", headers: [member.bearer])
                #expect(reply.status == .notFound, "\(spelling): \(reply.status)")
            }
        }
    }

    @Test func invitesAreWholeAddressesAndCreatorsCanBeLimited() async throws {
        try await withGateway(configure: { $0.mapCreators = try? MapCreators(setting: "teacher3@example.com") }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher3@example.com")
            let student = try await client.signedUpAndLoggedIn("student3@example.com")
            let refused = try await client.send(.post, "/v1/maps", body: #"{"slug":"not-mine","name":"x"}"#, headers: [student.bearer])
            #expect(refused.status == .forbidden)
            #expect(refused.json["code"] as? Int == 119)
            let anonymous = try await client.send(.post, "/v1/maps", body: #"{"slug":"not-mine","name":"x"}"#)
            #expect(anonymous.status == .unauthorized)
            let invite = try await Self.classMap(client, "ios-2028", teacher: teacher, students: [])
            let url = try #require(invite["url"] as? String)
            #expect(url.hasPrefix("http://"))
            #expect(url.hasSuffix("/maps/ios-2028/join/\(invite["code"] as? String ?? "")"))
            let crossSite = try await client.send(
                .post, "/v1/maps/ios-2028/members", body: #"{"code":"\#(invite["code"] as? String ?? "")"}"#,
                headers: [student.bearer, HTTPField(name: .origin, value: "https://evil.example")])
            #expect(crossSite.status == .forbidden)
            let mine = try await client.send(.get, "/v1/maps", headers: [student.bearer])
            #expect((mine.json["results"] as? [Any])?.isEmpty == true)
        }
    }

    /// A student's writes (a join among them) are counted on each map apart: the burst spent on one class's
    /// map leaves their posts on another's, and on the default map, as they were.
    @Test func eachMapCountsAStudentsWritesApart() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 3 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("t5@example.com")
            let student = try await client.signedUpAndLoggedIn("s5@example.com")
            _ = try await Self.classMap(client, "limit-a", teacher: teacher, students: [student])
            _ = try await Self.classMap(client, "limit-b", teacher: teacher, students: [student])
            let body = #"{"mapString":"Kigali","mediaURL":"https://example.com","latitude":-1.94,"longitude":30.06}"#
            // The join was the first of three on each map.
            for _ in 0..<2 {
                #expect(try await client.send(.post, "/maps/limit-a/v1/StudentLocation", body: body, headers: [student.bearer]).status == .ok)
            }
            let spent = try await client.send(.post, "/maps/limit-a/v1/StudentLocation", body: body, headers: [student.bearer])
            #expect(spent.status == .tooManyRequests)
            #expect(spent.json["code"] as? Int == 155)
            #expect(try await client.send(.post, "/maps/limit-b/v1/StudentLocation", body: body, headers: [student.bearer]).status == .ok)
            #expect(try await client.send(.post, "/v1/StudentLocation", body: body, headers: [student.bearer]).status == .ok)
        }
    }

    /// A change on one map reaches that map's live streams alone.
    @Test func aMapsLiveStreamCarriesItsOwnChangesOnly() async throws {
        try await withGateway { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("t4@example.com")
            let student = try await client.signedUpAndLoggedIn("s4@example.com")
            _ = try await Self.classMap(client, "live-a", teacher: teacher, students: [student])
            _ = try await Self.classMap(client, "live-b", teacher: teacher, students: [student])
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(client.port!)/maps/live-b/v1/StudentLocation/events")
            request.headers.add(name: "Authorization", value: "Bearer \(teacher.token)")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(response.status == .ok)
            let onB = LiveStreamTests.EventReader(response)
            let body = #"{"mapString":"Accra","mediaURL":"https://example.com","latitude":5.6,"longitude":-0.19}"#
            let onA = try await client.send(.post, "/maps/live-a/v1/StudentLocation", body: body, headers: [student.bearer])
            #expect(onA.status == .ok)
            let posted = try await client.send(.post, "/maps/live-b/v1/StudentLocation", body: body, headers: [student.bearer])
            let frame = try await onB.next()
            // The first frame B's stream gets is B's pin: A's, posted before it, never came.
            #expect(frame["event"] == "LocationPosted")
            #expect(frame["data"]?.contains(posted.json["objectId"] as? String ?? "?") == true)
        }
    }
}
