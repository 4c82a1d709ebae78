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
        .library(name: "TillTesting", targets: ["TillTesting"]),
        .library(name: "TillServer", targets: ["TillServer"]),
        .library(name: "TillGatewayKit", targets: ["TillGatewayKit"]),
        .library(name: "TillPayFort", targets: ["TillPayFort"]),
        .library(name: "TillCitcon", targets: ["TillCitcon"]),
        .library(name: "TillSandbox", targets: ["TillSandbox"]),
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
    ],
    targets: [
        .target(
            name: "Till",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "TillTesting",
            dependencies: ["Till", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // What gateway modules share: codecs, canonical strings, constant-time compare, the typed HTTP
        // client, settings parsing, the plugin description. Core plus swift-crypto only.
        .target(
            name: "TillGatewayKit",
            dependencies: ["Till", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Gateway modules: Till plus what signing needs; nothing server-only (apps link them).
        .target(
            name: "TillPayFort",
            dependencies: ["Till", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/PayFort"
        ),
        .target(
            name: "TillCitcon",
            dependencies: ["Till", .product(name: "Crypto", package: "swift-crypto")],
            path: "Plugins/Citcon"
        ),
        // Local emulators of the gateways, written from their documentation, independent of the plugins.
        .target(
            name: "TillSandbox",
            dependencies: [
                "Till",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TillServer",
            dependencies: [
                "Till",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "till",
            dependencies: [
                "Till",
                "TillTesting",
                "TillServer",
                "TillPayFort",
                "TillCitcon",
                "TillSandbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TillTests",
            dependencies: ["Till", "TillTesting", .product(name: "Logging", package: "swift-log")],
            exclude: ["Fixtures"]
        ),
        .testTarget(name: "TillTestingTests", dependencies: ["Till", "TillTesting"]),
        .testTarget(name: "TillGatewayKitTests", dependencies: ["Till", "TillGatewayKit"]),
        .testTarget(
            name: "TillPayFortTests",
            dependencies: ["Till", "TillPayFort", "TillTesting", .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "TillCitconTests",
            dependencies: ["Till", "TillCitcon", "TillTesting", .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
        .testTarget(name: "TillSandboxTests", dependencies: ["Till", "TillSandbox"], exclude: ["Fixtures"]),
        .testTarget(
            name: "TillServerTests",
            dependencies: [
                "Till", "TillTesting", "TillServer", "TillPayFort", "TillCitcon", "TillSandbox",
                // Built so the crash-safety test can run the real `till server` process.
                "till",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
