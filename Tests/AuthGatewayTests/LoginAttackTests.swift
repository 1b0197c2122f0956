import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// What someone guessing passwords, or creating accounts in bulk, gets out of the gateway: no more
/// guesses than the limit, no fresh allowance for another spelling, no 500, no clue from the timing.
@Suite struct LoginAttackTests {
    static func login(_ username: String, _ password: String) -> String {
        #"{"udacity":{"username":"\#(username)","password":"\#(password)"}}"#
    }

    static func signUp(email: String, password: String = "correct horse battery", firstName: String = "Ada", lastName: String = "Lovelace") -> String
    {
        #"{"email":"\#(email)","password":"\#(password)","firstName":"\#(firstName)","lastName":"\#(lastName)"}"#
    }

    @Test func guessesSentInParallelAreCountedBeforeAnyIsChecked() async throws {
        // A bcrypt slow enough that every guess would be checked before the first was counted, were
        // checking and counting two steps.
        try await withGatewaySocket(configure: { $0.passwordCost = 8 }) { client, _ in
            let student = try await client.signUp(Student("parallel@example.com"))
            let port = try #require(client.port)
            let http = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: .init(
                    connectionPool: .init(idleTimeout: .seconds(5), concurrentHTTP1ConnectionsPerHostSoftLimit: 32)))
            let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for index in 0..<20 {
                    group.addTask {
                        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/session")
                        request.method = .POST
                        request.body = .bytes(ByteBuffer(string: Self.login(student.email, "wrong guess \(index)")))
                        let response = try await http.execute(request, timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 1 << 16)
                        return (Int(response.status.code), response.headers.first(name: "Retry-After"))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            try await http.shutdown()
            #expect(answers.filter { $0.0 == 403 }.count == 5, "\(answers)")
            let throttled = answers.filter { $0.0 == 429 }
            #expect(throttled.count == 15, "\(answers)")
            #expect(throttled.allSatisfy { ($0.1.flatMap(Int.init) ?? 0) > 0 })
            let right = try await client.send(.post, "/v1/session", body: Self.login(student.email, student.password))
            #expect(right.status == .tooManyRequests)
        }
    }

    @Test func everySpellingOfAnAddressSharesOneAllowance() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signUp(Student("ada@example.com"))
            for spelling in ["Ada@Example.com", "ada@EXAMPLE.COM", " ADA@example.com ", "ADA@EXAMPLE.COM", "aDa@example.Com"] {
                let wrong = try await client.send(.post, "/v1/session", body: Self.login(spelling, "nope"))
                #expect(wrong.status == .forbidden, "\(spelling)")
            }
            for spelling in ["ada@example.com", "Ada@Example.com", " ADA@example.com ", "\\tada@example.COM\\n"] {
                let refused = try await client.send(.post, "/v1/session", body: Self.login(spelling, student.password))
                #expect(refused.status == .tooManyRequests, "\(spelling)")
                #expect(refused.headers[.retryAfter] != nil)
            }
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anySpellingOfTheAddressLogsIntoTheOneAccount(_ stores: GatewayStoresKind) async throws {
        try await withGatewayRouter(over: stores) { client, _ in
            let created = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: " Ada@Example.com "))
            #expect(created.status == .created)
            let key = try #require((created.json["account"] as? [String: Any])?["key"] as? String)
            let login = try await client.send(.post, "/v1/session", body: Self.login("ADA@example.COM", "correct horse battery"))
            #expect(login.status == .ok)
            #expect((login.json["account"] as? [String: Any])?["key"] as? String == key)
            let token = try #require((login.json["session"] as? [String: Any])?["id"] as? String)
            let profile = try await client.send(.get, "/v1/users/\(key)", headers: [HTTPField(name: .authorization, value: "Bearer \(token)")])
            #expect((profile.json["email"] as? [String: Any])?["address"] as? String == "Ada@Example.com")
            // "é" as one code point at sign-up, as "e" and a combining accent at login: one address.
            let composed = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "jos\u{E9}@example.com"))
            #expect(composed.status == .created)
            let decomposed = try await client.send(.post, "/v1/session", body: Self.login("JOSE\u{301}@example.com", "correct horse battery"))
            #expect(decomposed.status == .ok)
            let twice = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "Jose\u{301}@Example.com"))
            #expect(twice.status == .conflict)
        }
    }

    @Test func oversizedInputIsRefusedWith400NeverA500() async throws {
        try await withGatewayRouter { client, _ in
            let huge = String(repeating: "a", count: 10_000)
            let username = try await client.send(.post, "/v1/session", body: Self.login(huge + "@example.com", "whatever"))
            #expect(username.status == .badRequest)
            #expect(username.body == ")]}'\n" + #"{"status":400,"parameter":"udacity.username","error":"username must be at most 254 bytes."}"#)
            let password = try await client.send(.post, "/v1/session", body: Self.login("someone@example.com", huge))
            #expect(password.status == .forbidden)

            let email = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: huge + "@example.com"))
            #expect(email.body == #"{"status":400,"parameter":"email","error":"email must be at most 254 bytes."}"#)
            let firstName = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "f@example.com", firstName: huge))
            #expect(firstName.body == #"{"status":400,"parameter":"firstName","error":"firstName must be at most 100 characters."}"#)
            // One character with thousands of accents on it is still thousands of bytes.
            let accents = "Z" + String(repeating: "\u{301}", count: 5_000)
            let lastName = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "l@example.com", lastName: accents))
            #expect(lastName.body == #"{"status":400,"parameter":"lastName","error":"lastName must be at most 100 characters."}"#)
        }
    }

    @Test func signUpRefusesPasswordsLongerThanBcryptReads() async throws {
        try await withGatewayRouter { client, _ in
            let expected = #"{"status":400,"parameter":"password","error":"password must be at most 72 bytes (UTF-8); only that many would count."}"#
            let ascii = try await client.send(
                .post, "/v1/accounts", body: Self.signUp(email: "long@example.com", password: String(repeating: "p", count: 73)))
            #expect(ascii.status == .badRequest)
            #expect(ascii.body == expected)
            // 37 characters, 74 bytes.
            let accented = try await client.send(
                .post, "/v1/accounts", body: Self.signUp(email: "long@example.com", password: String(repeating: "\u{E9}", count: 37)))
            #expect(accented.body == expected)
        }
    }

    @Test func onlyTheSeventyTwoBytesSetAtSignUpLogIn() async throws {
        try await withGatewayRouter { client, _ in
            let password = String(repeating: "p", count: 72)
            let created = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "exact@example.com", password: password))
            #expect(created.status == .created)
            #expect(try await client.send(.post, "/v1/session", body: Self.login("exact@example.com", password)).status == .ok)
            let longer = try await client.send(.post, "/v1/session", body: Self.login("exact@example.com", password + "extra"))
            #expect(longer.status == .forbidden)
            #expect(longer.body == ")]}'\n" + #"{"status":403,"error":"Account not found or invalid credentials."}"#)
        }
    }

    @Test func anUnknownAccountIsAnsweredLikeAWrongPasswordAndAsSlowly() async throws {
        // A cost where bcrypt outweighs everything else a login does, and no throttling in the way.
        try await withGatewayRouter(configure: {
            $0.passwordCost = 8
            $0.throttle.failuresPerAccount = 100
            $0.throttle.failuresPerAddress = 100
        }) { client, _ in
            _ = try await client.signUp(Student("known@example.com"))
            var wrongTimes: [Duration] = []
            var unknownTimes: [Duration] = []
            var wrongAnswer: Reply?
            var unknownAnswer: Reply?
            let clock = ContinuousClock()
            for _ in 0..<7 {
                var started = clock.now
                wrongAnswer = try await client.send(.post, "/v1/session", body: Self.login("known@example.com", "not the password"))
                wrongTimes.append(clock.now - started)
                started = clock.now
                unknownAnswer = try await client.send(.post, "/v1/session", body: Self.login("nobody@example.com", "not the password"))
                unknownTimes.append(clock.now - started)
            }
            let wrong = try #require(wrongAnswer)
            let unknown = try #require(unknownAnswer)
            #expect(unknown.status == wrong.status)
            #expect(unknown.body == wrong.body)
            let wrongMedian = wrongTimes.sorted()[wrongTimes.count / 2]
            let unknownMedian = unknownTimes.sorted()[unknownTimes.count / 2]
            #expect(unknownMedian >= wrongMedian / 2, "unknown \(unknownMedian), wrong password \(wrongMedian)")
            #expect(unknownMedian <= wrongMedian * 2, "unknown \(unknownMedian), wrong password \(wrongMedian)")
        }
    }

    @Test func signUpsFromOneAddressAreThrottled() async throws {
        try await withGatewayRouter(configure: { $0.throttle.signUpsPerAddress = 2 }) { client, _ in
            #expect(try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "one@example.com")).status == .created)
            #expect(try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "two@example.com")).status == .created)
            let third = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "three@example.com"))
            #expect(third.status == .tooManyRequests)
            let retryAfter = try #require(third.headers[.retryAfter].flatMap(Int.init))
            #expect(retryAfter > 3500 && retryAfter <= 3600)
            #expect(third.body == #"{"status":429,"error":"Too many sign-ups from your address; try again in \#(retryAfter) seconds."}"#)
            let login = try await client.send(.post, "/v1/session", body: Self.login("one@example.com", "correct horse battery"))
            #expect(login.status == .ok, "logging in is not signing up")
        }
    }

    @Test func signUpSaysWhatIsWrongWithAnAddress() async throws {
        try await withGatewayRouter { client, _ in
            let notAnAddress = "email must be an address such as student@example.com."
            let cases: [(String, String)] = [
                ("student@localhost", notAnAddress),
                ("student@@example.com", notAnAddress),
                ("student.@example.com", notAnAddress),
                ("stu..dent@example.com", notAnAddress),
                ("student@-example.com", notAnAddress),
                ("student@exam_ple.com", notAnAddress),
                ("student@example..com", notAnAddress),
                ("@example.com", notAnAddress),
                ("stu dent@example.com", "email must not contain spaces or control characters."),
                ("stu\\u0007dent@example.com", "email must not contain spaces or control characters."),
                (String(repeating: "s", count: 65) + "@example.com", "email must have at most 64 bytes before the @."),
                ("s@" + String(repeating: "d", count: 250) + ".com", "email must be at most 254 bytes."),
            ]
            for (email, message) in cases {
                let reply = try await client.send(.post, "/v1/accounts", body: Self.signUp(email: email))
                #expect(reply.status == .badRequest, "\(email)")
                #expect(reply.json["parameter"] as? String == "email", "\(email)")
                #expect(reply.json["error"] as? String == message, "\(email)")
            }
            #expect(
                try await client.send(.post, "/v1/accounts", body: Self.signUp(email: "stu-dent+map@m\u{FC}nchen-1.example.de")).status == .created)
        }
    }
}
