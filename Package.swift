// swift-tools-version:6.0
import PackageDescription

// Dependency policy: the core (`Till`) and the gateway modules may depend only on Foundation and
// Apple's small API packages, so an app that embeds them pulls nothing server-only. The
// command-line tool is the only place that adds swift-argument-parser.
let package = Package(
    name: "Till",
    platforms: [.macOS(.v13), .iOS(.v15)],
    products: [
        .library(name: "Till", targets: ["Till"]),
        .library(name: "TillOrchestration", targets: ["TillOrchestration"]),
        .library(name: "TillService", targets: ["TillService"]),
        .library(name: "TillTesting", targets: ["TillTesting"]),
        .library(name: "TillServer", targets: ["TillServer"]),
        .library(name: "TillGatewayKit", targets: ["TillGatewayKit"]),
        // A gateway module is two libraries: the app half an app links, and the server half that holds
        // credentials (the merchant server links it; an app never does).
        .library(name: "TillPayFort", targets: ["TillPayFort"]),
        .library(name: "TillPayFortServer", targets: ["TillPayFortServer"]),
        .library(name: "TillCitcon", targets: ["TillCitcon"]),
        .library(name: "TillCitconServer", targets: ["TillCitconServer"]),
        .library(name: "TillWorldline", targets: ["TillWorldline"]),
        .library(name: "TillWorldlineServer", targets: ["TillWorldlineServer"]),
        .library(name: "TillIPayNow", targets: ["TillIPayNow"]),
        .library(name: "TillIPayNowServer", targets: ["TillIPayNowServer"]),
        .library(name: "TillEcommpay", targets: ["TillEcommpay"]),
        .library(name: "TillEcommpayServer", targets: ["TillEcommpayServer"]),
        .library(name: "TillSandbox", targets: ["TillSandbox"]),
        // For a merchant's backend: checks the Till-Signature of the events Till posts to it.
        .library(name: "TillWebhooks", targets: ["TillWebhooks"]),
        .executable(name: "till", targets: ["till"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.0"),
        // Server-only: used by TillServer and the command-line tool, never by Till or a gateway module.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        // Server-only: the reconciler runs beside the HTTP server in one service group.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.8.0"),
        // Server-only: `GET /metrics` on `server.metrics.listen`, in Prometheus's text format.
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        // Tests only: reads docs/openapi.yaml, which a test holds the server to.
        .package(url: "https://github.com/jpsim/Yams.git", from: "5.0.1"),
    ],
    targets: [
        .target(
            name: "Till",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        // The server's rules, no HTTP and no SQL: the server half of a gateway, the plugin description, the
        // merchant configuration, the router, health and the one attempt policy. Never linked by an app.
        .target(name: "TillOrchestration", dependencies: ["Till"]),
        // The payment service over a store protocol: one settle function, the reconciler, the configuration file,
        // an in-memory store and the in-process backend. Adapters (HTTP, SQLite, PostgreSQL) live in TillServer.
        .target(
            name: "TillService",
            dependencies: [
                "Till", "TillOrchestration", "TillGatewayKit", "TillWebhooks",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "TillTesting",
            dependencies: ["Till", "TillOrchestration", "TillService", "TillGatewayKit", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        // Tests only: runs TillTesting's TestRun.setUp() when the test binary loads (quiet logs, a skipped line).
        .target(name: "TillTestSetup", dependencies: ["TillTesting"], path: "Tests/Support/TillTestSetup"),
        // What gateway modules share, app-safe: codecs, canonical strings, constant-time compare, documented
        // fields, the typed HTTP client. Core plus swift-crypto only.
        .target(
            name: "TillGatewayKit",
            dependencies: ["Till", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Gateway modules: Till plus what signing needs; nothing server-only (apps link them).
        .target(
            name: "TillPayFort",
            dependencies: ["Till", "TillGatewayKit", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/PayFort/Client"
        ),
        .target(
            name: "TillPayFortServer",
            dependencies: ["Till", "TillOrchestration", "TillGatewayKit", "TillPayFort", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/PayFort/Server"
        ),
        .target(
            name: "TillCitcon",
            dependencies: ["Till", "TillGatewayKit", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/Citcon/Client"
        ),
        .target(
            name: "TillCitconServer",
            dependencies: ["Till", "TillOrchestration", "TillGatewayKit", "TillCitcon", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/Citcon/Server"
        ),
        // Worldline's app half encrypts the customer's input (RSA-OAEP and AES-CBC: _CryptoExtras).
        .target(
            name: "TillWorldline",
            dependencies: ["Till", "TillGatewayKit", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "_CryptoExtras", package: "swift-crypto")],
            path: "Plugins/Worldline/Client"
        ),
        .target(
            name: "TillWorldlineServer",
            dependencies: ["Till", "TillOrchestration", "TillGatewayKit", "TillWorldline", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/Worldline/Server"
        ),
        // iPayNow's app half only checks the signed order; MD5 signing (swift-crypto's Insecure.MD5) is the server's.
        .target(
            name: "TillIPayNow",
            dependencies: ["Till", "TillGatewayKit"],
            path: "Plugins/IPayNow/Client"
        ),
        .target(
            name: "TillIPayNowServer",
            dependencies: ["Till", "TillOrchestration", "TillGatewayKit", "TillIPayNow", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/IPayNow/Server"
        ),
        // ecommpay's app half builds and checks the payment options; HMAC-SHA512 signing is the server's.
        .target(
            name: "TillEcommpay",
            dependencies: ["Till", "TillGatewayKit"],
            path: "Plugins/Ecommpay/Client"
        ),
        .target(
            name: "TillEcommpayServer",
            dependencies: ["Till", "TillOrchestration", "TillGatewayKit", "TillEcommpay", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/Ecommpay/Server"
        ),
        // Local emulators of the gateways, written from their documentation, independent of the plugins.
        .target(
            name: "TillSandbox",
            dependencies: [
                "Till",
                // The webhook receiver checks each event's Till-Signature.
                "TillWebhooks",
                .product(name: "Crypto", package: "swift-crypto"),
                // The Worldline emulator decrypts the app's JWE with its own RSA private key.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TillServer",
            dependencies: [
                "Till",
                "TillOrchestration",
                "TillService",
                "TillGatewayKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // The connection limit (MaximumAvailableConnections) and the HTTP/1 channel's timeouts.
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Signs and verifies the events Till posts to a merchant's backend. Depends on nothing (its own SHA-256
        // and HMAC), so a receiver can link it or copy its two files.
        .target(name: "TillWebhooks"),
        // The chaos run: production's PaymentService on a real store, fake gateways injecting faults.
        .target(
            name: "TillChaos",
            dependencies: ["Till", "TillOrchestration", "TillService", "TillGatewayKit", "TillTesting", "TillServer", "TillWebhooks",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "till",
            dependencies: [
                "Till",
                "TillOrchestration",
                "TillService",
                "TillTesting",
                "TillServer",
                "TillGatewayKit",
                "TillPayFort",
                "TillPayFortServer",
                "TillCitcon",
                "TillCitconServer",
                "TillWorldline",
                "TillWorldlineServer",
                "TillIPayNow",
                "TillIPayNowServer",
                "TillEcommpay",
                "TillEcommpayServer",
                "TillSandbox",
                "TillChaos",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // SIGHUP: `till server` reloads its configuration's keys and rate limits.
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // Starts child processes for the tests that run `till server` and Python (see ChildProcess.swift for
        // why not Foundation's Process).
        .target(name: "TillChildProcess", path: "Tests/Support/TillChildProcess"),
        .testTarget(
            name: "TillTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillTesting", .product(name: "Logging", package: "swift-log")],
            exclude: ["Fixtures"]
        ),
        .testTarget(name: "TillTestingTests", dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillTesting"]),
        .testTarget(name: "TillGatewayKitTests", dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillGatewayKit"]),
        .testTarget(name: "TillChaosTests", dependencies: ["TillTestSetup", "Till", "TillTesting", "TillServer", "TillChaos"]),
        // Proves docs/implementing-a-gateway.md: a toy gateway added by following only that page.
        .testTarget(
            name: "ToyGatewayTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "TillService", 
                "Till", "TillGatewayKit", "TillServer", "TillSandbox",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "TillPayFortTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillGatewayKit", "TillPayFort", "TillPayFortServer", "TillTesting",
                           .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "TillCitconTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillGatewayKit", "TillCitcon", "TillCitconServer", "TillTesting",
                           .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "TillWorldlineTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillGatewayKit", "TillWorldline", "TillWorldlineServer", "TillTesting",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "_CryptoExtras", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "TillIPayNowTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillGatewayKit", "TillIPayNow", "TillIPayNowServer", "TillTesting",
                           .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "TillEcommpayTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillGatewayKit", "TillEcommpay", "TillEcommpayServer", "TillTesting",
                           .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
        // The vendors' own code as the other party: official Python SDKs in a virtualenv the tests make.
        .testTarget(
            name: "TillInteropTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "Till", "TillGatewayKit", "TillWorldline", "TillWorldlineServer", "TillIPayNow", "TillIPayNowServer",
                           "TillEcommpay", "TillEcommpayServer", "TillSandbox", "TillTesting", "TillChildProcess",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "_CryptoExtras", package: "swift-crypto")],
            exclude: ["Fixtures", "Python"]
        ),
        .testTarget(name: "TillSandboxTests", dependencies: ["TillTestSetup", "Till", "TillSandbox",
                                                             .product(name: "Hummingbird", package: "hummingbird"),
                                                             .product(name: "_CryptoExtras", package: "swift-crypto")],
                    exclude: ["Fixtures"]),
        // The signature against the FIPS and RFC vectors, docs/events.md's vectors, and its Python verifier.
        .testTarget(name: "TillWebhooksTests", dependencies: ["TillTestSetup", "TillWebhooks", "TillChildProcess"],
                    exclude: ["Fixtures"]),
        .testTarget(
            name: "TillServerTests",
            dependencies: ["TillTestSetup", "TillOrchestration", "TillService", 
                "Till", "TillGatewayKit", "TillTesting", "TillServer", "TillPayFort", "TillPayFortServer", "TillCitcon",
                "TillCitconServer", "TillWorldline", "TillWorldlineServer", "TillIPayNow", "TillIPayNowServer", "TillEcommpay", "TillEcommpayServer",
                "TillSandbox", "TillChildProcess",
                // Built so the crash-safety test can run the real `till server` process.
                "till",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Yams", package: "Yams"),
                // A connection's handlers, driven without a socket.
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
