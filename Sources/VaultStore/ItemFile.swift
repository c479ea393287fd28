import VaultCrypto
import VaultSystem

/// The bytes of one item file.
///
/// Format v1 (8-byte header):
///
///     header = "VLTI" | version u8 (1) | algorithm u8 (1 = XChaCha20-Poly1305-IETF)
///              | protection class u8 (0 always, 1 after first unlock, 2 when unlocked) | reserved u8 (0)
///     nonce  = 24 random bytes
///     body   = AEAD(group encryption key of the class, nonce, plaintext,
///                   ad = header || vault id || len16be(group) || group || item id)
///
/// Format v2 (12-byte header): the same fields with version 2, then the key generation (u32be) the
/// body is sealed under; the associated data binds the group's own id instead of the vault id, and the
/// plaintext is padded (`Padding`) so that a file's size tells only the bucket of its length.
///
/// The associated data binds the file to its vault (or group), group name and item id: a file copied
/// onto another item id, group or vault fails authentication.
enum ItemFile {
    static let magic: [UInt8] = Array("VLTI".utf8)
    static let algorithmXChaCha20Poly1305: UInt8 = 1
    /// The largest plaintext accepted: 16 MiB.
    static let maximumPlaintextByteCount = 16 << 20
    /// The largest item file accepted (the largest padded plaintext plus overhead); a bigger file is
    /// damage or an attack, and is refused before it is read into memory.
    static let maximumFileByteCount =
        Padding.paddedCount(maximumPlaintextByteCount) + headerByteCount(version: 2)
        + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount

    static func headerByteCount(version: UInt8) -> Int { version == 1 ? 8 : 12 }

    /// The item format a vault of `formatVersion` writes.
    static func version(forVault formatVersion: UInt8) -> UInt8 { formatVersion == 1 ? 1 : 2 }

    static func header(version: UInt8, _ protectionClass: ProtectionClass, generation: UInt32) -> [UInt8] {
        var head = magic + [version, algorithmXChaCha20Poly1305, protectionClass.rawValue, 0]
        if version != 1 { head.appendBigEndian(generation) }
        return head
    }

    static func associatedData(
        header: some Collection<UInt8>, binding: [UInt8], group: GroupName, id: ItemID
    ) -> [UInt8] {
        // Appended in place into one buffer: this runs on every read.
        let groupCount = group.rawValue.utf8.count
        var ad: [UInt8] = []
        ad.reserveCapacity(header.count + binding.count + 2 + groupCount + id.fileName.utf8.count)
        ad += header
        ad += binding
        group.appendLengthPrefixed(to: &ad)
        id.appendHexDigits(to: &ad)
        return ad
    }

    /// Encrypts `plaintext` into the complete file contents, in item format `version`, under `key`
    /// (of `protectionClass` and key `generation` of the group whose items are bound to `binding`).
    static func seal(
        _ plaintext: [UInt8], version: UInt8, key: SymmetricKey, protectionClass: ProtectionClass, generation: UInt32,
        binding: [UInt8], location: ItemLocation
    ) throws(StoreError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextByteCount else {
            throw StoreError(
                .io,
                "item \(location.id) in group \(location.group) is \(plaintext.count) bytes; at most "
                    + "\(maximumPlaintextByteCount)")
        }
        let header = header(version: version, protectionClass, generation: generation)
        do {
            let nonce = try XChaCha20Poly1305.randomNonce()
            let ad = associatedData(header: header, binding: binding, group: location.group, id: location.id)
            let body: [UInt8]
            if version == 1 {
                body = try XChaCha20Poly1305.seal(plaintext, key: key, nonce: nonce, associatedData: ad)
            } else {
                var padded = Padding.padded(plaintext)
                defer { padded.wipe() }
                body = try XChaCha20Poly1305.seal(padded, key: key, nonce: nonce, associatedData: ad)
            }
            return header + nonce + body
        } catch {
            throw StoreError.crypto(error, "cannot encrypt item \(location.id) of group \(location.group)")
        }
    }

    /// What an item file's header says, checked without a key.
    struct Header {
        let version: UInt8
        let protectionClass: ProtectionClass
        let generation: UInt32
        var byteCount: Int { ItemFile.headerByteCount(version: version) }
    }

    /// The header of `contents`, after the checks that need no key, for a vault that writes item
    /// format `expected`; every failure is `integrity` (or `unsupportedFormat`) and names the file.
    static func header(of contents: [UInt8], expected: UInt8, path makePath: @autoclosure () -> FilePath)
        throws(StoreError) -> Header
    {
        guard contents.count >= 8, contents[0..<4].elementsEqual(magic) else {
            throw StoreError(
                .integrity, "\(makePath()) is not an item file (bad magic); it is damaged", path: makePath().string)
        }
        guard contents[4] == expected else {
            if contents[4] == 1 || contents[4] == 2 {
                throw StoreError(
                    .integrity,
                    "\(makePath()) has item format version \(contents[4]), but this vault's items are version \(expected): "
                        + "it was copied from another vault", path: makePath().string)
            }
            throw StoreError(
                .unsupportedFormat,
                "\(makePath()) has item format version \(contents[4]); this build reads versions 1 and 2",
                path: makePath().string)
        }
        guard contents[5] == algorithmXChaCha20Poly1305, let protectionClass = ProtectionClass(rawValue: contents[6]),
            contents[7] == 0
        else {
            throw StoreError(
                .integrity, "\(makePath()) has an unknown algorithm, class or flags; it is damaged",
                path: makePath().string)
        }
        let headerCount = headerByteCount(version: expected)
        guard contents.count >= headerCount + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount else {
            throw StoreError(
                .integrity, "\(makePath()) is truncated (\(contents.count) bytes); it is damaged",
                path: makePath().string)
        }
        let generation = expected == 1 ? 0 : UInt32(bigEndianBytes: contents[8..<12])
        return Header(version: expected, protectionClass: protectionClass, generation: generation)
    }

    /// Checks and decrypts complete file contents (whose header is `header`) with `key`, into ordinary
    /// memory that is wiped when the result goes (`TransientBytes`): items are decoded at once, and
    /// secure memory would cost more than the read. Every failure is `integrity` and names the file.
    static func open(
        _ contents: [UInt8], header: Header, key: SymmetricKey, binding: [UInt8], location: ItemLocation,
        path makePath: @autoclosure () -> FilePath
    ) throws(StoreError) -> TransientBytes {
        let nonceEnd = header.byteCount + XChaCha20Poly1305.nonceByteCount
        let ad = associatedData(
            header: contents[0..<header.byteCount], binding: binding, group: location.group, id: location.id)
        let plaintext: TransientBytes
        do {
            plaintext = try XChaCha20Poly1305.open(
                contents, nonceAt: header.byteCount, from: nonceEnd, key: key, associatedData: ad,
                as: TransientBytes.self)
        } catch  where error.code == .authenticationFailed {
            throw StoreError(
                .integrity,
                "\(makePath()) failed authentication: it was tampered with, damaged, moved from another item, group "
                    + "or vault, or written under another key",
                path: makePath().string, cause: error)
        } catch {
            throw StoreError.crypto(error, "cannot decrypt \(makePath())")
        }
        guard header.version == 1 || plaintext.removePadding() else {
            throw StoreError(.integrity, "\(makePath()) has no valid padding; it is damaged", path: makePath().string)
        }
        return plaintext
    }
}
