import VaultCrypto
import VaultSystem

/// A backup whose payload is a secret stream of messages (envelope version 2, docs/FORMAT.md
/// "Backups"): the header (its last 24 bytes the stream's header), then frames `u32be length | sealed
/// message`, an empty frame (length 0), and the checksum of everything before it. Message 0 is the
/// backup's own fields, each next one an item, and the last, marked final, is empty. It is checked and
/// opened one frame at a time from a file (a stream is first copied into an unnamed file): memory is
/// bounded by the largest item, not by the backup.
package enum BackupStream {
    static let version: UInt8 = 2
    static let cipher: UInt8 = 2
    /// The largest frame: the largest item (16 MiB of secret and 1 MiB of metadata) and its archive, sealed.
    package static let maximumFrameByteCount = 20 << 20
    static let lengthByteCount = 4

    /// Whether `header` (at least its first 5 bytes) is of a streamed backup.
    package static func isStreamed(_ header: [UInt8]) -> Bool {
        BackupFile.envelope.isSealed(header) && header.count > 4 && header[4] == version
    }

    /// A streamed backup's key, derived from a passphrase or a backup key file (`Reader.streamKey`).
    package struct StreamKey {
        let key: SymmetricKey
        /// What to say when it does not open the backup.
        let wrongKey: String
    }

    /// Seals a backup's messages in order, into memory.
    package final class Writer {
        private let stream: SecretStream.Writer
        private let header: [UInt8]
        private var bytes: [UInt8]
        private var count = 0

        /// A backup under `key` (a passphrase's Argon2id runs here).
        package init(key: BackupKey) throws(StoreError) {
            do {
                let (prefix, derived) = try BackupFile.envelope.headerPrefix(key.key, version: version, cipher: cipher)
                stream = try SecretStream.Writer(key: derived)
                header = prefix + stream.header
            } catch {
                throw StoreError.crypto(error, "cannot seal a vault backup")
            }
            bytes = header
        }

        /// Adds `message` (message 0 is bound to the header).
        package func add(_ message: [UInt8]) throws(StoreError) {
            guard message.count + SecretStream.overheadByteCount <= maximumFrameByteCount else {
                throw StoreError(.invalidName, "an item of \(message.count) bytes is too large for a backup")
            }
            try frame(message, isFinal: false)
        }

        private func frame(_ message: [UInt8], isFinal: Bool) throws(StoreError) {
            // What an import reads: this frame, then the final one, the end and the checksum, within the
            // limit on a backup (a larger one could be written, never read back).
            let after =
                bytes.count + 2 * lengthByteCount + message.count + 2 * SecretStream.overheadByteCount + 4
                + PassphraseEnvelope.checksumByteCount
            guard after <= BackupFile.maximumByteCount else {
                throw StoreError(
                    .invalidName,
                    "the backup would be more than \(BackupFile.maximumByteCount) bytes, more than an import reads: "
                        + "back up the groups in parts (`vault --group G export`), or move large items out")
            }
            do {
                let sealed = try stream.seal(message, associatedData: count == 0 ? header : [], isFinal: isFinal)
                bytes.appendBigEndian(UInt32(sealed.count))
                bytes += sealed
            } catch {
                throw StoreError.crypto(error, "cannot seal a vault backup")
            }
            count += 1
        }

        /// The backup's bytes: the messages added, the final one, the end and the checksum.
        package func finish() throws(StoreError) -> [UInt8] {
            try frame([], isFinal: true)
            bytes.appendBigEndian(UInt32(0))
            do {
                return bytes + (try PassphraseEnvelope.checksum(bytes))
            } catch {
                throw StoreError.crypto(error, "cannot seal a vault backup")
            }
        }
    }

    /// A streamed backup in a file read by position (never moved, never written), checked without its
    /// key when it is made; `forEachMessage` then opens it as often as asked.
    package final class Reader {
        /// Where the backup's bytes are.
        enum Source {
            case file(FileDescriptor)
            case bytes([UInt8])
        }
        let source: Source
        /// The backup's name in messages (its path, or "standard input").
        package let name: String
        let header: [UInt8]
        /// What the backup is sealed under, as its header says.
        package let sealing: BackupFile.Sealing

        /// Checks the backup in `file` (named `name` in messages) from its start, without the key: the
        /// header and its cost within `ceiling`, every frame's length, the end, the checksum, nothing
        /// after it. Damage is said as damage here, before a passphrase is asked for.
        package convenience init(file: FileDescriptor, name: String, ceiling: PassphraseKeyDerivation.Limits)
            throws(StoreError)
        {
            try self.init(.file(file), name: name, ceiling: ceiling)
        }

        /// The same checks of a backup in memory.
        package convenience init(bytes: [UInt8], name: String, ceiling: PassphraseKeyDerivation.Limits)
            throws(StoreError)
        {
            try self.init(.bytes(bytes), name: name, ceiling: ceiling)
        }

        init(_ source: Source, name: String, ceiling: PassphraseKeyDerivation.Limits) throws(StoreError) {
            self.source = source
            self.name = name
            let header = try Self.read(source, count: BackupFile.headerByteCount, at: 0, name: name)
            let kdf = try BackupFile.envelope.checkHeader(header, path: name, ceiling: ceiling)
            guard isStreamed(header) else {
                throw StoreError(.unsupportedFormat, "\(name) is not a streamed backup", path: name)
            }
            self.header = header
            sealing = kdf == PassphraseEnvelope.rawKey ? .keyFile : .passphrase
            let sum: StreamingHash
            do {
                sum = try StreamingHash(
                    key: try SymmetricKey.zero(), domain: PassphraseEnvelope.checksumDomain,
                    outputByteCount: PassphraseEnvelope.checksumByteCount)
            } catch {
                throw StoreError.crypto(error, "cannot check \(name)")
            }
            sum.update(header)
            var offset = Int64(header.count)
            while true {
                let length = try frameLength(at: offset)
                sum.update(try Self.read(source, count: lengthByteCount, at: offset, name: name))
                offset += Int64(lengthByteCount)
                if length == 0 { break }
                var left = length
                while left > 0 {
                    let part = try Self.read(source, count: min(left, 1 << 20), at: offset, name: name)
                    sum.update(part)
                    offset += Int64(part.count)
                    left -= part.count
                }
                guard offset <= BackupFile.maximumByteCount else { throw damaged("is more than 1 GiB") }
            }
            let checksum = try Self.read(source, count: PassphraseEnvelope.checksumByteCount, at: offset, name: name)
            guard checksum == sum.finish() else { throw damaged("its checksum does not match") }
            let after = try Self.read(source, count: 1, at: offset + Int64(checksum.count), name: name, exact: false)
            guard after.isEmpty else { throw damaged("it has bytes after its checksum") }
        }

        /// The length of the frame at `offset`: 0 (the end), or a sealed message's.
        private func frameLength(at offset: Int64) throws(StoreError) -> Int {
            let bytes = try Self.read(source, count: lengthByteCount, at: offset, name: name)
            let length = Int(UInt32(bigEndianBytes: bytes[0..<4]))
            guard length == 0 || (SecretStream.overheadByteCount...maximumFrameByteCount).contains(length) else {
                throw damaged("a frame of \(length) bytes")
            }
            return length
        }

        private func damaged(_ why: String) -> StoreError {
            StoreError(.integrity, "\(name) is damaged (\(why)); restore it from a backup", path: name)
        }

        /// The stream's key that `key` derives (a passphrase's Argon2id runs here, once for every
        /// `forEachMessage`).
        package func streamKey(_ key: BackupKey) throws(StoreError) -> StreamKey {
            let (derived, wrongKey) = try PassphraseEnvelope.key(key.key, header: header, path: name)
            return StreamKey(key: derived, wrongKey: wrongKey)
        }

        /// Opens every message in order with `key` and hands it to `body` with its number (0: the
        /// backup's fields, then the items). A wrong key is said at the first message; a message that
        /// does not authenticate later, or a stream that ends before its final message, is damage (the
        /// checksum matched: it was altered on purpose). Nothing of a message reaches `body` before it
        /// authenticated.
        package func forEachMessage(
            key: StreamKey, _ body: (Int, SecureBytes) throws(StoreError) -> Void
        ) throws(StoreError) {
            let (derived, wrongKey) = (key.key, key.wrongKey)
            let stream: SecretStream.Reader
            do {
                stream = try SecretStream.Reader(
                    key: derived, header: Array(header[(header.count - SecretStream.headerByteCount)...]))
            } catch {
                throw StoreError.crypto(error, "cannot open \(name)")
            }
            var offset = Int64(header.count)
            var index = 0
            var ended = false
            while true {
                let length = try frameLength(at: offset)
                offset += Int64(lengthByteCount)
                if length == 0 { break }
                guard !ended else { throw damaged("a message after the final one") }
                let sealed = try Self.read(source, count: length, at: offset, name: name)
                offset += Int64(length)
                let opened: (message: SecureBytes, isFinal: Bool)
                do {
                    opened = try stream.open(sealed, associatedData: index == 0 ? header : [])
                } catch  where error.code == .authenticationFailed {
                    guard index > 0 else { throw StoreError(.wrongPassphrase, wrongKey, path: name) }
                    throw damaged("message \(index) does not authenticate: it was altered")
                } catch {
                    throw StoreError.crypto(error, "cannot open message \(index) of \(name)")
                }
                if opened.isFinal {
                    guard opened.message.count == 0 else { throw damaged("its final message is not empty") }
                    ended = true
                } else {
                    try body(index, opened.message)
                }
                index += 1
            }
            guard ended else { throw damaged("it ends before its final message: it was cut short") }
        }

        /// `count` bytes of `file` at `offset`; fewer only when not `exact` (at the end of the file).
        static func read(_ source: Source, count: Int, at offset: Int64, name: String, exact: Bool = true)
            throws(StoreError) -> [UInt8]
        {
            guard case .file(let file) = source else {
                guard case .bytes(let all) = source else { return [] }
                let start = Int(clamping: offset)
                let end = min(all.count, start + count)
                guard exact ? end - start == count : true else {
                    throw StoreError(
                        .integrity, "\(name) is damaged (it ends in the middle); restore it from a backup", path: name)
                }
                return start < end ? Array(all[start..<end]) : []
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count)
            while bytes.count < count {
                let part: [UInt8]
                do {
                    part = try file.read(count: count - bytes.count, at: offset + Int64(bytes.count))
                } catch {
                    throw StoreError(.io, "cannot read \(name): \(error)", path: name)
                }
                if part.isEmpty { break }
                bytes += part
            }
            guard !exact || bytes.count == count else {
                throw StoreError(
                    .integrity, "\(name) is damaged (it ends in the middle); restore it from a backup", path: name)
            }
            return bytes
        }
    }
}

extension VaultStore {
    /// A new file with no name in the vault's directory (0600), gone when closed: room for a backup that
    /// comes on a stream while it is checked and opened, on the vault's disk rather than in memory. It
    /// holds only sealed bytes.
    package func unnamedFile() throws(StoreError) -> FileDescriptor {
        do {
            return try directory.openUnnamedFile(permissions: .ownerReadWrite, readable: true)
        } catch  where error == .notSupported || error == .isDirectory {
            // A file system without O_TMPFILE (NFS, FUSE, older overlayfs): a new name, removed at once.
            do {
                let name = ".spool." + Hex.encode(try SecureRandom.bytes(count: 8))
                let file = try directory.openAt(name, [.readWrite, .create, .exclusiveCreate])
                try? directory.unlinkAt(name)
                return file
            } catch let error as Errno {
                throw StoreError.system(error, .open, "make a file to read a backup into in", path: location)
            } catch {
                throw StoreError(.io, "cannot make a file to read a backup into in \(location): \(error)")
            }
        } catch {
            throw StoreError.system(error, .open, "make a file without a name in", path: location)
        }
    }
}
