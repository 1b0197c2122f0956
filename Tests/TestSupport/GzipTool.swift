import Foundation

/// What `gzip -dc` makes of the bytes: the tool any user would check a gzip answer with. Waited for on a
/// thread of its own (`blocking`).
public func gunzipWithTheTool(_ bytes: [UInt8]) async throws -> [UInt8] {
    try await blocking { try gunzip(bytes) }
}

private func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
    let input = FileManager.default.temporaryDirectory.appendingPathComponent("gzip-\(UUID().uuidString).gz")
    try Data(bytes).write(to: input)
    defer { try? FileManager.default.removeItem(at: input) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "gzip -dc < \"$0\"", input.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.readUntilEnd()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw HarnessError("gzip -dc failed") }
    return Array(data)
}
