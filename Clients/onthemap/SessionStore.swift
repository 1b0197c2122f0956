import Foundation
import OnTheMapClient

/// The sessions this user is logged in with, one file per gateway URL under `$XDG_CONFIG_HOME/onthemap/`
/// (default `~/.config/onthemap/`), and beside them the class map each gateway's commands use when `--map`
/// does not say (`maps use`). The folder is 0700 and each file 0600; a file holds the session id, never the
/// password.
struct SessionStore {
    let folder: URL

    init(environment: [String: String] = Console.current.environment) {
        let base: URL
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            base = URL(fileURLWithPath: config)
        } else {
            base = URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".config")
        }
        folder = base.appendingPathComponent("onthemap")
    }

    private struct Record: Codable {
        var gateway: String
        var session: Session
    }

    private struct MapRecord: Codable {
        var gateway: String
        var map: String
    }

    /// `session-http___127.0.0.1_8080.json`: the URL with anything but letters, digits, `.` and `-` as `_`.
    func file(for gateway: String) -> URL {
        file("session", for: gateway)
    }

    /// `map-http___127.0.0.1_8080.json`: the class map kept for that gateway.
    func mapFile(for gateway: String) -> URL {
        file("map", for: gateway)
    }

    private func file(_ kind: String, for gateway: String) -> URL {
        let name = String(
            gateway.unicodeScalars.map { scalar -> Character in
                scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "-") ? Character(scalar) : "_"
            })
        return folder.appendingPathComponent("\(kind)-\(name).json")
    }

    func load(gateway: String) throws -> Session? {
        guard let data = FileManager.default.contents(atPath: file(for: gateway).path) else { return nil }
        guard let record = try? JSONDecoder().decode(Record.self, from: data), record.gateway == gateway else { return nil }
        return record.session
    }

    func save(_ session: Session, gateway: String) throws {
        try store(Record(gateway: gateway, session: session), at: file(for: gateway))
    }

    /// The class map kept for `gateway`; nil for its default map.
    func defaultMap(gateway: String) -> String? {
        guard let data = FileManager.default.contents(atPath: mapFile(for: gateway).path) else { return nil }
        guard let record = try? JSONDecoder().decode(MapRecord.self, from: data), record.gateway == gateway else { return nil }
        return record.map
    }

    func saveDefaultMap(_ map: String, gateway: String) throws {
        try store(MapRecord(gateway: gateway, map: map), at: mapFile(for: gateway))
    }

    func forgetDefaultMap(gateway: String) {
        unlink(mapFile(for: gateway).path)
    }

    /// Writes `record` to a new 0600 file and moves it into place, so no reader sees half a file and a
    /// session id is never readable by others, not even for a moment.
    private func store(_ record: some Encodable, at target: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard chmod(folder.path, 0o700) == 0 else { throw failure("cannot restrict \(folder.path) to you") }
        let temporary = folder.appendingPathComponent(".\(target.lastPathComponent).\(getpid())")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(record)
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw failure("cannot write \(temporary.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0,
            data.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == data.count,
            rename(temporary.path, target.path) == 0
        else {
            unlink(temporary.path)
            throw failure("cannot write \(target.path): \(String(cString: strerror(errno)))")
        }
    }

    func forget(gateway: String) {
        unlink(file(for: gateway).path)
    }

    private func failure(_ message: String) -> CommandFailure { CommandFailure(message, .failure) }
}
