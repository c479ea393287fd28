import VaultCrypto
import VaultSystem

/// The bytes of one item file (format v1):
///
///     header = "VLTI" | version u8 (1) | algorithm u8 (1 = XChaCha20-Poly1305-IETF)
///              | protection class u8 (0 always, 1 after first unlock, 2 when unlocked) | reserved u8 (0)
///     nonce  = 24 random bytes
///     body   = AEAD(group encryption key of the class, nonce, plaintext,
///                   ad = header || vault id || len16be(group) || group || item id)
///
/// The associated data binds the file to its vault, group and name: a file copied onto another item
/// id, group or vault fails authentication.
enum ItemFile {
    static let magic: [UInt8] = Array("VLTI".utf8)
    static let formatVersion: UInt8 = 1
    static let algorithmXChaCha20Poly1305: UInt8 = 1
    static let headerByteCount = 8
    static let overheadByteCount =
        headerByteCount + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount
    /// The largest item file accepted (16 MiB of plaintext plus overhead); a bigger file is damage or
    /// an attack, and is refused before it is read into memory.
    static let maximumPlaintextByteCount = 16 << 20
    static let maximumFileByteCount = maximumPlaintextByteCount + overheadByteCount

    static func header(_ protectionClass: ProtectionClass) -> [UInt8] {
        magic + [formatVersion, algorithmXChaCha20Poly1305, protectionClass.rawValue, 0]
    }

    static func associatedData(
        vaultID: [UInt8], group: GroupName, id: ItemID, protectionClass: ProtectionClass
    ) -> [UInt8] {
        let groupBytes = Array(group.rawValue.utf8)
        let header = header(protectionClass)
        var ad = header
        ad.reserveCapacity(header.count + vaultID.count + 2 + groupBytes.count + 64)
        ad += vaultID
        ad.append(UInt8(groupBytes.count >> 8))
        ad.append(UInt8(groupBytes.count & 0xff))
        ad += groupBytes
        ad += Array(id.rawValue.utf8)
        return ad
    }

    /// Encrypts `plaintext` into the complete file contents.
    static func seal(
        _ plaintext: [UInt8], key: SymmetricKey, protectionClass: ProtectionClass, vaultID: [UInt8],
        location: ItemLocation
    ) throws(StoreError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextByteCount else {
            throw StoreError(
                .io,
                "item \(location.id) in group \(location.group) is \(plaintext.count) bytes; at most "
                    + "\(maximumPlaintextByteCount)")
        }
        do {
            let nonce = try XChaCha20Poly1305.randomNonce()
            let ad = associatedData(
                vaultID: vaultID, group: location.group, id: location.id, protectionClass: protectionClass)
            let body = try XChaCha20Poly1305.seal(plaintext, key: key, nonce: nonce, associatedData: ad)
            return header(protectionClass) + nonce + body
        } catch {
            throw StoreError.crypto(error, "cannot encrypt item \(location.id) of group \(location.group)")
        }
    }

    /// The protection class a file says it has, after the checks that need no key; every failure is
    /// `integrity` (or `unsupportedFormat`) and names the file.
    static func protectionClass(of contents: [UInt8], path: FilePath) throws(StoreError) -> ProtectionClass {
        guard contents.count >= headerByteCount, Array(contents[0..<4]) == magic else {
            throw StoreError(.integrity, "\(path) is not an item file (bad magic); it is damaged", path: path.string)
        }
        guard contents[4] == formatVersion else {
            throw StoreError(
                .unsupportedFormat,
                "\(path) has item format version \(contents[4]); this build reads version \(formatVersion)",
                path: path.string)
        }
        guard contents[5] == algorithmXChaCha20Poly1305, let protectionClass = ProtectionClass(rawValue: contents[6]),
            contents[7] == 0
        else {
            throw StoreError(
                .integrity, "\(path) has an unknown algorithm, class or flags; it is damaged", path: path.string)
        }
        guard contents.count >= overheadByteCount else {
            throw StoreError(
                .integrity, "\(path) is truncated (\(contents.count) bytes); it is damaged", path: path.string)
        }
        return protectionClass
    }

    /// Checks and decrypts complete file contents with the key of its class, into ordinary memory that
    /// is wiped when the result goes (`TransientBytes`): items are decoded at once, and secure memory
    /// would cost more than the read. Every failure is `integrity` and names the file.
    static func open(
        _ contents: [UInt8], key: SymmetricKey, vaultID: [UInt8], location: ItemLocation, path: FilePath
    ) throws(StoreError) -> TransientBytes {
        let protectionClass = try protectionClass(of: contents, path: path)
        let nonceEnd = headerByteCount + XChaCha20Poly1305.nonceByteCount
        let nonce = Array(contents[headerByteCount..<nonceEnd])
        let ad = associatedData(
            vaultID: vaultID, group: location.group, id: location.id, protectionClass: protectionClass)
        do {
            return try XChaCha20Poly1305.open(
                contents, from: nonceEnd, key: key, nonce: nonce, associatedData: ad, as: TransientBytes.self)
        } catch  where error.code == .authenticationFailed {
            throw StoreError(
                .integrity,
                "\(path) failed authentication: it was tampered with, damaged, moved from another item, group "
                    + "or vault, or written under another key",
                path: path.string, cause: error)
        } catch {
            throw StoreError.crypto(error, "cannot decrypt \(path)")
        }
    }
}
