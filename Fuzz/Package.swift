// swift-tools-version:6.2
import Foundation
import PackageDescription

/// AuthGate's coverage-guided fuzz targets (libFuzzer with the address sanitizer).
///
/// A package of its own so that the gateway's normal build is unchanged. Build it the way
/// `scripts/fuzz.sh` does: every module, ours and our dependencies', compiled with
/// `-sanitize=fuzzer,address` (coverage for libFuzzer, bounds for ASan) and `-enable-testing`
/// (the targets reach internal parsers through `@testable import`).
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility")
]

/// The gateway's package, by the identity SwiftPM gives a path dependency: its folder's name.
let main = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

/// One executable per input an outsider can feed; each defines `LLVMFuzzerTestOneInput`.
let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
    ("FuzzJSON", []),
    ("FuzzBase64URL", []),
    ("FuzzIDToken", []),
    ("FuzzJWKSet", []),
    ("FuzzRequestTarget", [.product(name: "AuthGateHTTP", package: main)]),
    (
        "FuzzProxyDecision",
        [
            .product(name: "AuthGateHTTP", package: main),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio")
        ]
    ),
    ("FuzzRESP", [.product(name: "RedisBridge", package: main), .product(name: "NIOCore", package: "swift-nio")]),
    ("FuzzConfiguration", []),
    ("FuzzAppleNotification", []),
    ("FuzzStoredRecords", []),
    ("FuzzRedirect", []),
    (
        "FuzzResponseFraming",
        [
            .product(name: "AuthGateHTTP", package: main),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio")
        ]
    ),
    (
        "FuzzWebSocketRelay",
        [
            .product(name: "AuthGateHTTP", package: main),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl")
        ]
    )
]

let package = Package(
    name: "authgate-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6")
    ],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "AuthGateCore", package: main),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        )
    ]
        + fuzzTargets.map { target in
            .executableTarget(
                name: target.name,
                dependencies: ["FuzzSupport", .product(name: "AuthGateCore", package: main)] + target.dependencies,
                swiftSettings: swiftSettings
            )
        }
)
