import VaultCrypto
import VaultSystem

/// The `VAULT` file: it marks a directory as a vault, says which format wrote it, and carries the vault
/// id that every item file is bound to.
///
/// Layout (56 bytes): "VLTV" | format version u8 | reserved u8×3 (0) | vault id (16 random bytes) |
/// keyed BLAKE2b-256 of the first 24 bytes under the `always` class key ("vault.marker.v1"), which
/// every opener has, locked or not. The version is
/// readable without the key so that a newer format is named as such; the tag makes any change to the
/// vault id detectable once the key is known.
struct VaultMarker: Equatable {
    static let fileName = "VAULT"
    static let magic: [UInt8] = Array("VLTV".utf8)
    static let formatVersion: UInt8 = 1
    static let vaultIDByteCount = 16
    static let headerByteCount = 24
    static let tagByteCount = 32
    static let byteCount = headerByteCount + tagByteCount
    static let tagDomain = KeyDerivation.Domain("vault.marker.v1")
    /// The most bytes read from a `VAULT` file: enough for this format and any later one's header.
    static let maximumReadByteCount = 4096

    let vaultID: [UInt8]

    static func random() throws(StoreError) -> VaultMarker {
        do {
            return VaultMarker(vaultID: try SecureRandom.bytes(count: vaultIDByteCount))
        } catch {
            throw StoreError.crypto(error, "cannot make a vault id")
        }
    }

    func header() -> [UInt8] {
        Self.magic + [Self.formatVersion, 0, 0, 0] + vaultID
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
        guard bytes.count >= 5, Array(bytes[0..<4]) == magic else {
            throw StoreError(
                .integrity, "\(path) is not a vault marker (bad magic); the file is damaged", path: path.string)
        }
        guard bytes[4] == formatVersion else {
            throw StoreError(
                .unsupportedFormat,
                "vault at \(path) has format version \(bytes[4]); this build of vault reads version \(formatVersion)",
                path: path.string)
        }
        guard bytes.count == byteCount, bytes[5] == 0, bytes[6] == 0, bytes[7] == 0 else {
            throw StoreError(
                .integrity, "\(path) is damaged (\(bytes.count) bytes, expected \(byteCount))", path: path.string)
        }
        let marker = VaultMarker(vaultID: Array(bytes[8..<headerByteCount]))
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
