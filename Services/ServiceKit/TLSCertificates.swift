import Foundation
import Logging
import NIOSSL
import ServerTransport
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The server's certificate chain and private key (`TLS_CERT`, `TLS_KEY`: PEM files), as a TLS context for
/// new connections. Read at start-up, where a missing, unreadable or mismatched pair stops the service with
/// one line, and again on SIGHUP (`reloadOnHangUp`): a renewed pair serves the connections that open after
/// it, the open ones go on with the pair they began with, and a pair that fails to read leaves the old one
/// in place.
///
/// TLS 1.2 and 1.3 only; on TLS 1.2, only forward-secret AEAD suites (TLS 1.3 has no others). ALPN offers
/// `h2`, then `http/1.1`.
public final class TLSCertificates: Sendable {
    public let certificatePath: String
    public let keyPath: String
    private let current: Mutex<NIOSSLContext>

    /// ECDHE key exchange with AES-GCM or ChaCha20-Poly1305, as the usual "intermediate" recommendation.
    static let tls12CipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ]

    public init(certificatePath: String, keyPath: String, applicationProtocols: [String]) throws(ConfigurationError) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.applicationProtocols = applicationProtocols
        current = Mutex(try Self.context(certificatePath: certificatePath, keyPath: keyPath, applicationProtocols: applicationProtocols))
    }

    private let applicationProtocols: [String]

    /// The context a connection opening now takes.
    public var context: NIOSSLContext { current.withLock { $0 } }

    /// Reads the pair again; from now on new connections get it. On failure the pair in use stays.
    public func reload() throws(ConfigurationError) {
        let context = try Self.context(certificatePath: certificatePath, keyPath: keyPath, applicationProtocols: applicationProtocols)
        current.withLock { $0 = context }
    }

    /// A service that reloads the pair at each SIGHUP until the service group shuts down.
    public func reloadOnHangUp(logger: Logger) -> some Service {
        HangUpReload(certificates: self, logger: logger)
    }

    static func context(certificatePath: String, keyPath: String, applicationProtocols: [String]) throws(ConfigurationError) -> NIOSSLContext {
        let chainBytes = try read("TLS_CERT", certificatePath)
        let keyBytes = try read("TLS_KEY", keyPath)
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(chainBytes)
        } catch {
            chain = []
        }
        guard !chain.isEmpty else { throw ConfigurationError("TLS_CERT (\(certificatePath)) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
        } catch {
            throw ConfigurationError("TLS_KEY (\(keyPath)) holds no PEM private key (an encrypted key needs its passphrase removed)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.maximumTLSVersion = .tlsv13
        configuration.cipherSuites = tls12CipherSuites.joined(separator: ":")
        configuration.applicationProtocols = applicationProtocols
        // A connection the gateway closes (idle, or the server stopping) sends its close_notify and waits this
        // long for the client's before closing the socket. NIO's 5 s made a stopping gateway wait 5 s for any
        // client that does not answer one (Python's ssl does not); every answer has been sent by then.
        configuration.shutdownTimeout = .milliseconds(500)
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw ConfigurationError("TLS_KEY (\(keyPath)) is not the private key of the first certificate in TLS_CERT (\(certificatePath))")
        }
    }

    private static func read(_ name: String, _ path: String) throws(ConfigurationError) -> [UInt8] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw ConfigurationError("\(name) names a file that does not exist: \(path)")
        }
        guard !isFolder.boolValue else { throw ConfigurationError("\(name) names a folder, not a PEM file: \(path)") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("\(name) names a file this process cannot read: \(path)")
        }
        return Array(data)
    }
}

/// Reloads the certificate pair on each SIGHUP, saying in the log what it did.
struct HangUpReload: Service {
    let certificates: TLSCertificates
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                try certificates.reload()
                logger.notice("TLS certificate reloaded for new connections", metadata: ["file": "\(certificates.certificatePath)"])
            } catch {
                logger.error("TLS certificate not reloaded; the previous one stays in use: \(error.description)")
            }
        }
    }
}

extension EnvironmentReader {
    /// `TLS_CERT` and `TLS_KEY`, read and checked as a pair; nil when neither is set.
    public func tlsCertificates() throws(ConfigurationError) -> TLSCertificates? {
        switch (self["TLS_CERT"], self["TLS_KEY"]) {
        case (nil, nil): return nil
        case (let certificate?, let key?):
            return try TLSCertificates(
                certificatePath: certificate, keyPath: key, applicationProtocols: HTTPSServerChannel.applicationProtocols)
        case (nil, _?), (_?, nil): throw ConfigurationError("TLS_CERT and TLS_KEY go together: set both (PEM files) to serve HTTPS, or neither")
        }
    }
}
