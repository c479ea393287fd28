import Foundation
import Synchronization
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import Vault
@testable import VaultStore

#if canImport(Glibc)
    import Glibc
#endif

func readBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

func writeBytes(_ bytes: [UInt8], _ path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// A vault with three generic passwords in the client's default group.
struct Fixture {
    let dir: TemporaryDirectory
    let path: String
    let vault: Vault
    let keys: [ItemKey]

    /// Runs `body` with a new fixture, removed when `body` ends.
    static func with<R>(_ body: (Fixture) throws -> R) throws -> R {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        return try body(fixture)
    }

    /// Runs `body` with a new fixture and the path of its first item's file.
    static func withFirstItemFile<R>(_ body: (Fixture, String) throws -> R) throws -> R {
        try with { fixture in try body(fixture, try fixture.itemPath(fixture.keys[0])) }
    }

    init() throws {
        dir = try TemporaryDirectory("hostile")
        path = dir.path + "/vault"
        vault = try Vault.create(at: path, client: try testClient())
        keys = try (0..<3).map { try ItemKey(service: "hostile", account: "a\($0)") }
        // Set twice: an added item (generation 1) has no generation record, an updated one has.
        for (i, key) in keys.enumerated() {
            try vault.set(Data("secret-\(i)"), for: key)
            try vault.set(Data("secret-\(i)"), for: key)
        }
    }

    func itemPath(_ key: ItemKey) throws -> String {
        let group = try GroupName(testApp)
        let id = try vault.engine.store.itemID(
            group: group,
            primaryKey: ItemRecord.primaryKey(
                .genericPassword, ItemAttributes(service: key.service, account: key.account)))
        return vault.engine.store.path(of: ItemLocation(group: group, id: id))
    }
}

/// Every single-bit flip and every truncation of an item file, the master key file and the marker is
/// detected with a typed error, no plaintext comes back, and the other items stay readable. Every item
/// file moved onto every other item id, group and vault is rejected. Rollback, symlink swaps, `..`.
@Suite struct HostileFileTests {
    @Test func everyFlipAndTruncationOfAnItemFileIsDetected() throws {
        try Fixture.withFirstItemFile { f, target in
            let original = try readBytes(target)
            var detected = 0
            var cases = 0
            func expectDetected(_ what: String) throws {
                cases += 1
                do {
                    let data = try f.vault.data(for: f.keys[0])
                    Issue.record("\(what): read returned \(data.map { "\($0.count) bytes" } ?? "nil")")
                } catch {
                    if error.status == .decode {
                        detected += 1
                    } else {
                        Issue.record("\(what): \(error.status) \(error)")
                    }
                }
            }
            try forEachDamage(
                of: original, at: target,
                afterEachByte: { () throws in #expect(try f.vault.data(for: f.keys[1]) == Data("secret-1")) },
                afterEachTruncation: { () throws in #expect(try f.vault.data(for: f.keys[2]) == Data("secret-2")) },
                expectDetected)
            try writeBytes(original, target)
            #expect(try f.vault.data(for: f.keys[0]) == Data("secret-0"))
            #expect(detected == cases)
            figure(
                "item-flips",
                "\(original.count * 8) bit flips and \(original.count) truncations of a \(original.count)-byte item file: \(detected)/\(cases) detected (errSecDecode), 0 plaintexts returned"
            )
        }
    }

    @Test func everyFlipOfAGenerationRecordIsHarmless() throws {
        try Fixture.withFirstItemFile { f, target in
            let record =
                (target as NSString).deletingLastPathComponent + "/.gen."
                + ((target as NSString).lastPathComponent as NSString).deletingPathExtension
            let text = Array(try FileManager.default.destinationOfSymbolicLink(atPath: record).utf8)
            var flips = 0
            for index in text.indices {
                for bit in 0..<7 {
                    var bytes = text
                    bytes[index] ^= UInt8(1 << bit)
                    try FileManager.default.removeItem(atPath: record)
                    try FileManager.default.createSymbolicLink(
                        atPath: record, withDestinationPath: String(decoding: bytes, as: UTF8.self))
                    // A damaged record is not authentic and is ignored: the current item still reads.
                    #expect(try f.vault.data(for: f.keys[0]) == Data("secret-0"))
                    flips += 1
                }
            }
            figure(
                "record-flips",
                "\(flips) bit flips of a \(text.count)-byte generation record: all ignored, the item read")
        }
    }

    @Test func everyFlipAndTruncationOfTheMasterKeyAndMarkerIsDetected() throws {
        try Fixture.with { f in
            var counts: [String: (cases: Int, detected: Int)] = [:]
            for name in ["master.key", "VAULT"] {
                let file = f.path + "/" + name
                let original = try readBytes(file)
                var cases = 0
                var detected = 0
                func check(_ what: String) {
                    cases += 1
                    do {
                        _ = try VaultStore.open(at: f.path)
                        Issue.record("\(name) \(what): the vault opened")
                    } catch {
                        if [.integrity, .unsupportedFormat, .wrongKey].contains(error.code),
                            (error.path ?? "").hasSuffix("/" + name) || error.message.contains(name)
                        {
                            detected += 1
                        } else {
                            Issue.record("\(name) \(what): \(error.code) \(error)")
                        }
                    }
                }
                try forEachDamage(of: original, at: file, check)
                try writeBytes(original, file)
                counts[name] = (cases, detected)
                #expect(cases == detected)
            }
            // Restored: everything reads again.
            let reopened = try Vault.open(at: f.path, client: try testClient())
            #expect(try reopened.data(for: f.keys[0]) == Data("secret-0"))
            figure(
                "key-marker-flips",
                "master.key: \(counts["master.key"]!.detected)/\(counts["master.key"]!.cases) flips+truncations detected; "
                    + "VAULT: \(counts["VAULT"]!.detected)/\(counts["VAULT"]!.cases) detected")
        }
    }

    /// All ordered pairs of 8 files (2 vaults × 2 groups × 2 items): a copy onto another name, group
    /// or vault fails authentication.
    @Test func everyItemFileCopiedOntoEveryOtherPlaceIsRejected() throws {
        try withTemporaryDirectory("swap") { dir in
            var places: [(store: VaultStore, group: GroupName, id: ItemID)] = []
            for v in 0..<2 {
                let store = try VaultStore.create(at: dir.path + "/v\(v)")
                for g in 0..<2 {
                    let group = try GroupName("g\(g)")
                    for i in 0..<2 {
                        let id = try store.itemID(group: group, primaryKey: [UInt8(i)])
                        try store.put(Array("v\(v)g\(g)i\(i)".utf8), group: group, id: id)
                        places.append((store, group, id))
                    }
                }
            }
            var pairs = 0
            for (s, source) in places.enumerated() {
                let sourceBytes = try readBytes(source.store.path(of: ItemLocation(group: source.group, id: source.id)))
                for (d, destination) in places.enumerated() where d != s {
                    let path = destination.store.path(of: ItemLocation(group: destination.group, id: destination.id))
                    let saved = try readBytes(path)
                    try writeBytes(sourceBytes, path)
                    pairs += 1
                    do throws(StoreError) {
                        _ = try destination.store.get(group: destination.group, id: destination.id)
                        Issue.record("file \(s) accepted at place \(d)")
                    } catch {
                        #expect(error.code == .integrity)
                    }
                    try writeBytes(saved, path)
                }
            }
            #expect(pairs == 56)
            figure(
                "swaps",
                "\(pairs) ordered pairs of 8 item files (2 vaults x 2 groups x 2 ids) copied onto each other: all rejected"
            )
        }
    }

    // MARK: Rollback

    @Test func anItemReplacedWithAnOlderCopyOfItselfIsDetected() throws {
        try Fixture.withFirstItemFile { f, target in
            let old = try readBytes(target)
            try f.vault.set(Data("secret-0-v2"), for: f.keys[0])
            try f.vault.set(Data("secret-0-v3"), for: f.keys[0])
            try writeBytes(old, target)
            // A fresh handle (a new process) sees it too: the record is on disk.
            let fresh = try Vault.open(at: f.path, client: try testClient())
            for vault in [f.vault, fresh] {
                let error = #expect(throws: VaultError.self) { try vault.data(for: f.keys[0]) }
                #expect(error?.status == .decode)
                #expect(error?.message.contains("older copy") == true, "\(String(describing: error))")
                #expect(try vault.data(for: f.keys[1]) == Data("secret-1"))
            }
            // A scan skips it and reports the damage only when nothing else matched.
            #expect(try f.vault.allKeys().count == 2)
            // As for any damaged item, an update through the API refuses it too (the read comes first).
            #expect(throws: VaultError.self) { try f.vault.modify(f.keys[0]) { _ in Data("overwrite") } }
        }
    }

    /// An added item (generation 1) has no record, since no older copy of it exists; its first update
    /// makes one, and a rollback to the added copy is detected.
    @Test func anAddedItemHasNoRecordAndItsFirstUpdateMakesOne() throws {
        try Fixture.with { f in
            let key = try ItemKey(service: "hostile", account: "new")
            try f.vault.set(Data("v1"), for: key)
            let target = try f.itemPath(key)
            let record =
                (target as NSString).deletingLastPathComponent + "/.gen."
                + ((target as NSString).lastPathComponent as NSString).deletingPathExtension
            #expect(!FileManager.default.fileExists(atPath: record))
            let added = try readBytes(target)
            try f.vault.set(Data("v2"), for: key)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: record).hasPrefix("1:0000000000000002:"))
            try writeBytes(added, target)
            let error = #expect(throws: VaultError.self) { try f.vault.data(for: key) }
            #expect(error?.message.contains("older copy") == true, "\(String(describing: error))")
        }
    }

    /// The documented limits: the record rolled back together with the item, or removed, is not
    /// detected (nor is a rollback of the whole directory).
    @Test func rollingBackTheItemWithItsRecordIsNotDetected() throws {
        try Fixture.withFirstItemFile { f, target in
            let record =
                (target as NSString).deletingLastPathComponent + "/.gen."
                + ((target as NSString).lastPathComponent as NSString).deletingPathExtension
            let oldItem = try readBytes(target)
            let oldRecord = try FileManager.default.destinationOfSymbolicLink(atPath: record)
            try f.vault.set(Data("secret-0-v2"), for: f.keys[0])
            try writeBytes(oldItem, target)
            try FileManager.default.removeItem(atPath: record)
            #expect(try f.vault.data(for: f.keys[0]) == Data("secret-0"))  // record removed: undetected
            try FileManager.default.createSymbolicLink(atPath: record, withDestinationPath: oldRecord)
            #expect(try f.vault.data(for: f.keys[0]) == Data("secret-0"))  // pair rolled back: undetected
        }
    }

    /// Readers take no lock: a reader racing an updater must never mistake the update for a rollback.
    /// Two items of one group are updated in turn, so the file a reader opened keeps becoming the
    /// group's spare and being written over with the other item's contents (or zeros) while it reads:
    /// the reader must still get each item's own value, never an error.
    @Test func concurrentUpdatesAreNeverMistakenForRollbacksOrOtherItems() throws {
        try Fixture.with { f in
            let reader = try Vault.open(at: f.path, client: try testClient())
            let done = Atomic<Bool>(false)
            let errors = Mutex<[String]>([])
            let reads = Atomic<Int>(0)
            let thread = Thread {
                while !done.load(ordering: .relaxed) {
                    for (index, prefix) in ["v", "w"].enumerated() {
                        do {
                            let value = String(
                                decoding: try reader.data(for: f.keys[index]) ?? Data("missing".utf8), as: UTF8.self)
                            if !(value.hasPrefix(prefix) || value == "secret-\(index)") {
                                errors.withLock { $0.append("item \(index) read \(value)") }
                            }
                            reads.add(1, ordering: .relaxed)
                        } catch {
                            errors.withLock { $0.append("\(error)") }
                        }
                    }
                }
            }
            thread.start()
            for i in 0..<300 {
                try f.vault.set(Data("v\(i)"), for: f.keys[0])
                try f.vault.set(Data("w\(i)"), for: f.keys[1])
            }
            done.store(true, ordering: .relaxed)
            while !thread.isFinished { usleep(1000) }
            #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0.prefix(3) })")
            print(
                "FIGURE reader-race: 600 updates of 2 items of one group against \(reads.load(ordering: .relaxed)) lock-free reads: \(errors.withLock { $0.count }) errors or wrong values"
            )
        }
    }

    // MARK: Names and links

    @Test func dotDotAndSlashesAreNotNames() {
        for name in ["..", ".", "../x", "a/b", "/etc", ".hidden", "a\0b", ""] {
            #expect(throws: VaultError.self) { _ = try AccessGroup(name) }
        }
        #expect(throws: StoreError.self) { _ = try ItemID("../" + String(repeating: "0", count: 61)) }
    }

    /// A thread keeps swapping the group directory for a symlink to a directory outside the vault
    /// (which holds a valid item file of the same vault, group and id) while writers and readers work;
    /// nothing is ever read from or written to the outside directory.
    @Test func directorySwappedForASymlinkWhileAWriterRuns() throws {
        try withTemporaryDirectory("symlink") { dir in
            let path = dir.path + "/vault"
            let outside = dir.path + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
            let group = try GroupName("race")
            let setup = try VaultStore.create(at: path)
            let id = try setup.itemID(group: group, primaryKey: [1])
            try setup.put(Array("OUTSIDE".utf8), group: group, id: id)
            // A valid file of the same vault, group and id, planted outside: reading it would succeed.
            try FileManager.default.copyItem(
                atPath: setup.path(of: ItemLocation(group: group, id: id)), toPath: outside + "/" + id.fileName)
            let planted = try readBytes(outside + "/" + id.fileName)
            try setup.put(Array("inside".utf8), group: group, id: id)
            let groupPath = path + "/groups/race"
            let races = Sizes.symlinkRaces
            let swaps = Atomic<Int>(0)
            let stop = Atomic<Bool>(false)
            let swapper = Thread {
                while !stop.load(ordering: .relaxed) {
                    if rename(groupPath, groupPath + ".real") == 0 {
                        _ = symlink(outside, groupPath)
                        usleep(UInt32.random(in: 0...400))
                        _ = unlink(groupPath)
                        _ = rename(groupPath + ".real", groupPath)
                    }
                    usleep(UInt32.random(in: 0...400))
                    swaps.add(1, ordering: .relaxed)
                }
            }
            swapper.start()
            var writes = 0
            var refused = 0
            var outsideReads = 0
            var i = 0
            while i < races || swaps.load(ordering: .relaxed) < races {
                i += 1
                do {
                    let store = try VaultStore.open(at: path)
                    try store.put(Array("inside-\(i)".utf8), group: group, id: id)
                    if let value = try store.get(group: group, id: id),
                        value == Array("OUTSIDE".utf8)
                    {
                        outsideReads += 1
                    }
                    writes += 1
                } catch {
                    refused += 1
                }
            }
            stop.store(true, ordering: .relaxed)
            while !swapper.isFinished { usleep(1000) }
            let outsideNames = try FileManager.default.contentsOfDirectory(atPath: outside)
            #expect(outsideNames == [id.fileName], "\(outsideNames)")
            #expect(try readBytes(outside + "/" + id.fileName) == planted)
            #expect(outsideReads == 0)
            figure(
                "symlink-races",
                "\(swaps.load(ordering: .relaxed)) directory/symlink swaps against \(i) open+write+read rounds "
                    + "(\(writes) completed, \(refused) refused): 0 files written outside, \(outsideReads) reads from outside"
            )
        }
    }

    // MARK: Nonces

    @Test func nonceRepeatsInSealedItems() throws {
        let count = Sizes.nonces
        let key = try SymmetricKey.random()
        let group = try GroupName("nonces")
        let id = try ItemID(String(repeating: "a", count: 64))
        let vaultID = [UInt8](repeating: 7, count: 16)
        struct Nonce: Hashable {
            let a: UInt64, b: UInt64, c: UInt64
        }
        var seen = Set<Nonce>(minimumCapacity: count)
        var repeats = 0
        let plaintext: [UInt8] = Array("x".utf8)
        for _ in 0..<count {
            let sealed = try ItemFile.seal(
                plaintext, key: key, protectionClass: .always, generation: 1, binding: vaultID,
                location: ItemLocation(group: group, id: id))
            let start = ItemFile.headerByteCount
            let nonce = sealed.withUnsafeBytes { raw in
                Nonce(
                    a: raw.loadUnaligned(fromByteOffset: start, as: UInt64.self),
                    b: raw.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self),
                    c: raw.loadUnaligned(fromByteOffset: start + 16, as: UInt64.self))
            }
            if !seen.insert(nonce).inserted { repeats += 1 }
        }
        #expect(repeats == 0)
        figure("nonces", "\(count) item encryptions, \(repeats) repeated nonces")
    }

    @Test func noNonceRepeatsAcrossFork() throws {
        let count = Sizes.forkNonces
        let result = try runHelper(["fork-nonces", String(count)])
        #expect(result.status == 0, "\(result.errors)")
        var parent = Set<Substring>()
        var child = Set<Substring>()
        var parentLines = 0
        var childLines = 0
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, parts[1].count == 48 else { continue }
            if parts[0] == "p" {
                parentLines += 1
                parent.insert(parts[1])
            } else {
                childLines += 1
                child.insert(parts[1])
            }
        }
        #expect(parentLines == count && childLines == count)
        #expect(parent.count == count && child.count == count)
        let shared = parent.intersection(child).count
        #expect(shared == 0)
        figure(
            "fork-nonces",
            "\(count) nonces in a parent and \(count) in its fork()ed child: \(shared) shared, \(2 * count - parent.count - child.count) repeated"
        )
    }
}
