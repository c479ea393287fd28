import VaultStore

/// The newest manifest of a fleet group that this machine has seen (its high-water mark), kept in the
/// group's directory as `fleet.mark`: the manifest's counter and the digest of its sealed bytes. A
/// replica whose manifest is older (a lower counter) or another at the same counter (its history
/// forked) has gone back, and is refused until an operator accepts it (`resyncFleetGroup`). Kept
/// per group id: a restored cluster may come back with another cluster id.
struct FleetMark: Sendable, Equatable {
    /// The manifest's counter.
    var counter: UInt64
    /// `FleetManifestKey.digest(of:)` of the sealed manifest.
    var digest: [UInt8]

    /// A mark of the manifest with `counter` whose sealed bytes have `digest`.
    init(counter: UInt64, digest: [UInt8]) {
        self.counter = counter
        self.digest = digest
    }

    static let fileName = "fleet.mark"
    static let header = "vault fleet mark v1"

    /// The file's text: one line, `vault fleet mark v1 <counter, 20 digits> <digest hex>`, always
    /// `byteCount` bytes, so that a new mark is written in place over the old one.
    func encoded() -> [UInt8] {
        let digits = String(counter)
        let padded = String(repeating: "0", count: max(0, 20 - digits.count)) + digits
        return Array("\(Self.header) \(padded) \(Hex.encode(digest))\n".utf8)
    }

    /// The length of every mark file.
    static let byteCount = header.utf8.count + 1 + 20 + 1 + 2 * FleetManifest.digestByteCount + 1

    /// Parses `encoded()`'s text; nil when it is not a mark.
    static func decode(_ bytes: [UInt8]) -> FleetMark? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix(header + " "), text.hasSuffix("\n") else { return nil }
        let fields = text.dropFirst(header.count + 1).dropLast().split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 2, let counter = UInt64(fields[0]), counter < FleetManifest.maximumCounter,
            let digest = Hex.decode(String(fields[1])), digest.count == FleetManifest.digestByteCount
        else { return nil }
        return FleetMark(counter: counter, digest: digest)
    }
}

/// The high-water mark in the group directory, through the store's cache.
extension ReplicaCache {
    /// The newest manifest this machine has seen of the group (`fleet.mark`), or nil before its first.
    func highWaterMark() throws(StoreError) -> FleetMark? {
        guard let bytes = try readFile(FleetMark.fileName, limit: 4096) else { return nil }
        guard let mark = FleetMark.decode(bytes) else {
            let path = groupPath + "/" + FleetMark.fileName
            throw StoreError(
                .integrity,
                "\(path) is not a fleet group's high-water mark (damaged?); `vault group resync \(group) "
                    + "--accept-rollback` writes it anew", path: path)
        }
        return mark
    }

    /// Durably records `mark` as the newest manifest seen (before any item of it is cached, so that a
    /// crash never leaves items newer than the mark): one write in place and one `fdatasync` per write.
    func record(_ mark: FleetMark) throws(StoreError) {
        do {
            try writeFixedLengthFile(FleetMark.fileName, mark.encoded())
        } catch {
            throw StoreError(
                error.code, "cannot record the high-water mark of fleet group \(group): \(error.message)",
                path: error.path, cause: error)
        }
    }

    /// When this machine last took a change of the group from etcd (the mark's modification time,
    /// nanoseconds since the epoch), or nil.
    var highWaterMarkTime: Int64? { modificationTime(of: FleetMark.fileName) }
}

/// The revisions of etcd's keys that a refresh of the group brought this machine's cache to
/// (`fleet.cached`), and the mark it was made under: a process's first read or write finds the cache
/// current by reading the manifest and the rollback report alone (`EtcdReplica.adoptCacheIfCurrent`),
/// or steps from it by what changed since (`EtcdReplica.stepForward`), not reading every item. Every
/// change of the group's state changes its manifest or its rollback report; an item changed in etcd
/// behind the manifest's back is found by the next complete refresh (a fresh-only read's, a resync).
struct FleetCacheRecord: Sendable, Equatable {
    var manifestRevision: Int64
    var rollbackRevision: Int64
    var markDigest: [UInt8]
    /// The group directory's modification time when the record was written (0: not known): while it is
    /// the same, no file was added to the cache or removed from it since.
    var directoryStamp: Int64 = 0

    static let fileName = "fleet.cached"
    static let header = "vault fleet cache v2"
    /// What builds before the directory's stamp wrote, read as a record without it.
    static let headerWithoutStamp = "vault fleet cache v1"

    /// One line, `vault fleet cache v2 <manifest revision, 20 digits> <rollback revision, 20 digits>
    /// <directory stamp, 20 digits> <mark digest hex>`, always of one length (written in place).
    func encoded() -> [UInt8] {
        func digits(_ value: Int64) -> String {
            let text = String(max(0, value))
            return String(repeating: "0", count: max(0, 20 - text.count)) + text
        }
        return Array(
            ("\(Self.header) \(digits(manifestRevision)) \(digits(rollbackRevision)) \(digits(directoryStamp)) "
                + "\(Hex.encode(markDigest))\n").utf8)
    }

    static func decode(_ bytes: [UInt8]) -> FleetCacheRecord? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasSuffix("\n"),
            let header = [header, headerWithoutStamp].first(where: { text.hasPrefix($0 + " ") })
        else { return nil }
        var fields = text.dropFirst(header.count + 1).dropLast().split(separator: " ", omittingEmptySubsequences: false)
        let stamp = header == Self.header && fields.count == 4 ? Int64(fields.remove(at: 2)) : 0
        guard fields.count == 3, let stamp, stamp >= 0, let manifest = Int64(fields[0]), manifest > 0,
            let rollback = Int64(fields[1]), rollback >= 0, let digest = Hex.decode(String(fields[2])),
            digest.count == FleetManifest.digestByteCount
        else { return nil }
        return FleetCacheRecord(
            manifestRevision: manifest, rollbackRevision: rollback, markDigest: digest, directoryStamp: stamp)
    }
}

extension ReplicaCache {
    /// What the last complete refresh recorded, nil when nothing (or nothing readable) was.
    func currentRecord() -> FleetCacheRecord? {
        guard let bytes = try? readFile(FleetCacheRecord.fileName, limit: 4096) else { return nil }
        return FleetCacheRecord.decode(bytes)
    }

    /// Records that the cache is `record`'s state, durably (a removal the refresh made is on disk before
    /// a later process takes the record for current), with the group directory's stamp as it is now.
    /// A record made anew (a file renamed into the directory) changes the stamp: it is written again in
    /// place with the new one.
    func recordCurrent(_ record: FleetCacheRecord) throws(StoreError) {
        var stamped = record
        for _ in 0..<2 {
            stamped.directoryStamp = directoryModificationTime() ?? 0
            guard currentRecord() != stamped else { return }
            try writeFixedLengthFile(FleetCacheRecord.fileName, stamped.encoded())
        }
    }
}
