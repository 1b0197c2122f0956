import Foundation
import TestSupport

/// Runs the CLI on a pseudo-terminal (python3's `pty`), as a person at a terminal would: it waits for each
/// prompt, types the answer, and returns everything the terminal showed and the exit status. The window is
/// `columns` wide, set on the terminal before the CLI starts. A process stopped by the test (SIGSTOP) can be
/// continued once the terminal shows a given text, or after 10 s if it never does, so a test of what waiting
/// looks like does not depend on how fast the CLI starts.
enum PseudoTerminal {
    struct Result: Decodable {
        var output: String
        var status: Int
    }

    static let script = #"""
        import fcntl, json, os, pty, select, signal, struct, sys, termios, time
        binary, arguments, environment, dialogue = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
        columns = int(sys.argv[5])
        resume_pid, resume_when = json.loads(sys.argv[6])
        resume_by = time.time() + 10
        pid, fd = pty.fork()
        if pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
            os.execve(binary, [binary] + arguments, environment)
        seen = b""
        def resume_if_due():
            global resume_pid
            if resume_pid and (resume_when.encode() in seen or time.time() > resume_by):
                os.kill(resume_pid, signal.SIGCONT)
                resume_pid = 0
        def read(deadline):
            global seen
            while time.time() < deadline:
                resume_if_due()
                ready, _, _ = select.select([fd], [], [], 0.05)
                if ready:
                    try:
                        chunk = os.read(fd, 4096)
                    except OSError:
                        return False
                    if not chunk:
                        return False
                    seen += chunk
                    resume_if_due()
                    return True
            return True
        for expected, answer in dialogue:
            deadline = time.time() + 10
            while expected.encode() not in seen and time.time() < deadline:
                if not read(deadline):
                    break
            os.write(fd, answer.encode())
        deadline = time.time() + 15
        while read(deadline):
            pass
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"output": seen.decode("utf-8", "replace"), "status": os.waitstatus_to_exitcode(status)}))
        """#

    static func run(
        _ arguments: [String], environment: [String: String], dialogue: [(expect: String, type: String)],
        columns: Int = 80, resuming stopped: (pid: pid_t, when: String)? = nil
    ) async throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let encode = { (value: Any) in String(decoding: try JSONSerialization.data(withJSONObject: value), as: UTF8.self) }
        process.arguments = [
            "python3", "-c", script, CLI.binary.path, try encode(arguments), try encode(environment),
            try encode(dialogue.map { [$0.expect, $0.type] }), String(columns),
            try encode([stopped.map { Int($0.pid) } ?? 0, stopped?.when ?? ""] as [Any]),
        ]
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("pty-\(UUID())")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        process.standardOutput = try FileHandle(forWritingTo: output)
        let exit = try ProcessExit(running: process)
        // The script gives up by itself after 10 s a prompt and 15 s at the end; 30 s more to spare.
        guard await exit.status(within: .seconds(10 * dialogue.count + 15 + 30)) != nil else {
            process.terminate()
            throw HarnessError("the terminal script still runs after its own limits")
        }
        return try JSONDecoder().decode(Result.self, from: Data(contentsOf: output))
    }
}
