// swift-tools-version:6.1
import PackageDescription

/// The push transports the gateway links besides APNs, each `Sources/Transports/<Name>/` (target
/// `Tuisong<Name>`) declaring itself (`<Type>.declaration`: channel, token rule, config section,
/// credential form, factory). A new transport is its folder, one more name here and one line in
/// the gateway's registry (`Sources/TuisongGateway/Runtime/TransportRegistry.swift`).
let transports = ["FCM", "Huawei", "Honor", "Xiaomi", "OPPO", "Vivo", "Harmony"]

/// The transports that send through the HTTP/2 engine (`TuisongHTTP2Client`, the nghttp2 client
/// APNs sends through) rather than libcurl.
let http2Transports = ["FCM"]

/// Transports kept in the tests (`Tests/Transports/<Name>`), built and registered exactly as the
/// real ones are: the proof that a transport is a folder, a name in a list and a registry line
/// (the tests' binary `tuisong-with-test-transports` has that line: the CLI and the console
/// with the transport, for the CLI and browser tests).
let testTransports = ["Echo"]

/// The look-alike targets of the transports (the registry `TuisongLookAlikes` links them), and
/// the test transports with theirs (for the tests that register them).
let lookAlikes: [Target.Dependency] =
    ["TuisongAPNsLookAlike"] + transports.map { .target(name: "Tuisong\($0)LookAlike") }
let testTransportsWithLookAlikes: [Target.Dependency] = testTransports.flatMap { name -> [Target.Dependency] in
    [.target(name: "Tuisong\(name)"), .target(name: "Tuisong\(name)LookAlike")]
}

/// A transport's target: it sees the core, the delivery seam, the transport kit and its engines.
/// Its folder's `LookAlike/` is a target of its own (`Tuisong<Name>LookAlike`): the service's
/// look-alike on the look-alike kit, linked by local mode, `apns-mock` and the tests, never by the
/// transport.
func transport(_ name: String, under folder: String = "Sources/Transports") -> [Target] {
    [
        .target(
            name: "Tuisong\(name)",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongDelivery", "TuisongHTTPClient", "TuisongTransportKit",
                .product(name: "Logging", package: "swift-log"),
            ] + (http2Transports.contains(name) ? ["TuisongHTTP2Client"] : []),
            path: "\(folder)/\(name)", exclude: ["LookAlike"]),
        .target(
            name: "Tuisong\(name)LookAlike",
            dependencies: ["TuisongLookAlikeKit", "TuisongCrypto", .product(name: "Logging", package: "swift-log")],
            path: "\(folder)/\(name)/LookAlike"),
    ]
}

/// Every transport's targets, the test transports' included.
let transportTargets: [Target] =
    transports.flatMap { transport($0) } + testTransports.flatMap { transport($0, under: "Tests/Transports") }

/// The vendor providers the gateway links, each `Plugins/<Vendor>/` (target `<Vendor>Provider`)
/// with its tests in `Tests/<Vendor>ProviderTests/`. A new vendor is one more name here and one
/// line in the gateway's registry (`Sources/TuisongGateway/Runtime/Providers.swift`).
let vendors = ["Baidu", "Tencent", "Easemob", "JPush"]

/// Per vendor, the transports whose declared option rules or renderings its unit tests check its
/// mapping with (the transport's own rule, APNs's payload; not a copy), linked without the gateway.
let checkedAgainst = [
    "Tencent": ["Harmony", "APNsTransport"], "Baidu": ["APNsTransport"], "Easemob": ["APNsTransport"],
]

/// A provider's target and its two test targets. A provider sees the core through `TuisongPlugin`
/// and never imports the store, the gateway, another provider or a C module. Its unit tests
/// (`<Vendor>ProviderTests`: policies, signatures, parsing, its store on both databases) run on
/// `TuisongPluginTestKit` and never build the gateway; its end-to-end tests
/// (`<Vendor>EndToEndTests`: the whole gateway on loopback) run on `TuisongGatewayTestKit`.
/// Helpers both need are one file in the unit tests, linked from the end-to-end folder.
func provider(_ vendor: String) -> [Target] {
    [
        .target(
            name: "\(vendor)Provider",
            dependencies: [
                "TuisongCore", "TuisongHTTP", "TuisongPlugin", "TuisongCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Plugins/\(vendor)"),
        .testTarget(
            name: "\(vendor)ProviderTests",
            dependencies: [
                .target(name: "\(vendor)Provider"), "TuisongPluginTestKit", "TuisongCore", "TuisongHTTP",
                "TuisongPlugin", "TuisongStore", "TuisongCrypto", "TuisongDelivery",
                .product(name: "Logging", package: "swift-log"),
            ] + (checkedAgainst[vendor] ?? []).map { .target(name: "Tuisong\($0)") }),
        .testTarget(
            name: "\(vendor)EndToEndTests",
            dependencies: [
                .target(name: "\(vendor)Provider"), "TuisongPluginTestKit", "TuisongGatewayTestKit", "TuisongGateway",
                "TuisongCore", "TuisongHTTP", "TuisongPlugin", "TuisongStore", "TuisongCrypto", "TuisongDelivery",
                "TuisongLookAlikes", "TuisongPostgresTestKit", "TuisongTransportKit",
                .product(name: "Logging", package: "swift-log"),
            ] + (checkedAgainst[vendor] ?? []).map { .target(name: "Tuisong\($0)") }),
    ]
}

/// Every target is compiled in the Swift 6 language mode (the tools-version default) with
/// strict concurrency; C libraries come from Debian's -dev packages through pkg-config.
let package = Package(
    name: "Tuisong",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tuisong", targets: ["tuisong"])
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // MARK: C libraries (header + link only)
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CNGHTTP2", path: "Sources/CNGHTTP2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        // Tiny C for what Swift cannot call: variadic functions and function-like macros.
        .target(
            name: "CTuisongShims", dependencies: ["CMicroHTTPD", "CNGHTTP2", "COpenSSL"],
            path: "Sources/CTuisongShims"),

        // SQLite's memory counted without SQLite's global mutex (an allocator installed before
        // main); SQLite's C API is variadic where this is configured.
        .target(
            name: "CSQLiteShims", dependencies: [.product(name: "GRDBSQLite", package: "GRDB.swift")],
            path: "Sources/CSQLiteShims"),

        // MARK: Swift modules
        .target(name: "TuisongCore", path: "Sources/TuisongCore"),
        .target(
            name: "TuisongCrypto", dependencies: ["COpenSSL", "CTuisongShims"],
            path: "Sources/TuisongCrypto"),
        .target(
            name: "TuisongHTTP", dependencies: ["CMicroHTTPD", "CTuisongShims", "TuisongCore"],
            path: "Sources/TuisongHTTP"),
        .target(
            name: "TuisongPlugin",
            dependencies: ["TuisongCore", "TuisongHTTP", .product(name: "Logging", package: "swift-log")],
            path: "Sources/TuisongPlugin"),
        // The store written once: the SQL both databases share (`SQLStoreBackend`), no GRDB, no libpq.
        .target(name: "TuisongSQLStore", dependencies: ["TuisongCore"], path: "Sources/TuisongSQLStore"),
        .target(
            name: "TuisongSQLiteStore",
            dependencies: [
                "TuisongCore", "TuisongSQLStore", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                // The raw C API, for PointReaders' prepared statements (same system libsqlite3).
                .product(name: "GRDBSQLite", package: "GRDB.swift"), "CSQLiteShims",
            ],
            path: "Sources/TuisongSQLiteStore"),
        .target(
            name: "TuisongPostgresStore",
            dependencies: [
                "TuisongCore", "TuisongSQLStore", "TuisongPostgres", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TuisongPostgresStore"),
        // The opener that picks a backend from `database.url`, where both are visible.
        .target(
            name: "TuisongStore",
            dependencies: [
                "TuisongCore", "TuisongSQLStore", "TuisongSQLiteStore", "TuisongPostgresStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TuisongStore"),
        // The HTTP/2 client engine every HTTP/2 push service sends through (libnghttp2 over
        // OpenSSL): event loop, TLS + ALPN h2 connections, pool, request queue, flow control,
        // GOAWAY and reconnects. It names no service; each request type writes its own headers.
        .target(
            name: "TuisongHTTP2Client",
            dependencies: ["TuisongCrypto", "CNGHTTP2", .product(name: "Logging", package: "swift-log")],
            path: "Sources/TuisongHTTP2Client"),
        .target(
            name: "TuisongAPNs",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongHTTP2Client", .product(name: "Logging", package: "swift-log"),
            ],
            // APNs on the HTTP/2 engine: its requests and answers, provider tokens, reasons and
            // outcomes, the console's connection test; in the APNs folder beside its transport.
            path: "Sources/Transports/APNs/Engine"),
        // HTTP/1.1 and HTTP/2 client on libcurl's multi interface: the Android push transports.
        .target(
            name: "TuisongHTTPClient",
            dependencies: ["CCurl", .product(name: "Logging", package: "swift-log")],
            path: "Sources/TuisongHTTPClient"),
        // libpq behind a small Swift API: connections, a pool on its own threads, pipelines,
        // COPY, LISTEN/NOTIFY. The base of the PostgreSQL store (issue #21).
        .target(
            name: "TuisongPostgres",
            dependencies: ["CPostgres", .product(name: "Logging", package: "swift-log")],
            path: "Sources/TuisongPostgres"),
        // The look-alikes' shared server: TLS + HTTP/2 on one port, the event loops, connection
        // faults and counters, `PortService` (a service plugged into the port), what the
        // token-based look-alikes share (issued tokens, recording, receipt posting), the local
        // set-up and `LookAlikeDeclaration`. It names no service: each is declared from its
        // transport's folder (`Sources/Transports/<Name>/LookAlike`, APNs's too).
        .target(
            name: "TuisongLookAlikeKit",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "CNGHTTP2", "CTuisongShims",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TuisongLookAlikeKit"),
        // The look-alike registry: one line per transport's look-alike (`LookAlikeRegistry.standard`).
        .target(
            name: "TuisongLookAlikes",
            dependencies: [
                "TuisongLookAlikeKit", "TuisongCrypto", .product(name: "Logging", package: "swift-log"),
            ] + lookAlikes,
            path: "Sources/TuisongLookAlikes"),
        // The delivery pipeline: engine, message runs, retries, status, and the one send seam
        // (`PushTransport`) every transport conforms to. Core only: it knows no service.
        .target(
            name: "TuisongDelivery",
            dependencies: ["TuisongCore", .product(name: "Logging", package: "swift-log")],
            path: "Sources/TuisongDelivery"),
        // The APNs transport: the delivery seam over the HTTP/2 + JWT engine (TuisongAPNs), one
        // pool per credential and environment; Crypto for the credential material.
        .target(
            name: "TuisongAPNsTransport",
            dependencies: [
                "TuisongCore", "TuisongDelivery", "TuisongAPNs", "TuisongCrypto", "TuisongTransportKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            // The engine and the look-alike are targets of their own in its folder.
            path: "Sources/Transports/APNs", exclude: ["Engine", "LookAlike"]),
        // APNs's look-alike (the port's default: Apple's checks, provider tokens, client
        // certificates), made as `transport(_:)` makes every other transport's.
        .target(
            name: "TuisongAPNsLookAlike",
            dependencies: ["TuisongLookAlikeKit", "TuisongCrypto", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Transports/APNs/LookAlike"),
        // What the transports share besides the seam: their declaration (TransportDeclaration),
        // channel credentials and their resolver, the access-token cache, OAuth token answers,
        // the token-batch sender.
        .target(
            name: "TuisongTransportKit",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongDelivery", "TuisongHTTPClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/Kit"),
        .target(
            name: "TuisongGateway",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongHTTP", "TuisongPlugin", "TuisongStore", "TuisongDelivery",
                "TuisongLookAlikes", "TuisongHTTPClient", "TuisongTransportKit", "TuisongAPNsTransport",
                .product(name: "Logging", package: "swift-log"),
            ] + vendors.map { .target(name: "\($0)Provider") } + transports.map { .target(name: "Tuisong\($0)") },
            path: "Sources/TuisongGateway"),
        // The command line (`serve`, `credential add`, …) over the transports it is run with:
        // `tuisong` runs it with the standard registry, the tests' binary with theirs too.
        .target(
            name: "TuisongCLI",
            dependencies: [
                "TuisongGateway", "TuisongLookAlikes", "TuisongPlugin", "TuisongCore", "TuisongCrypto", "TuisongStore",
                "TuisongTransportKit", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TuisongCLI"),
        .executableTarget(name: "tuisong", dependencies: ["TuisongCLI", "TuisongGateway"], path: "Sources/tuisong"),

        // MARK: Tests

        // What a plugin's tests need: manual clock, test sealer, recording gateway, a
        // temporary store with the plugin's migrations, requests through a router without a
        // socket. A regular target used only by test targets.
        .target(
            name: "TuisongPluginTestKit",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongHTTP", "TuisongPlugin", "TuisongStore", "TuisongDelivery",
                "TuisongPostgresTestKit", "TuisongAPNsTransport", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TuisongPluginTestKit"),
        // A whole gateway on loopback for end-to-end tests: temporary directory, environment,
        // start and stop. Separate from the plugin kit so a plugin's unit tests do not build
        // the gateway.
        .target(
            name: "TuisongGatewayTestKit",
            dependencies: [
                "TuisongGateway", "TuisongCore", "TuisongLookAlikes", "TuisongPluginTestKit", "TuisongPostgresTestKit",
                "TuisongTransportKit", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TuisongGatewayTestKit"),
        .testTarget(name: "TuisongCoreTests", dependencies: ["TuisongCore"]),
        .testTarget(name: "TuisongCryptoTests", dependencies: ["TuisongCrypto", "TuisongPluginTestKit"]),
        .testTarget(name: "TuisongHTTPTests", dependencies: ["TuisongHTTP", "TuisongPluginTestKit"]),
        .testTarget(
            name: "TuisongTransportsTests",
            dependencies: [
                "TuisongTransportKit", "TuisongDelivery", "TuisongCore", "TuisongCrypto", "TuisongHTTPClient",
                "TuisongHTTP2Client", "TuisongLookAlikes", "TuisongPluginTestKit", "TuisongAPNsTransport",
                .product(name: "Logging", package: "swift-log"),
            ] + transports.map { .target(name: "Tuisong\($0)") },
            // The golden files are read from the source tree (GoldenTests).
            exclude: ["Golden"]),
        .testTarget(
            name: "TuisongStoreTests",
            dependencies: [
                "TuisongStore", "TuisongSQLStore", "TuisongSQLiteStore", "TuisongPostgresStore", "TuisongCore",
                "TuisongPluginTestKit", "TuisongPostgresTestKit", "TuisongAPNsTransport", "TuisongTransportKit",
                // The released migrations' digests (ReleasedMigrationTextTests).
                "TuisongCrypto",
                // A database left at an older migration, on a connection of its own (OpenChannelsMigrationTests).
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "TuisongDeliveryTests",
            dependencies: [
                "TuisongDelivery", "TuisongPluginTestKit", "TuisongStore", "TuisongSQLStore", "TuisongSQLiteStore",
                "TuisongPostgresStore", "TuisongCore", "TuisongAPNs", "TuisongLookAlikes", "TuisongCrypto",
                "TuisongPostgresTestKit", "TuisongTransportKit", "TuisongPostgres",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TuisongHTTPClientTests",
            dependencies: [
                "TuisongHTTPClient", "TuisongHTTP", "TuisongLookAlikes", "TuisongCrypto", "TuisongPluginTestKit",
            ]),
        // The throwaway PostgreSQL cluster (scripts/pg-test-cluster.sh) and a database per test,
        // for every test target that runs against PostgreSQL.
        .target(
            name: "TuisongPostgresTestKit", dependencies: ["TuisongPostgres"], path: "Tests/TuisongPostgresTestKit"),
        .testTarget(name: "TuisongPostgresTests", dependencies: ["TuisongPostgres", "TuisongPostgresTestKit"]),
        // The HTTP/2 engine on its own: its parts, and a pool with a request type of no service's
        // against the look-alikes' server.
        .testTarget(
            name: "TuisongHTTP2ClientTests",
            dependencies: [
                "TuisongHTTP2Client", "TuisongCrypto", "TuisongLookAlikes",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TuisongAPNsTests",
            dependencies: [
                "TuisongAPNs", "TuisongHTTP2Client", "TuisongLookAlikes", "TuisongLookAlikeKit", "TuisongAPNsLookAlike",
                "TuisongCrypto",
                "TuisongCore", "TuisongPluginTestKit",
            ]),
        .testTarget(
            name: "TuisongGatewayTests",
            dependencies: [
                "TuisongGateway", "TuisongGatewayTestKit", "TuisongHTTP", "TuisongStore", "TuisongCore",
                "TuisongLookAlikes", "TuisongCrypto", "TuisongDelivery", "TuisongPlugin", "TuisongPluginTestKit",
                "TuisongTransportKit", "TuisongHTTPClient", "TuisongHarmony", "TuisongSQLiteStore", "TuisongCLI",
                "TuisongAPNsTransport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ] + testTransportsWithLookAlikes),
        // `tuisong` with the transports kept in the tests registered too (one registry line each),
        // for the tests that run the binary: the CLI's flags and the console's form of a
        // transport that only its declaration describes.
        .executableTarget(
            name: "tuisong-with-test-transports",
            dependencies: ["TuisongCLI", "TuisongGateway"] + testTransports.map { .target(name: "Tuisong\($0)") },
            path: "Tests/TuisongWithTestTransports"),
    ] + transportTargets + vendors.flatMap(provider)
)
