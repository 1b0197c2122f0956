import Foundation
import OnTheMapClient

/// `onthemap login --browser`: a sign-in at the gateway's OpenID Connect provider, in the browser, that
/// comes back to this command on a loopback address (RFC 8252) with a code only this command can redeem.
enum BrowserLogIn {
    static let timeout = Duration.seconds(5 * 60)

    static func run(global: GlobalOptions) async throws {
        let client = global.client()
        guard try await Spinner.run("asking the gateway…", { try await client.offersBrowserSignIn() }) else {
            throw CommandFailure(
                "\(client.gateway) has no sign-in with an identity provider; log in with your email: onthemap login", .failure)
        }
        let loopback: LoopbackRedirect
        do {
            loopback = try await LoopbackRedirect.start()
        } catch {
            throw CommandFailure("cannot listen on 127.0.0.1 for the browser to come back: \(error)", .failure)
        }
        defer { loopback.close() }
        let interrupt = Terminal.onInterrupt {
            Terminal.standardError(Terminal.errorStyle("cancelled"))
            Foundation.exit(ExitStatus.cancelled.rawValue)
        }
        defer { interrupt?.cancel() }

        let proof = ProofKey()
        let url = client.browserSignInURL(returningTo: loopback.uri, proof: proof)
        Terminal.standardError("Open this address in a browser to sign in: \(url)")
        _ = Browser.open(url) { opened in
            if !opened { Terminal.standardError("could not open a browser; open the address above in one on this machine") }
        }
        let callback = await Spinner.run("waiting for the browser… (Ctrl-C stops)") { await loopback.callback(within: timeout) }
        switch callback {
        case nil:
            throw CommandFailure(
                "the browser did not come back within \(timeout.components.seconds / 60) min; try again: onthemap login --browser", .failure)
        case .error(let reason):
            throw CommandFailure("the sign-in failed: \(reason)", .failure)
        case .code(let code):
            let profile = try await Spinner.run("logging in…") {
                try await LogInCommand.keep(try await client.redeemBrowserSignIn(code: code, proof: proof), gateway: client.gateway, global: global)
            }
            Terminal.standardOutput(LogInCommand.loggedIn(profile, email: profile.email, gateway: client.gateway))
        }
    }
}
