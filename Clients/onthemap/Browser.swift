import Foundation

/// The person's web browser: `$BROWSER`, else the desktop's opener when a desktop session is there.
enum Browser {
    /// The opener's path; nil on a server, where there is no browser to open.
    static func opener() -> String? {
        let environment = Console.current.environment
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        func find(_ name: String) -> String? {
            if name.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
            return path.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }
        if let browser = environment["BROWSER"], !browser.isEmpty, let found = find(browser) { return found }
        #if os(macOS)
        return "/usr/bin/open"
        #else
        guard environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil else { return nil }
        return find("xdg-open")
        #endif
    }

    /// Starts the opener on `url`, its output discarded; `ended` is told whether it exited with status 0.
    /// False when there is no opener or it could not be started (and `ended` is not called).
    static func open(_ url: String, ended: @escaping @Sendable (Bool) -> Void) -> Bool {
        guard let opener = opener() else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: opener)
        process.arguments = [url]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.terminationHandler = { ended($0.terminationReason == .exit && $0.terminationStatus == 0) }
        do {
            try process.run()
            return true
        } catch {
            return false
        }
    }

    /// Opens `url` and waits for the opener: whether it succeeded.
    static func open(_ url: String) async -> Bool {
        await withCheckedContinuation { continuation in
            if !open(url, ended: { continuation.resume(returning: $0) }) { continuation.resume(returning: false) }
        }
    }
}
