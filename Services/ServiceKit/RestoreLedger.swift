import Foundation
import Logging

/// What a restore of the database's backups must do again: the erasures, the accounts an operator disabled
/// (or enabled again), the pins an operator or a class map's moderator hid (or brought back) and the class
/// maps deleted. A backup taken before an erasure holds
/// the student, and a restore to a moment before it would bring them back; so each of these actions, once
/// it has succeeded, is appended here, one JSON line each, to a file kept beside the backups and outside
/// them (`RESTORE_LEDGER`). `scripts/restore.sh` has both services re-apply every record from shortly before
/// the restore point (`ledger apply`) before a request is let in.
///
/// A record holds what re-applying needs and nothing else: an erasure only the account's key and when.
/// A record is written after its action committed, so one recorded at or before the restore point is in the
/// restored database; re-applying is harmless either way (an erased account is erased again with nothing
/// left to erase, a hidden pin is hidden already), and the restore starts a margin earlier so that clocks a
/// little apart lose nothing.
public struct RestoreLedger: Sendable {
    /// One action to do again, as a line of the file.
    public struct Record: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable {
            /// A student erased (the account's key).
            case erased
            /// An account an operator disabled, or enabled again (its key).
            case disabled, enabled
            /// A pin an operator or a map's moderator hid, or brought back (its objectId).
            case hidden, unhidden
            /// A class map deleted (its slug).
            case mapDeleted
        }

        /// When the action succeeded, to the millisecond.
        public var at: Date
        public var kind: Kind
        /// The account's key (erased, disabled, enabled).
        public var account: String?
        /// The pin's objectId (hidden, unhidden).
        public var pin: String?
        /// The class map (mapDeleted; the map of a moderator's hide or unhide).
        public var map: String?
        /// Who acted, an operator's actions alone: a map moderator is a student, and a student's name stays out
        /// of the ledger (a restore would otherwise bring back what an erasure took).
        public var operatorName: String?
        /// Why, as the operator said (a hide, a disabling).
        public var reason: String?

        public init(
            at: Date = Date(), kind: Kind, account: String? = nil, pin: String? = nil, map: String? = nil, operatorName: String? = nil,
            reason: String? = nil
        ) {
            self.at = at
            self.kind = kind
            self.account = account
            self.pin = pin
            self.map = map
            self.operatorName = operatorName
            self.reason = reason
        }

        enum CodingKeys: String, CodingKey {
            case at, kind, account, pin, map
            case operatorName = "operator"
            case reason
        }
    }

    public enum LedgerError: Error, CustomStringConvertible {
        case unwritable(path: String, errno: Int32)
        case unreadable(path: String, line: Int)

        public var description: String {
            switch self {
            case .unwritable(let path, let code): "cannot append to the restore ledger \(path): \(String(cString: strerror(code)))"
            case .unreadable(let path, let line): "line \(line) of the restore ledger \(path) is not a record"
            }
        }
    }

    public let path: String

    public init(path: String) { self.path = path }

    /// The ledger `RESTORE_LEDGER` names, or nil when none is configured (nothing is recorded then).
    public static func configured(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> RestoreLedger? {
        EnvironmentReader(environment)["RESTORE_LEDGER"].map(RestoreLedger.init(path:))
    }

    /// Appends one record and waits until it is on disk: the caller says the action is done only after this.
    /// Each line is written with one `write` on a file opened for appending, so lines from several
    /// processes (two gateways, an operator's command) never interleave.
    public func append(_ record: Record) throws {
        var line = try Self.encoder.encode(record)
        line.append(UInt8(ascii: "\n"))
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw LedgerError.unwritable(path: path, errno: errno) }
        defer { close(descriptor) }
        let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == line.count, fsync(descriptor) == 0 else { throw LedgerError.unwritable(path: path, errno: errno) }
    }

    /// Appends a record for a request's action, which stands either way: when the ledger cannot take it, the
    /// log says what a restore to a moment before it would undo (`undone`).
    public func appendOrReport(_ record: Record, undone: String, logger: Logger) {
        do {
            try append(record)
        } catch {
            logger.error("not in the restore ledger: a restore to a moment before it would \(undone)", metadata: ["error": "\(error)"])
        }
    }

    /// Every record at or after `since`, oldest first; none when the file does not exist.
    public func records(since: Date) throws -> [Record] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        var records: [Record] = []
        for (index, line) in data.split(separator: UInt8(ascii: "\n")).enumerated() where !line.isEmpty {
            guard let record = try? Self.decoder.decode(Record.self, from: Data(line)) else {
                throw LedgerError.unreadable(path: path, line: index + 1)
            }
            if record.at >= since { records.append(record) }
        }
        return records.sorted { $0.at < $1.at }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Self.format(date))
        }
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = parse(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 time: \(text)"))
            }
            return date
        }
        return decoder
    }()

    /// RFC 3339 in UTC with milliseconds, as PostgreSQL's recovery target and `date` both read it.
    public static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// An RFC 3339 time, with or without fractions of a second.
    public static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
