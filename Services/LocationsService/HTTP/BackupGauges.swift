import Foundation
import Prometheus
import ServiceKit
import Synchronization

/// How far the backups lag, read when `/metrics` is asked: the age of the last archived WAL segment
/// (`pg_stat_archiver`, every scrape: one row of the server's statistics) and, with `BACKUP_STANZA` set, the
/// age of the last backup pgBackRest completed. The backup's time comes from `pgbackrest info --output=json`
/// (pgBackRest's own configuration, `PGBACKREST_CONFIG` or its default file, says where the repository is and
/// its key); that reads the repository, about 0.1 s on a folder and longer on an object store, so it is
/// run at most once a minute and a scrape in between works the age out from the time last read.
/// A gauge with nothing to say yet (archiving off, no backup in the repository) is left unset.
final class BackupGauges: Sendable {
    private let walAge: Gauge
    private let backupAge: Gauge
    private let database: Database
    private let stanza: String?
    /// When the repository was last read (nil: never), whether a read is running, and the end of the newest
    /// backup it listed.
    private let repository = Mutex<(readAt: ContinuousClock.Instant?, reading: Bool, lastBackup: Date?)>((nil, false, nil))

    static let repositoryReadInterval: Duration = .seconds(60)

    init(registry: PrometheusCollectorRegistry, database: Database, stanza: String?) {
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: MetricNameDescriptor(namespace: "onthemap", metricName: name, unitName: "", helpText: help))
        }
        walAge = gauge("wal_last_archived_age_seconds", "Seconds since PostgreSQL last archived a WAL segment (pg_stat_archiver).")
        backupAge = gauge("backup_last_success_age_seconds", "Seconds since the newest backup in the repository completed (pgbackrest info).")
        self.database = database
        self.stanza = stanza
    }

    func refresh() async {
        if let rows = try? await database.query(
            "SELECT extract(epoch FROM now() - last_archived_time)::float8 FROM pg_stat_archiver WHERE last_archived_time IS NOT NULL"),
            let age = try? rows.first?.decode(Double.self)
        {
            walAge.set(age)
        }
        guard let stanza else { return }
        let due = repository.withLock { state in
            guard !state.reading, state.readAt.map({ ContinuousClock.now - $0 >= Self.repositoryReadInterval }) ?? true else { return false }
            state.reading = true
            return true
        }
        if due {
            let last = await Self.lastBackup(stanza: stanza)
            repository.withLock { state in
                state = (ContinuousClock.now, false, last ?? state.lastBackup)
            }
        }
        if let last = repository.withLock({ $0.lastBackup }) { backupAge.set(Date().timeIntervalSince(last)) }
    }

    /// The end of the newest backup `pgbackrest info` lists for the stanza; nil when it lists none or
    /// cannot be run (it is then read again a minute later).
    static func lastBackup(stanza: String) async -> Date? {
        guard let output = await run("pgbackrest", ["--stanza=\(stanza)", "--output=json", "--log-level-file=off", "info"]) else { return nil }
        return newestBackupEnd(inInfo: output)
    }

    /// The newest `timestamp.stop` of `pgbackrest info --output=json`'s backups (seconds since 1970).
    static func newestBackupEnd(inInfo json: Data) -> Date? {
        struct Stanza: Decodable {
            struct Backup: Decodable {
                struct Times: Decodable { let stop: Double }
                let timestamp: Times
            }
            let backup: [Backup]?
        }
        guard let stanzas = try? JSONDecoder().decode([Stanza].self, from: json) else { return nil }
        return stanzas.flatMap { $0.backup ?? [] }.map(\.timestamp.stop).max().map { Date(timeIntervalSince1970: $0) }
    }

    /// Runs a program found on `PATH` and returns its standard output, or nil when it fails. The output is
    /// read to its end before the wait, on a thread of its own (never one of the tasks' threads): a process
    /// whose output fills the pipe would otherwise never end.
    private static func run(_ program: String, _ arguments: [String]) async -> Data? {
        await withCheckedContinuation { continuation in
            Thread {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = [program] + arguments
                let output = Pipe()
                process.standardOutput = output
                process.standardError = FileHandle.nullDevice
                do {
                    try process.run()
                } catch {
                    continuation.resume(returning: nil)
                    return
                }
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus == 0 ? data : nil)
            }.start()
        }
    }
}
