import Foundation

/// What the operators' commands of both services (`moderate`, `accounts`) share: who is acting, and a
/// refusal said in one line.
public enum OperatorTask {
    /// The operator named by `--operator`, else the user logged in (`SUDO_USER` under sudo, `USER`, `LOGNAME`),
    /// else the process's user. Trimmed; nil when that leaves nothing or something no record should hold
    /// (control characters, more than 100 characters).
    public static func operatorName(_ given: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let candidates = [given, environment["SUDO_USER"], environment["USER"], environment["LOGNAME"], NSUserName()]
        guard let name = candidates.lazy.compactMap({ $0?.trimmingCharacters(in: .whitespacesAndNewlines) }).first(where: { !$0.isEmpty }),
            name.count <= 100, !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return nil }
        return name
    }

    /// The actor key an operator's records carry, apart from every account's key (those are digits).
    public static func actorKey(_ name: String) -> String { "operator:\(name)" }

    /// `command: message` on standard error, for a task refused; the command then exits 1.
    public static func refuse(_ command: String, _ message: String) {
        FileHandle.standardError.write(Data("\(command): \(message)\n".utf8))
    }

    /// Appends an operator's action, once done, to the restore ledger `RESTORE_LEDGER` names (nothing without
    /// one): false, with the refusal said, when it cannot. The action stands, but a restore would undo it.
    public static func recordInLedger(_ record: RestoreLedger.Record, command: String) -> Bool {
        guard let ledger = RestoreLedger.configured() else { return true }
        do {
            try ledger.append(record)
            return true
        } catch {
            refuse(command, "\(error); done, but a restore would undo it until the ledger holds it")
            return false
        }
    }

    /// What `ledger apply` is asked to do again: the records of the ledger (`path`, else `RESTORE_LEDGER`) at or
    /// after `since` (RFC 3339), oldest first; nil, with the refusal said, when either is missing or malformed.
    public static func ledgerRecords(path: String?, since: String, command: String) throws -> [RestoreLedger.Record]? {
        guard let path = path ?? RestoreLedger.configured()?.path else {
            refuse(command, "name the ledger with --ledger FILE or RESTORE_LEDGER")
            return nil
        }
        guard let moment = RestoreLedger.parse(since) else {
            refuse(command, "--since must be an RFC 3339 time such as 2026-11-28T09:25:00Z")
            return nil
        }
        return try RestoreLedger(path: path).records(since: moment)
    }
}
