// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "OnTheMap",
    // Synchronization's Mutex, used throughout, is there from macOS 15 (Linux has it with the toolchain).
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "locations-service", targets: ["LocationsService"]),
        .executable(name: "auth-gateway", targets: ["AuthGateway"]),
        .library(name: "OnTheMapShared", targets: ["OnTheMapShared"]),
        .library(name: "OnTheMapClient", targets: ["OnTheMapClient"]),
        .executable(name: "onthemap", targets: ["OnTheMapCLI"]),
    ],
    dependencies: [
        // Patch releases only: PreparedHTTP builds its route table with the router's trie through
        // `@_spi(Internal)`, which a minor release may change (RouteTableResolutionTests).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", .upToNextMinor(from: "2.28.1")),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // OpenID Connect ID tokens: signatures checked against the issuer's JWKS.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
    ],
    targets: [
        .target(
            name: "OnTheMapShared",
            // NIOCore for `ByteBuffer`, which the wire types are written into; every program that uses
            // them sends them with NIO.
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            path: "Shared"
        ),
        // gzip and brotli for answers, through Debian's zlib and libbrotli.
        .systemLibrary(name: "CZlib", path: "Services/CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CBrotli", path: "Services/CBrotli", providers: [.apt(["libbrotli-dev"])]),
        .target(
            name: "ContentCoding",
            dependencies: ["CZlib", "CBrotli", .product(name: "NIOCore", package: "swift-nio")],
            path: "Services/ContentCoding"
        ),
        // The transport beneath the router: Hummingbird's HTTP/1 channel with handlers right after the parser,
        // HTTP/2 streams answered on the event loop before any reaches the router, TLS with ALPN between them.
        .target(
            name: "ServerTransport",
            dependencies: [
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
            ],
            path: "Services/ServerTransport"
        ),
        // The door before the router: answers decided on a connection's event loop (PreparedConnectionState),
        // and the route table both doors share.
        .target(
            name: "PreparedHTTP",
            dependencies: [
                "ServerTransport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Services/PreparedHTTP"
        ),
        .target(
            name: "ServiceKit",
            dependencies: [
                "OnTheMapShared",
                "ContentCoding",
                "PreparedHTTP",
                "ServerTransport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Services/ServiceKit"
        ),
        .target(
            name: "Geocoding",
            dependencies: [
                "OnTheMapShared",
                "ServiceKit",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Services/Geocoding",
            resources: [.copy("Resources")]
        ),
        .executableTarget(
            name: "LocationsService",
            dependencies: [
                "OnTheMapShared",
                "PreparedHTTP",
                "ServiceKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Services/LocationsService"
        ),
        .executableTarget(
            name: "AuthGateway",
            dependencies: [
                "OnTheMapShared",
                "PreparedHTTP",
                "ServiceKit",
                "Geocoding",
                "ContentCoding",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "JWTKit", package: "jwt-kit"),
                "WebClient",
            ],
            path: "Services/AuthGateway",
            resources: [.copy("Resources")]
        ),
        // Micro-measurements behind claims in comments, against the simpler code; bench/run.py runs it.
        .executableTarget(
            name: "MicroBenchmarks",
            dependencies: ["OnTheMapShared", "Geocoding", "ContentCoding"],
            path: "bench/micro"
        ),
        // The least the HTTP stack costs per answer, a figure beside the hot read's in bench/run.py.
        .executableTarget(
            name: "HTTPFloor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "bench/floor"
        ),
        // Fuzzes the parsers that read what clients send; see scripts/fuzz.sh.
        .executableTarget(
            name: "ParserFuzzer",
            dependencies: [
                "OnTheMapShared",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Fuzz",
            exclude: ["corpus"]
        ),
        .target(
            name: "OnTheMapClient",
            dependencies: [
                "OnTheMapShared",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // SHA-256 for the PKCE challenge of a sign-in in the browser.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Clients/OnTheMapClient"
        ),
        // The browser client's static files, shipped as a resource bundle beside the gateway's binary.
        .target(
            name: "WebClient",
            path: "Clients/web",
            resources: [.copy("static")]
        ),
        .executableTarget(
            name: "OnTheMapCLI",
            dependencies: [
                "OnTheMapClient",
                "OnTheMapShared",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Clients/onthemap"
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "OnTheMapShared",
                "ContentCoding",
                "ServiceKit",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The stand-in Graph API checks the gateway's appsecret_proof (HMAC-SHA256).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/TestSupport"
        ),
        // The services in memory for tests: the stores' memory twins, the routers over them, and a transport
        // that hands the client library's calls to the gateway's router (debug builds alone: they reach the
        // services' internals through `@testable import`).
        .target(
            name: "ServiceTwins",
            dependencies: [
                "AuthGateway",
                "LocationsService",
                "OnTheMapClient",
                "OnTheMapShared",
                "PreparedHTTP",
                "ServiceKit",
                "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Tests/ServiceTwins"
        ),
        .testTarget(
            name: "SharedTests",
            dependencies: ["OnTheMapShared", .product(name: "NIOCore", package: "swift-nio")],
            path: "Tests/SharedTests"
        ),
        .testTarget(
            name: "ContentCodingTests",
            dependencies: ["ContentCoding", "TestSupport", .product(name: "NIOCore", package: "swift-nio")],
            path: "Tests/ContentCodingTests"
        ),
        .testTarget(
            name: "PreparedHTTPTests",
            dependencies: [
                "PreparedHTTP",
                "ServerTransport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/PreparedHTTPTests"
        ),
        .testTarget(
            name: "ServiceKitTests",
            dependencies: [
                "ServiceKit",
                "TestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/ServiceKitTests"
        ),
        .testTarget(
            name: "LocationsServiceTests",
            dependencies: [
                "LocationsService",
                "OnTheMapShared",
                "ServiceKit",
                "ServiceTwins",
                "TestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Tests/LocationsServiceTests"
        ),
        .testTarget(
            name: "AuthGatewayTests",
            dependencies: [
                "AuthGateway",
                // Its router, over pins in memory, stands behind the gateway in router-level tests.
                "LocationsService",
                "OnTheMapShared",
                "PreparedHTTP",
                "ServiceKit",
                "ServiceTwins",
                "TestSupport",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Tests/AuthGatewayTests"
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "TestSupport", "OnTheMapShared", "ServiceKit", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/EndToEndTests",
            // Read from the source folder by the schemathesis run, not built into the tests.
            exclude: ["schemathesis.toml", "schemathesis_hooks.py"]
        ),
        .testTarget(
            name: "OnTheMapClientTests",
            dependencies: [
                "OnTheMapClient",
                "OnTheMapCLI",
                "OnTheMapShared",
                "ServiceTwins",
                "TestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Tests/OnTheMapClientTests"
        ),
        .testTarget(
            name: "GeocodingTests",
            dependencies: [
                "Geocoding",
                "OnTheMapShared",
                "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/GeocodingTests"
        ),
    ]
)
