// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "vault",
    products: [
        // The C API (include/vault.h). SwiftPM names it libVaultC.so (the name "vault" is the CLI's);
        // scripts/test-c-api installs it as libvault.so: see docs/C-API.md.
        .library(name: "VaultC", type: .dynamic, targets: ["VaultCAPI"]),
        .library(name: "VaultArchive", targets: ["VaultArchive"]),
        .library(name: "Vault", targets: ["Vault"]),
        // Fleet groups for the Swift API: one call, `FleetClient.etcd(watching:)`, for `Vault.open(fleet:)`.
        .library(name: "VaultFleet", targets: ["VaultFleet"]),
        .executable(name: "vault", targets: ["vault"]),
        .executable(name: "vault-fleet", targets: ["vault-fleet"]),
        // The freedesktop Secret Service over the vault, for libsecret, keyring and credential helpers.
        .executable(name: "vault-secret-service", targets: ["vault-secret-service"]),
        // Apple's SecItem API (names, constants, statuses) over the vault.
        .library(name: "Security", targets: ["Security"]),
    ],
    targets: [
        // The C API: include/vault.h as a Clang module, and its Swift implementation. It links VaultFleet
        // (which loads libcurl when a fleet group first needs it): fleet groups work through it as any other
        // group.
        .systemLibrary(name: "CVaultAPI", path: "Sources/CVaultAPI"),
        .target(name: "VaultCAPI", dependencies: ["CVaultAPI", "Vault", "VaultCrypto", "VaultFleet"]),
        // The Swift side of the C/Swift/CLI cross test (scripts/test-c-api), and a process over the C API
        // for the shared-group tests.
        .executableTarget(
            name: "vault-capi-peer", dependencies: ["Vault", "VaultCAPI", "CVaultAPI"], path: "Tests/Programs/CAPIPeer"),
        .testTarget(
            name: "VaultCAPITests", dependencies: ["VaultCAPI", "CVaultAPI", "Vault", "VaultFleet", "VaultTestSupport"]),

        // libsodium from Debian's libsodium-dev; imported (internally) by VaultCrypto only.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .target(name: "VaultCrypto", dependencies: ["CSodium"]),
        // Linux calls that Swift's Glibc module does not import (OFD locks, prctl).
        .target(name: "CVaultSystem"),
        .target(name: "VaultSystem", dependencies: ["CVaultSystem"]),
        .target(name: "VaultArchive"),
        // etcd's JSON gateway over libcurl, for fleet groups: built against Debian's libcurl4-openssl-dev,
        // not linked; libcurl.so.4 is loaded (dlopen) when a fleet group first needs it, so that a process
        // that uses none does not load it and its 30 libraries (vault_curl_shim.c). Never in the static CLI
        // (libcurl has no complete static build, and a static executable cannot dlopen it soundly).
        .target(name: "CVaultCurl"),
        .target(name: "VaultEtcd", dependencies: ["CVaultCurl", "VaultCrypto", "VaultSystem"]),
        // Fleet groups over VaultEtcd: the replication engine that `Vault.open(fleet: .etcd())` gives the store.
        .target(
            name: "VaultFleet", dependencies: ["VaultEtcd", "Vault", "VaultStore", "VaultCrypto", "VaultSystem"]),
        .target(name: "VaultStore", dependencies: ["VaultCrypto", "VaultSystem"]),
        .target(name: "Vault", dependencies: ["VaultStore", "VaultArchive", "VaultCrypto", "VaultSystem"]),
        // The command-line tool as a library (parser, one file per command), and a thin executable over
        // it. The installed executable is built by scripts/build-cli, static and laid out for start-up
        // (which is most of what a `vault get` costs: docs/PERFORMANCE.md); this manifest has no unusual
        // flags, so that a package that depends on this one builds as any other.
        .target(name: "VaultCLI", dependencies: ["Vault", "VaultArchive", "VaultStore", "VaultCrypto", "VaultSystem"]),
        .executableTarget(name: "vault", dependencies: ["VaultCLI", "VaultSystem"], exclude: ["startup.order"]),
        // The same tool with an etcd client, dynamically linked: `vault` hands fleet-group commands to it.
        .executableTarget(
            name: "vault-fleet", dependencies: ["VaultCLI", "VaultFleet", "VaultSystem"], path: "Sources/VaultFleetMain"
        ),
        // The Secret Service: D-Bus through Debian's libdbus-1 (VaultDBus is its one Swift wrapper), the
        // session algorithm's Diffie-Hellman, HKDF and AES through OpenSSL's libcrypto (one wrapper in
        // VaultSecretService), the service over the Vault API, and a thin executable.
        .systemLibrary(name: "CVaultDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CVaultOpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "VaultDBus", dependencies: ["CVaultDBus"]),
        .target(
            name: "VaultSecretService",
            dependencies: ["VaultDBus", "CVaultOpenSSL", "Vault", "VaultCrypto", "VaultFleet", "VaultSystem"]),
        .executableTarget(
            name: "vault-secret-service", dependencies: ["VaultSecretService", "Vault", "VaultSystem"],
            path: "Sources/VaultSecretServiceMain"),
        .testTarget(name: "VaultSecretServiceTests", dependencies: ["VaultSecretService", "VaultDBus", "Vault"]),
        // A process for the multi-process tests to spawn.
        .executableTarget(
            name: "vault-test-helper", dependencies: ["Vault", "VaultCrypto", "VaultSystem"],
            path: "Tests/Programs/TestHelper"),

        // What the test targets share: temporary vaults and directories removed when a test ends,
        // the helper processes, fault scopes, test key sources.
        .target(
            name: "VaultTestSupport", dependencies: ["Vault", "VaultStore", "VaultCrypto", "VaultSystem"],
            path: "Tests/VaultTestSupport"),
        .testTarget(name: "VaultCryptoTests", dependencies: ["VaultCrypto"], exclude: ["Vectors"]),
        .testTarget(name: "VaultSystemTests", dependencies: ["VaultSystem", "VaultTestSupport"]),
        .testTarget(
            name: "VaultStoreTests", dependencies: ["VaultStore", "VaultCrypto", "VaultSystem", "VaultTestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "VaultEtcdTests",
            dependencies: [
                "VaultEtcd", "VaultFleet", "Vault", "VaultStore", "VaultCrypto", "VaultSystem", "VaultTestSupport",
                "vault-security-peer", "vault", "vault-fleet", "vault-fleet-peer",
            ]),
        .testTarget(name: "VaultArchiveTests", dependencies: ["VaultArchive"], exclude: ["Vectors", "Regressions"]),
        .testTarget(
            name: "VaultCLITests",
            dependencies: [
                "VaultCLI", "Vault", "VaultSystem", "VaultTestSupport", "vault", "vault-security-peer",
                "vault-capi-peer",
            ]),
        .testTarget(
            name: "VaultTests",
            dependencies: [
                "Vault", "VaultStore", "VaultArchive", "VaultCrypto", "VaultSystem", "VaultTestSupport",
                "vault-test-helper",
            ],
            exclude: ["Fixtures"]),
        // Crash, power-loss, fault, concurrency, hostile-file and memory harnesses (docs/RELIABILITY.md);
        // sizes grow with VAULT_STRESS=1 (scripts/stress).
        .testTarget(
            name: "VaultReliabilityTests",
            dependencies: [
                "Vault", "VaultStore", "VaultCrypto", "VaultSystem", "VaultTestSupport", "vault-test-helper",
            ]),

        // VaultArchive fuzzing (scripts/fuzz); its benchmark is part of vault-bench.
        .executableTarget(name: "FuzzArchiveDecode", dependencies: ["VaultArchive"], path: "Tests/Fuzz/ArchiveDecode"),
        .executableTarget(
            name: "FuzzArchiveRoundTrip", dependencies: ["VaultArchive"], path: "Tests/Fuzz/ArchiveRoundTrip"),
        // vault-bench measures the CLI (`vault`, and `vault-fleet` for fleet groups) and a first read
        // through `Security` (`vault-security-peer`) next to it: building the bench builds them.
        .executableTarget(
            name: "vault-bench",
            dependencies: [
                "Vault", "VaultArchive", "VaultCrypto", "VaultSystem", "VaultEtcd", "VaultFleet", "vault",
                "vault-fleet", "vault-security-peer",
            ],
            path: "Tests/Benchmarks/VaultBench"),

        // Apple's Security framework names over the vault, so that keychain code written for iOS builds on Linux.
        .target(name: "Security", dependencies: ["Vault", "VaultFleet"]),
        // Keychain code written exactly as on iOS (only Foundation and Security); CI runs it.
        .executableTarget(
            name: "SecurityExample", dependencies: ["Security"], path: "Tests/Programs/SecurityExample"),
        // Reads one item through `Security` as a service would (scripts/test-service-recipe).
        .executableTarget(name: "vault-security-peer", dependencies: ["Security"], path: "Tests/Programs/SecurityPeer"),
        // One host's process in the fleet-group tests: increments an item through the Swift API.
        .executableTarget(
            name: "vault-fleet-peer", dependencies: ["Vault", "VaultFleet"], path: "Tests/Programs/FleetPeer"),
        .testTarget(
            name: "SecurityTests",
            dependencies: [
                "Security", "Vault", "VaultArchive", "VaultCrypto", "VaultStore", "VaultTestSupport", "SecurityExample",
            ]),
    ]
)
