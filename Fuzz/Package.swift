// swift-tools-version:6.0
import PackageDescription

// Coverage-guided fuzzing of Till's parsers of outside input (libFuzzer). Not part of the root package: built
// only by scripts/fuzz, with the sanitizers on every Swift module:
//
//     swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
//
// Each target is an executable exporting `LLVMFuzzerTestOneInput`. Its entry point hands that function to libFuzzer's
// driver (FuzzSupport's runLibFuzzer): SwiftPM links an executable's `main` to a `<target>_main` entry point of its
// own, so libFuzzer's `main` is never used and a target without an entry point does not link.
// The fuzz targets reach Till only through its public API.

let targets = [
    "formfields", "orderedjson", "money", "intent", "config", "returnurl",
    "payfort", "citcon", "worldline", "ipaynow", "ecommpay", "webhooksig",
]

let till: [Target.Dependency] = [
    .product(name: "Till", package: "Till"),
    .product(name: "TillGatewayKit", package: "Till"),
    .product(name: "TillOrchestration", package: "Till"),
]

func dependencies(of target: String) -> [Target.Dependency] {
    var out: [Target.Dependency] = ["FuzzSupport"]
    switch target {
    case "formfields", "orderedjson", "money", "returnurl": out += till
    case "intent": out += till
    case "config":
        out += till + [
            .product(name: "TillService", package: "Till"),
            .product(name: "TillPayFortServer", package: "Till"),
            .product(name: "TillCitconServer", package: "Till"),
            .product(name: "TillWorldlineServer", package: "Till"),
            .product(name: "TillIPayNowServer", package: "Till"),
            .product(name: "TillEcommpayServer", package: "Till"),
        ]
    case "payfort": out += till + [.product(name: "TillPayFort", package: "Till"), .product(name: "TillPayFortServer", package: "Till")]
    case "citcon": out += till + [.product(name: "TillCitcon", package: "Till"), .product(name: "TillCitconServer", package: "Till")]
    case "worldline": out += till + [.product(name: "TillWorldline", package: "Till"), .product(name: "TillWorldlineServer", package: "Till")]
    case "ipaynow": out += till + [.product(name: "TillIPayNow", package: "Till"), .product(name: "TillIPayNowServer", package: "Till")]
    case "ecommpay": out += till + [.product(name: "TillEcommpay", package: "Till"), .product(name: "TillEcommpayServer", package: "Till")]
    case "webhooksig": out += [.product(name: "TillWebhooks", package: "Till")]
    default: break
    }
    return out
}

let package = Package(
    name: "TillFuzz",
    platforms: [.macOS(.v13)],
    dependencies: [
        // The repository's own package, by path (its dependencies resolve as the root package's do).
        .package(name: "Till", path: ".."),
    ],
    targets: [
        // LLVMFuzzerRunDriver's declaration (libFuzzer's, linked by -sanitize=fuzzer).
        .target(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", .product(name: "Till", package: "Till"),
                                                   .product(name: "TillOrchestration", package: "Till")]),
    ] + targets.map { name in
        .executableTarget(name: name, dependencies: dependencies(of: name))
    },
    swiftLanguageModes: [.v6]
)
