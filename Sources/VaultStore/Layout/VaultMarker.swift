import VaultCrypto
import VaultSystem

/// The `VAULT` file: it marks a directory as a vault, says which format wrote it, and carries the vault
/// id that every item file is bound to.
///
/// Layout (56 bytes): "VLTV" | format version u8 (1, or 2: per-group keys) | flags u8 | versions kept + 1
/// u8 (0: the default) | reserved u8 (0) |
/// vault id (16 random bytes) |
/// keyed BLAKE2b-256 of the first 24 bytes under the `always` class key ("vault.marker.v1"), which
/// every opener has, locked or not. The version is
/// readable without the key so that a newer format is named as such; the tag makes any change to the
/// vault id detectable once the key is known.
struct VaultMarker: Equatable {
    static let fileName = "VAULT"
    static let magic: [UInt8] = Array("VLTV".utf8)
    /// The format this build writes: a key per access group.
    static let formatVersion: UInt8 = 2
    /// The formats this build reads: format 1 (one key for every group) only to upgrade it.
    static let supportedVersions: ClosedRange<UInt8> = 1...2
    static let vaultIDByteCount = 16
    static let headerByteCount = 24
    static let tagByteCount = 32
    static let byteCount = headerByteCount + tagByteCount
    static let tagDomain = KeyDerivation.Domain("vault.marker.v1")
    /// The most bytes read from a `VAULT` file: enough for this format and any later one's header.
    static let maximumReadByteCount = 4096

    let vaultID: [UInt8]
    var version: UInt8 = VaultMarker.formatVersion
    /// The vault keeps its item class keys in `classes.key` (flags bit 0). A vault made before that
    /// file existed has the bit clear, and its class keys stand in for them.
    var hasItemClassKeys = false
    /// How many previous versions of each item the vault keeps (`ItemHistory`), plus one; 0 for the
    /// default (`versionsKept(_:)`).
    var versionsKept: UInt8 = 0

    /// The number of versions kept that the setting byte `setting` says.
    static func versionsKept(_ setting: UInt8) -> Int {
        setting == 0 ? ItemHistory.defaultVersionsKept : Int(setting) - 1
    }

    static func random() throws(StoreError) -> VaultMarker {
        do {
            return VaultMarker(vaultID: try SecureRandom.bytes(count: vaultIDByteCount), hasItemClassKeys: true)
        } catch {
            throw StoreError.crypto(error, "cannot make a vault id")
        }
    }

    func header() -> [UInt8] {
        Self.magic + [version, hasItemClassKeys ? 1 : 0, versionsKept, 0] + vaultID
    }

    /// The marker as a member of a shared group reads it: the format and the vault id, unchecked (only
    /// the owner has the key of its tag; what a member reads is checked against its group's key).
    static func unverified(_ bytes: [UInt8], path: FilePath) throws(StoreError) -> VaultMarker {
        try checkLayout(bytes, path: path)
        return VaultMarker(
            vaultID: Array(bytes[8..<headerByteCount]), version: bytes[4], hasItemClassKeys: bytes[5] == 1,
            versionsKept: bytes[4] >= 2 ? bytes[6] : 0)
    }

    private static func checkLayout(_ bytes: [UInt8], path: FilePath) throws(StoreError) {
        guard bytes.count >= 5, Array(bytes[0..<4]) == magic else {
            throw StoreError(
                .integrity, "\(path) is not a vault marker (bad magic); the file is damaged", path: path.string)
        }
        guard supportedVersions.contains(bytes[4]) else {
            throw StoreError(
                .unsupportedFormat,
                "vault at \(path) has format version \(bytes[4]); this build of vault reads versions "
                    + "\(supportedVersions.lowerBound) to \(supportedVersions.upperBound)",
                path: path.string)
        }
        let flags: Set<UInt8> = bytes[4] >= 2 ? [0, 1] : [0]
        guard bytes.count == byteCount, flags.contains(bytes[5]), bytes[4] >= 2 || bytes[6] == 0, bytes[7] == 0 else {
            throw StoreError(
                .integrity, "\(path) is damaged (\(bytes.count) bytes, expected \(byteCount))", path: path.string)
        }
    }

    func encoded(key: SymmetricKey) throws(StoreError) -> [UInt8] {
        let head = header()
        do {
            return head + (try KeyDerivation.keyedHash(head, key: key, domain: Self.tagDomain))
        } catch {
            throw StoreError.crypto(error, "cannot authenticate the vault marker")
        }
    }

    /// Parses and checks the marker. The format version is checked before the size and the tag, so
    /// that a future format is reported as such rather than as damage.
    static func decode(_ bytes: [UInt8], key: SymmetricKey, path: FilePath) throws(StoreError) -> VaultMarker {
        let marker = try unverified(bytes, path: path)
        let expected: [UInt8]
        do {
            expected = try KeyDerivation.keyedHash(marker.header(), key: key, domain: tagDomain)
        } catch {
            throw StoreError.crypto(error, "cannot check the vault marker")
        }
        guard ConstantTime.equals(expected, Array(bytes[headerByteCount...])) else {
            throw StoreError(
                .integrity,
                "\(path) does not match master.key: the marker was altered or master.key belongs to another vault "
                    + "(with --key-file: that file is not this vault's key; after `vault rekey --new-key-file`, give "
                    + "the new one)",
                path: path.string)
        }
        return marker
    }
}
