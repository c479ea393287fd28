// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "vault",
    products: [
        .library(name: "VaultArchive", targets: ["VaultArchive"]),
        .library(name: "VaultStore", targets: ["VaultStore"]),
        .library(name: "Vault", targets: ["Vault"]),
        .executable(name: "vault", targets: ["vault"]),
    ],
    targets: [
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
        .target(name: "VaultStore", dependencies: ["VaultCrypto", "VaultSystem"]),
        .target(name: "Vault", dependencies: ["VaultStore", "VaultArchive", "VaultCrypto"]),
        .executableTarget(name: "vault", dependencies: ["VaultStore"]),
        // A process for the multi-process tests to spawn.
        .executableTarget(
            name: "vault-test-helper", dependencies: ["Vault", "VaultCrypto", "VaultSystem"],
            path: "Sources/VaultTestHelper"),

        .testTarget(name: "VaultCryptoTests", dependencies: ["VaultCrypto"], exclude: ["Vectors"]),
        .testTarget(name: "VaultSystemTests", dependencies: ["VaultSystem"]),
        .testTarget(name: "VaultStoreTests", dependencies: ["VaultStore", "VaultCrypto", "VaultSystem"]),
        .testTarget(name: "VaultArchiveTests", dependencies: ["VaultArchive"], exclude: ["Vectors", "Regressions"]),
        .testTarget(
            name: "VaultTests",
            dependencies: ["Vault", "VaultStore", "VaultArchive", "VaultSystem", "vault-test-helper"]),
        // Crash, power-loss, fault, concurrency, hostile-file and memory harnesses (docs/RELIABILITY.md);
        // sizes grow with VAULT_STRESS=1 (scripts/stress).
        .testTarget(
            name: "VaultReliabilityTests",
            dependencies: ["Vault", "VaultStore", "VaultCrypto", "VaultSystem", "vault-test-helper"]),

        // VaultArchive fuzzing (scripts/fuzz) and benchmark (`swift run -c release archive-bench`).
        .executableTarget(name: "FuzzArchiveDecode", dependencies: ["VaultArchive"]),
        .executableTarget(name: "FuzzArchiveRoundTrip", dependencies: ["VaultArchive"]),
        .executableTarget(
            name: "vault-bench", dependencies: ["Vault", "VaultArchive", "VaultCrypto", "VaultSystem"],
            path: "Sources/VaultBench"),
        .executableTarget(name: "archive-bench", dependencies: ["VaultArchive"], path: "Sources/ArchiveBench"),
    ]
)
