import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import Synchronization

/// A sign-in sent to the OpenID Connect provider, waiting for the browser to come back with its state.
struct PendingSignIn: Sendable, Equatable {
    /// What the ID token must carry back (`nonce`), and the secret behind the code challenge sent (PKCE).
    var nonce: String
    var codeVerifier: String
    /// Set when the command line started it: the browser goes back there with a code for its session.
    var commandLine: CommandLineReturn?
    var expiresAt: Timestamp
}

/// Where a command-line sign-in's browser is sent at the end (a loopback address the command listens on),
/// and the SHA-256 challenge of the verifier the command will show with the code it gets there.
struct CommandLineReturn: Sendable, Equatable {
    var redirect: String
    var challenge: String
}

/// A finished command-line sign-in, waiting for the command to show its code: the account and the challenge.
struct PendingHandoff: Sendable, Equatable {
    var accountKey: String
    var challenge: String
}

/// Sign-ins on their way through the provider, and command-line handoffs: each taken at most once, and only
/// before it expires. Keys are SHA-256s of the secrets the browser or the command holds.
protocol SignInStore: Sendable {
    func begin(_ signIn: PendingSignIn, stateHash: [UInt8], at now: Timestamp) async throws
    /// The sign-in, removed so it is finished at most once; nil when there is none, or it expired.
    func take(stateHash: [UInt8], at now: Timestamp) async throws -> PendingSignIn?
    func beginHandoff(_ handoff: PendingHandoff, codeHash: [UInt8], expiresAt: Timestamp, at now: Timestamp) async throws
    /// The handoff, removed; nil when there is none, or it expired.
    func takeHandoff(codeHash: [UInt8], at now: Timestamp) async throws -> PendingHandoff?
}

/// `auth.oidc_sign_ins` and `auth.oidc_handoffs`. Each new row clears the expired ones.
struct PostgresSignInStore: SignInStore {
    let database: Database

    func begin(_ signIn: PendingSignIn, stateHash: [UInt8], at now: Timestamp) async throws {
        _ = try await database.write(
            """
            WITH expired AS (DELETE FROM auth.oidc_sign_ins WHERE expires_at <= \(now.iso8601)::timestamptz)
            INSERT INTO auth.oidc_sign_ins (state_hash, nonce, code_verifier, cli_redirect, cli_challenge, expires_at)
            VALUES (\(ByteBuffer(bytes: stateHash)), \(signIn.nonce), \(signIn.codeVerifier), \(signIn.commandLine?.redirect),
                    \(signIn.commandLine?.challenge), \(signIn.expiresAt.iso8601)::timestamptz)
            """)
    }

    func take(stateHash: [UInt8], at now: Timestamp) async throws -> PendingSignIn? {
        let rows = try await database.write(
            """
            DELETE FROM auth.oidc_sign_ins WHERE state_hash = \(ByteBuffer(bytes: stateHash))
            RETURNING nonce, code_verifier, cli_redirect, cli_challenge, expires_at
            """)
        guard let row = rows.first else { return nil }
        let (nonce, verifier, redirect, challenge, expires) = try row.decode((String, String, String?, String?, Date).self)
        let signIn = PendingSignIn(
            nonce: nonce, codeVerifier: verifier,
            commandLine: redirect.flatMap { redirect in challenge.map { CommandLineReturn(redirect: redirect, challenge: $0) } },
            expiresAt: Timestamp(expires))
        return now < signIn.expiresAt ? signIn : nil
    }

    func beginHandoff(_ handoff: PendingHandoff, codeHash: [UInt8], expiresAt: Timestamp, at now: Timestamp) async throws {
        _ = try await database.write(
            """
            WITH expired AS (DELETE FROM auth.oidc_handoffs WHERE expires_at <= \(now.iso8601)::timestamptz)
            INSERT INTO auth.oidc_handoffs (code_hash, account_key, challenge, expires_at)
            VALUES (\(ByteBuffer(bytes: codeHash)), \(handoff.accountKey), \(handoff.challenge), \(expiresAt.iso8601)::timestamptz)
            """)
    }

    func takeHandoff(codeHash: [UInt8], at now: Timestamp) async throws -> PendingHandoff? {
        let rows = try await database.write(
            """
            DELETE FROM auth.oidc_handoffs WHERE code_hash = \(ByteBuffer(bytes: codeHash))
            RETURNING account_key, challenge, expires_at
            """)
        guard let row = rows.first else { return nil }
        let (key, challenge, expires) = try row.decode((String, String, Date).self)
        return now < Timestamp(expires) ? PendingHandoff(accountKey: key, challenge: challenge) : nil
    }
}
