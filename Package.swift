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
        .executable(name: "till", targets: ["till"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.0"),
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
        .executableTarget(
            name: "till",
            dependencies: [
                "Till",
                "TillTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "TillTests",
            dependencies: ["Till", "TillTesting", .product(name: "Logging", package: "swift-log")],
            exclude: ["Fixtures"]
        ),
        .testTarget(name: "TillTestingTests", dependencies: ["Till", "TillTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
