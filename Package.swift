// swift-tools-version:6.1
import PackageDescription

/// The vendor providers the gateway links, each `Plugins/<Vendor>/` (target `<Vendor>Provider`)
/// with its tests in `Tests/<Vendor>ProviderTests/`. A new vendor is one more name here and one
/// line in the gateway's registry (`Sources/TuisongGateway/Providers.swift`).
let vendors = ["Baidu", "Tencent", "Easemob"]

/// A provider's target and its test target. A provider sees the core through `TuisongPlugin`
/// and never imports the store, the gateway, another provider or a C module; its tests run on
/// `TuisongPluginTestKit`, and end to end on `TuisongGatewayTestKit`.
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
                "TuisongPlugin", "TuisongStore", "TuisongCrypto", "TuisongDelivery", "TuisongGateway",
                "TuisongGatewayTestKit", "TuisongAPNsMock", "TuisongPostgresTestKit",
                .product(name: "Logging", package: "swift-log"),
            ]),
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

        // MARK: Swift modules
        .target(name: "TuisongCore", path: "Sources/TuisongCore"),
        .target(
            name: "TuisongCrypto", dependencies: ["COpenSSL", "CTuisongShims"],
            path: "Sources/TuisongCrypto"),
        .target(
            name: "TuisongHTTP", dependencies: ["CMicroHTTPD", "CTuisongShims"],
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
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
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
        .target(
            name: "TuisongAPNs",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "CNGHTTP2", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TuisongAPNs"),
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
        .target(
            name: "TuisongAPNsMock",
            dependencies: [
                "TuisongCrypto", "CNGHTTP2", "CTuisongShims", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TuisongAPNsMock"),
        // The delivery pipeline: engine, message runs, retries, and the one send seam
        // (`PushTransport`) with APNs as its first transport. Crypto for the credential
        // material APNs authenticates with (keys, certificates).
        .target(
            name: "TuisongDelivery",
            dependencies: [
                "TuisongCore", "TuisongAPNs", "TuisongCrypto", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TuisongDelivery"),
        // The Android transports behind the delivery seam, one folder each; the kit holds what
        // they share besides the seam (OAuth token answers, the token-batch sender).
        .target(
            name: "TuisongTransportKit",
            dependencies: [
                "TuisongCore", "TuisongDelivery", "TuisongHTTPClient", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/Kit"),
        .target(
            name: "TuisongFCM",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongDelivery", "TuisongHTTPClient", "TuisongTransportKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/FCM"),
        .target(
            name: "TuisongHuawei",
            dependencies: [
                "TuisongCore", "TuisongDelivery", "TuisongHTTPClient", "TuisongTransportKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/Huawei"),
        .target(
            name: "TuisongHonor",
            dependencies: [
                "TuisongCore", "TuisongDelivery", "TuisongHTTPClient", "TuisongTransportKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/Honor"),
        .target(
            name: "TuisongXiaomi",
            dependencies: [
                "TuisongCore", "TuisongDelivery", "TuisongHTTPClient", "TuisongTransportKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/Xiaomi"),
        .target(
            name: "TuisongOPPO",
            dependencies: [
                "TuisongCore", "TuisongDelivery", "TuisongHTTPClient", "TuisongTransportKit", "TuisongCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/OPPO"),
        .target(
            name: "TuisongVivo",
            dependencies: [
                "TuisongCore", "TuisongDelivery", "TuisongHTTPClient", "TuisongTransportKit", "TuisongCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transports/Vivo"),
        .target(
            name: "TuisongGateway",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongHTTP", "TuisongPlugin", "TuisongStore", "TuisongDelivery",
                "TuisongAPNs", "TuisongAPNsMock", "TuisongHTTPClient", "TuisongFCM", "TuisongHuawei", "TuisongHonor",
                "TuisongXiaomi", "TuisongOPPO", "TuisongVivo", .product(name: "Logging", package: "swift-log"),
            ] + vendors.map { .target(name: "\($0)Provider") },
            path: "Sources/TuisongGateway"),
        .executableTarget(
            name: "tuisong",
            dependencies: [
                "TuisongGateway", "TuisongAPNsMock", "TuisongPlugin", "TuisongCore", "TuisongCrypto", "TuisongStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/tuisong"),

        // MARK: Tests

        // What a plugin's tests need: manual clock, test sealer, recording gateway, a
        // temporary store with the plugin's migrations, requests through a router without a
        // socket. A regular target used only by test targets.
        .target(
            name: "TuisongPluginTestKit",
            dependencies: [
                "TuisongCore", "TuisongCrypto", "TuisongHTTP", "TuisongPlugin", "TuisongStore", "TuisongDelivery",
                "TuisongPostgresTestKit", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TuisongPluginTestKit"),
        // A whole gateway on loopback for end-to-end tests: temporary directory, environment,
        // start and stop. Separate from the plugin kit so a plugin's unit tests do not build
        // the gateway.
        .target(
            name: "TuisongGatewayTestKit",
            dependencies: [
                "TuisongGateway", "TuisongCore", "TuisongAPNsMock", "TuisongPluginTestKit", "TuisongPostgresTestKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TuisongGatewayTestKit"),
        .testTarget(name: "TuisongCoreTests", dependencies: ["TuisongCore"]),
        .testTarget(name: "TuisongCryptoTests", dependencies: ["TuisongCrypto"]),
        .testTarget(name: "TuisongHTTPTests", dependencies: ["TuisongHTTP", "TuisongPluginTestKit"]),
        .testTarget(
            name: "TuisongTransportsTests",
            dependencies: [
                "TuisongFCM", "TuisongHuawei", "TuisongHonor", "TuisongXiaomi", "TuisongOPPO", "TuisongVivo",
                "TuisongTransportKit", "TuisongDelivery", "TuisongCore",
                "TuisongCrypto", "TuisongHTTPClient", "TuisongAPNsMock", "TuisongPluginTestKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            // The golden files are read from the source tree (GoldenTests).
            exclude: ["Golden"]),
        .testTarget(
            name: "TuisongStoreTests",
            dependencies: [
                "TuisongStore", "TuisongSQLStore", "TuisongSQLiteStore", "TuisongPostgresStore", "TuisongCore",
                "TuisongPluginTestKit", "TuisongPostgresTestKit",
                // A database left at an older migration, on a connection of its own (OpenChannelsMigrationTests).
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "TuisongDeliveryTests",
            dependencies: [
                "TuisongDelivery", "TuisongPluginTestKit", "TuisongStore", "TuisongSQLStore", "TuisongSQLiteStore",
                "TuisongPostgresStore", "TuisongCore", "TuisongAPNs", "TuisongAPNsMock", "TuisongCrypto",
                "TuisongPostgresTestKit",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "TuisongHTTPClientTests",
            dependencies: [
                "TuisongHTTPClient", "TuisongHTTP", "TuisongAPNsMock", "TuisongCrypto", "TuisongPluginTestKit",
            ]),
        // The throwaway PostgreSQL cluster (scripts/pg-test-cluster.sh) and a database per test,
        // for every test target that runs against PostgreSQL.
        .target(
            name: "TuisongPostgresTestKit", dependencies: ["TuisongPostgres"], path: "Tests/TuisongPostgresTestKit"),
        .testTarget(name: "TuisongPostgresTests", dependencies: ["TuisongPostgres", "TuisongPostgresTestKit"]),
        .testTarget(
            name: "TuisongAPNsTests",
            dependencies: ["TuisongAPNs", "TuisongAPNsMock", "TuisongCrypto", "TuisongCore", "TuisongPluginTestKit"]),
        .testTarget(
            name: "TuisongGatewayTests",
            dependencies: [
                "TuisongGateway", "TuisongGatewayTestKit", "TuisongHTTP", "TuisongStore", "TuisongCore",
                "TuisongAPNsMock", "TuisongCrypto", "TuisongDelivery", "TuisongPlugin", "TuisongPluginTestKit",
            ]),
    ] + vendors.flatMap(provider)
)
