import VaultCrypto
import VaultSystem

/// The bytes of one item file (12-byte header):
///
///     header = "VLTI" | version u8 (2) | algorithm u8 (1 = XChaCha20-Poly1305-IETF)
///              | protection class u8 (0 always, 1 after first unlock, 2 when unlocked) | reserved u8 (0)
///              | key generation u32be
///     nonce  = 24 random bytes
///     body   = AEAD(group encryption key of the class and generation, nonce, padded plaintext,
///                   ad = header || group id || len16be(group) || group || item id)
///
/// The plaintext is padded (`Padding`) so that a file's size tells only the bucket of its length. The
/// associated data binds the file to its group, group name and item id: a file copied onto another
/// item id, group or vault fails authentication. (Version 1, of format-1 vaults, is read by the
/// upgrade only: `FormatOneVault`.)
enum ItemFile {
    static let magic: [UInt8] = Array("VLTI".utf8)
    static let algorithmXChaCha20Poly1305: UInt8 = 1
    /// The largest plaintext accepted: 16 MiB.
    static let maximumPlaintextByteCount = 16 << 20
    /// The largest item file accepted (the largest padded plaintext plus overhead); a bigger file is
    /// damage or an attack, and is refused before it is read into memory.
    static let maximumFileByteCount =
        Padding.paddedCount(maximumPlaintextByteCount) + headerByteCount
        + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount
    /// The item format version this build writes and reads.
    static let version: UInt8 = 2
    static let headerByteCount = 12

    static func header(_ protectionClass: ProtectionClass, generation: UInt32) -> [UInt8] {
        var head = magic + [version, algorithmXChaCha20Poly1305, protectionClass.rawValue, 0]
        head.appendBigEndian(generation)
        return head
    }

    static func associatedData(
        header: some Collection<UInt8>, binding: [UInt8], group: GroupName, id: ItemID
    ) -> [UInt8] {
        // Appended in place into one buffer: this runs on every read.
        let groupCount = group.rawValue.utf8.count
        var ad: [UInt8] = []
        ad.reserveCapacity(header.count + binding.count + 2 + groupCount + 2 * ItemID.hashByteCount)
        ad += header
        ad += binding
        group.appendLengthPrefixed(to: &ad)
        id.appendHexDigits(to: &ad)
        return ad
    }

    /// Encrypts `plaintext` into the complete file contents under `key` (of `protectionClass` and key
    /// `generation` of the group whose items are bound to `binding`).
    static func seal(
        _ plaintext: [UInt8], key: SymmetricKey, protectionClass: ProtectionClass, generation: UInt32,
        binding: [UInt8], location: ItemLocation
    ) throws(StoreError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextByteCount else {
            throw StoreError(
                .io,
                "item \(location.id) in group \(location.group) is \(plaintext.count) bytes; at most "
                    + "\(maximumPlaintextByteCount)")
        }
        let header = header(protectionClass, generation: generation)
        do {
            let nonce = try XChaCha20Poly1305.randomNonce()
            let ad = associatedData(header: header, binding: binding, group: location.group, id: location.id)
            var padded = Padding.padded(plaintext)
            defer { padded.wipe() }
            let body = try XChaCha20Poly1305.seal(padded, key: key, nonce: nonce, associatedData: ad)
            return header + nonce + body
        } catch {
            throw StoreError.crypto(error, "cannot encrypt item \(location.id) of group \(location.group)")
        }
    }

    /// What an item file's header says, checked without a key.
    struct Header {
        let protectionClass: ProtectionClass
        let generation: UInt32
    }

    /// The header of `contents`, after the checks that need no key; every failure is `integrity` (or
    /// `unsupportedFormat`) and names the file.
    static func header(of contents: [UInt8], path makePath: @autoclosure () -> FilePath) throws(StoreError)
        -> Header
    {
        guard contents.count >= 8, contents[0..<4].elementsEqual(magic) else {
            throw StoreError(
                .integrity, "\(makePath()) is not an item file (bad magic); it is damaged", path: makePath().string)
        }
        guard contents[4] == version else {
            if contents[4] == 1 {
                throw StoreError(
                    .integrity,
                    "\(makePath()) has item format version 1, of a format-1 vault, but this vault's items are version "
                        + "\(version): it was copied from another vault", path: makePath().string)
            }
            throw StoreError(
                .unsupportedFormat,
                "\(makePath()) has item format version \(contents[4]); this build reads version \(version)",
                path: makePath().string)
        }
        guard contents[5] == algorithmXChaCha20Poly1305, let protectionClass = ProtectionClass(rawValue: contents[6]),
            contents[7] == 0
        else {
            throw StoreError(
                .integrity, "\(makePath()) has an unknown algorithm, class or flags; it is damaged",
                path: makePath().string)
        }
        guard contents.count >= headerByteCount + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount
        else {
            throw StoreError(
                .integrity, "\(makePath()) is truncated (\(contents.count) bytes); it is damaged",
                path: makePath().string)
        }
        return Header(protectionClass: protectionClass, generation: UInt32(bigEndianBytes: contents[8..<12]))
    }

    /// Checks and decrypts complete file contents with `key`, into ordinary memory that is wiped when
    /// the result goes (`TransientBytes`): items are decoded at once, and secure memory would cost more
    /// than the read. Every failure is `integrity` and names the file. `headerByteCount` and `padded`
    /// say the layout (the upgrade opens version-1 files: 8 bytes, not padded).
    static func open(
        _ contents: [UInt8], key: SymmetricKey, binding: [UInt8], location: ItemLocation,
        path makePath: @autoclosure () -> FilePath, headerByteCount: Int = headerByteCount, padded: Bool = true
    ) throws(StoreError) -> TransientBytes {
        let nonceEnd = headerByteCount + XChaCha20Poly1305.nonceByteCount
        let ad = associatedData(
            header: contents[0..<headerByteCount], binding: binding, group: location.group, id: location.id)
        let plaintext: TransientBytes
        do {
            plaintext = try XChaCha20Poly1305.open(
                contents, nonceAt: headerByteCount, from: nonceEnd, key: key, associatedData: ad,
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
        guard !padded || plaintext.removePadding() else {
            throw StoreError(.integrity, "\(makePath()) has no valid padding; it is damaged", path: makePath().string)
        }
        return plaintext
    }
}
