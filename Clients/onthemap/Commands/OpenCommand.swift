import ArgumentParser
import Foundation

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open the gateway's web page in your browser, or print its URL when there is none."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let url = global.gatewayURL + "/"
        guard let opener = Self.opener() else {
            Terminal.standardOutput(url)
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: opener)
        process.arguments = [url]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
            Terminal.standardOutput("opened \(url)")
        } catch {
            Terminal.standardOutput(url)
        }
    }

    /// `$BROWSER`, else the desktop's opener when a desktop session is there; nil on a server.
    static func opener() -> String? {
        let environment = ProcessInfo.processInfo.environment
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
}
