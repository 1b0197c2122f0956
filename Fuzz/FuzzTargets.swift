import Foundation
import Hummingbird
import OnTheMapShared

/// One function per parser: parse the input as a client would send it, then check what the result promises.
/// A broken property stops the process, which libFuzzer reports as a crash with the input that caused it.
enum FuzzTargets {
    static func locationInput(_ input: [UInt8]) {
        guard let pin = try? LocationInput.decode(input) else { return }
        // A pin with coordinates the service can accept writes back out as JSON that reads as the same pin.
        // (Far outside them Foundation reads long integers only approximately, e.g. 1888…417 with 49 digits.)
        guard abs(pin.latitude ?? 0) <= 90, abs(pin.longitude ?? 0) <= 180 else { return }
        let again = try? LocationInput.decode(pin.json.readableBytesView)
        expect(again == pin, "pin \(pin) reads back as \(String(describing: again))", input)
    }

    static func whereFilter(_ input: [UInt8]) {
        let filters: [WhereFilter.Field: String]
        do {
            filters = try WhereFilter.parse(String(decoding: input, as: UTF8.self))
        } catch {
            expect(error.message.hasPrefix("where "), "message \(error.message)", input)
            return
        }
        expect(!filters.values.contains { $0.contains("\u{0}") }, "a NUL in \(filters)", input)
        // The filters, written as the JSON object a client would send, read back the same.
        var json = JSONWriter()
        json.beginObject()
        for field in WhereFilter.Field.allCases {
            if let value = filters[field] { json.field(field.rawValue, value) }
        }
        json.endObject()
        let again = try? WhereFilter.parse(json.string)
        expect(again == filters, "\(filters) reads back as \(String(describing: again))", input)
    }

    static func timestamp(_ input: [UInt8]) {
        guard let time = Timestamp(iso8601: String(decoding: input, as: UTF8.self)) else { return }
        // Both spellings we write read back as the same instant.
        expect(Timestamp(iso8601: time.iso8601) == time, "\(time.millisecondsSince1970) as \(time.iso8601)", input)
        expect(Timestamp(iso8601: time.iso8601Microseconds) == time, "\(time.millisecondsSince1970) as \(time.iso8601Microseconds)", input)
    }

    static func actor(_ input: [UInt8]) {
        // As sent, and as the JSON inside the header, so the fuzzer reaches the decoder past base64.
        for header in [String(decoding: input, as: UTF8.self), Base64URL.encode(input)] {
            guard let actor = Actor(headerValue: header) else { continue }
            expect(!actor.key.isEmpty, "an empty key", input)
            // The header we write for it reads back as the same actor (unless re-encoding made it too long).
            let written = actor.headerValue
            if written.utf8.count <= 4096 {
                expect(Actor(headerValue: written) == actor, "\(actor) written as \(written)", input)
            }
        }
    }

    static func cookie(_ input: [UInt8]) {
        // Each line is one `Cookie` header.
        let headers = String(decoding: input, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let cookies = Cookies(from: headers)
        for name in [SessionCredentials.cookieName, "XSRF-TOKEN"] {
            guard let cookie = cookies[name] else { continue }
            expect(cookie.name == name, "asked for \(name), got \(cookie.name)", input)
            expect(!cookie.value.contains(";"), "a value holding ';': \(cookie.value)", input)
        }
        let value = cookies[SessionCredentials.cookieName]?.value
        let session = SessionCredentials.sessionID(authorization: nil, cookie: value)
        expect(session == (value?.isEmpty == false ? value : nil), "session \(String(describing: session)) from \(String(describing: value))", input)
    }

    static func bearer(_ input: [UInt8]) {
        let header = String(decoding: input, as: UTF8.self)
        let credentials = SessionCredentials.bearer(header)
        // The header wins over any cookie when it carries a bearer token, and only then.
        expect(SessionCredentials.sessionID(authorization: header, cookie: "cookie") == (credentials ?? "cookie"), "precedence", input)
        guard let credentials else { return }
        let blanks: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t")]
        let bytes = Array(credentials.utf8)
        expect(
            !bytes.isEmpty && !blanks.contains(bytes[0]) && !blanks.contains(bytes[bytes.count - 1]),
            "blanks around \(credentials.debugDescription)", input)
        // After the scheme, the header holds blanks, the credentials and blanks, nothing else.
        let afterScheme = header.utf8.dropFirst(7)
        let leading = afterScheme.prefix(while: blanks.contains).count
        let trailing = afterScheme.reversed().prefix(while: blanks.contains).count
        expect(
            afterScheme.dropFirst(leading).dropLast(trailing).elementsEqual(bytes), "\(credentials.debugDescription) from \(header.debugDescription)",
            input)
        expect(header.utf8.prefix(6).map { $0 | 0x20 }.elementsEqual("bearer".utf8), "scheme of \(header.debugDescription)", input)
    }

    private static func expect(_ holds: Bool, _ what: @autoclosure () -> String, _ input: [UInt8]) {
        guard !holds else { return }
        fatalError("property broken: \(what()); input (base64) \(Data(input).base64EncodedString())")
    }
}
