import Foundation
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

@Suite struct ItemFileTests {
    let group = try! GroupName("com.example.app")

    @Test func roundTripReplaceAndRemove() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: Array("service\0account".utf8))
            #expect(try store.get(group: group, id: id) == nil)
            try store.put(Array("first".utf8), group: group, id: id)
            #expect(try store.get(group: group, id: id) == Array("first".utf8))
            try store.put([0, 1, 0, 255], group: group, id: id)
            #expect(try store.get(group: group, id: id) == [0, 1, 0, 255])
            try store.put([], group: group, id: id)
            #expect(try store.get(group: group, id: id) == [])
            // Another process (another open) sees it.
            #expect(try VaultStore.open(at: vault.path).get(group: group, id: id) == [])
            #expect(try store.itemIDs(in: group) == [id])
            #expect(try store.groups() == [group])
            #expect(try vault.mode("groups/\(group)") == 0o700)
            #expect(try vault.mode("groups/\(group)/\(id.fileName)") == 0o600)
            #expect(try store.delete(group: group, id: id) == true)
            #expect(try store.delete(group: group, id: id) == false)
            #expect(try store.get(group: group, id: id) == nil)
            // What stays is the group's spare file, zeroed (see SpareFileTests).
            #expect(try vault.entries("groups/\(group)") == [".lock", ".spare", "group.key"])
            #expect(try vault.bytes("groups/\(group)/.spare").allSatisfy { $0 == 0 })
        }
    }

    @Test func fileLayoutIsHeaderNonceBody() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("secret-value".utf8), group: group, id: id)
            let bytes = try vault.bytes("groups/\(group)/\(id.fileName)")
            #expect(Array(bytes[0..<8]) == Array("VLTI".utf8) + [2, 1, 0, 0])
            // Header, nonce, the plaintext padded to 64 bytes, tag.
            #expect(bytes.count == ItemFile.headerByteCount + 24 + 64 + 16)
            // The plaintext does not appear in the file, nor does the file name reveal the primary key.
            #expect(!String(decoding: bytes, as: UTF8.self).contains("secret"))
            #expect(id.rawValue.count == 64)
        }
    }

    @Test func itemIDsAreKeyedAndPerGroup() throws {
        try withTemporaryVault("store") { vault in
            try withTemporaryVault("store") { other in
                let a = try VaultStore.create(at: vault.path)
                let b = try VaultStore.create(at: other.path)
                let key = Array("svc\0acct".utf8)
                let id = try a.itemID(group: group, primaryKey: key)
                #expect(try a.itemID(group: group, primaryKey: key) == id)
                #expect(try a.itemID(group: try GroupName("other"), primaryKey: key) != id)
                #expect(try b.itemID(group: group, primaryKey: key) != id)
                #expect(try a.itemID(group: group, primaryKey: key + [0]) != id)
            }
        }
    }

    func damagedReadFails(_ store: VaultStore, _ id: ItemID, _ group: GroupName) -> StoreError? {
        #expect(throws: StoreError.self) { _ = try store.get(group: group, id: id) }
    }

    @Test func everyBitFlipAndTruncationIsAnIntegrityError() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let ids = try [1, 2].map { try store.itemID(group: group, primaryKey: [$0]) }
            let (id, neighbour) = (ids[0], ids[1])
            for (item, value) in zip(ids, ["hello world", "neighbour"]) {
                try store.put(Array(value.utf8), group: group, id: item)
            }
            let name = "groups/\(group)/\(id.fileName)"
            let original = try vault.bytes(name)
            for bit in 0..<(original.count * 8) {
                var damaged = original
                damaged[bit / 8] ^= UInt8(1 << (bit % 8))
                try vault.write(damaged, to: name)
                let error = damagedReadFails(store, id, group)
                #expect(
                    error?.code == .integrity || error?.code == .unsupportedFormat,
                    "bit \(bit): \(String(describing: error))")
                #expect(error?.message.contains(vault.file(name)) == true)
            }
            for length in 0..<original.count {
                try vault.write(Array(original[0..<length]), to: name)
                #expect(damagedReadFails(store, id, group)?.code == .integrity, "length \(length)")
            }
            // The other item is unaffected, and the restored file reads again.
            #expect(try store.get(group: group, id: neighbour) == Array("neighbour".utf8))
            try vault.write(original, to: name)
            #expect(try store.get(group: group, id: id) == Array("hello world".utf8))
        }
    }

    @Test func aFileCopiedOntoAnotherItemGroupOrVaultFails() throws {
        try withTemporaryVault("store") { vault in
            try withTemporaryVault("store") { elsewhere in
                let store = try VaultStore.create(at: vault.path)
                let otherVault = try VaultStore.create(at: elsewhere.path)
                let otherGroup = try GroupName("other.group")
                let id = try store.itemID(group: group, primaryKey: [1])
                let id2 = try store.itemID(group: group, primaryKey: [2])
                try store.put(Array("one".utf8), group: group, id: id)
                try store.put(Array("two".utf8), group: group, id: id2)
                try store.put(Array("x".utf8), group: otherGroup, id: id)
                try otherVault.put(Array("y".utf8), group: group, id: id)
                let file = try vault.bytes("groups/\(group)/\(id.fileName)")

                // Onto another item id in the same group.
                try vault.write(file, to: "groups/\(group)/\(id2.fileName)")
                #expect(damagedReadFails(store, id2, group)?.code == .integrity)
                // Onto the same id in another group (same vault, same master key).
                try vault.write(file, to: "groups/\(otherGroup)/\(id.fileName)")
                #expect(damagedReadFails(store, id, otherGroup)?.code == .integrity)
                // Onto the same group and id in another vault.
                try elsewhere.write(file, to: "groups/\(group)/\(id.fileName)")
                #expect(damagedReadFails(otherVault, id, group)?.code == .integrity)
                // The original still reads.
                #expect(try store.get(group: group, id: id) == Array("one".utf8))
            }
        }
    }

    @Test func aWrongKeyFailsWithAnIntegrityError() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("one".utf8), group: group, id: id)
            let contents = try vault.bytes("groups/\(group)/\(id.fileName)")
            let wrongKey = try SymmetricKey.random()
            let error = #expect(throws: StoreError.self) {
                _ = try ItemFile.header(of: contents, path: "p")
                _ = try ItemFile.open(
                    contents, key: wrongKey, binding: try store.keys(for: group).binding,
                    location: ItemLocation(group: group, id: id), path: "p")
            }
            #expect(error?.code == .integrity)
            #expect(error?.cause is CryptoError)
        }
    }

    @Test func oversizedItemFilesAreRefusedBeforeReading() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            let path = vault.file("groups/\(group)/\(id.fileName)")
            #expect(truncate(path, off_t(ItemFile.maximumFileByteCount + 1)) == 0)
            let error = damagedReadFails(store, id, group)
            #expect(error?.code == .integrity)
            #expect(error?.message.contains("more than") == true)
        }
    }

    @Test func symlinksInsideTheVaultAreRefused() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            let outside = vault.root + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)

            // An item file replaced by a symlink.
            let itemPath = vault.file("groups/\(group)/\(id.fileName)")
            try FileManager.default.copyItem(atPath: itemPath, toPath: outside + "/copy.item")
            try FileManager.default.removeItem(atPath: itemPath)
            try FileManager.default.createSymbolicLink(atPath: itemPath, withDestinationPath: outside + "/copy.item")
            let fresh = try VaultStore.open(at: vault.path)
            #expect(damagedReadFails(fresh, id, group)?.code == .insecureFile)

            // A group directory replaced by a symlink (seen by a store that has not opened it yet).
            let linked = try GroupName("linked")
            try FileManager.default.createSymbolicLink(
                atPath: vault.file("groups/linked"), withDestinationPath: outside)
            let error = damagedReadFails(fresh, id, linked)
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("symbolic link") == true)
            let writeError = #expect(throws: StoreError.self) { try fresh.put([1], group: linked, id: id) }
            #expect(writeError?.code == .insecureFile)
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == ["copy.item"])

            // The groups directory itself replaced by a symlink.
            try FileManager.default.moveItem(atPath: vault.file("groups"), toPath: vault.root + "/groups-real")
            try FileManager.default.createSymbolicLink(
                atPath: vault.file("groups"), withDestinationPath: vault.root + "/groups-real")
            let openError = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(openError?.code == .insecureFile)
        }
    }

    @Test func groupNamesAreValidated() throws {
        for bad in ["", ".hidden", "..", "a/b", "a b", "ü", String(repeating: "a", count: 201), "a\nb"] {
            let error = #expect(throws: StoreError.self) { _ = try GroupName(bad) }
            #expect(error?.code == .invalidName, "\(bad)")
        }
        for good in ["a", "com.example.app", "TEAMID.com.example-app_2", String(repeating: "a", count: 200)] {
            #expect(try GroupName(good).rawValue == good)
        }
        #expect(throws: StoreError.self) { _ = try ItemID("../../etc/passwd") }
    }

    /// The record's text is `1:<generation, 16 hex>:<tag, 32 hex>` (docs/FORMAT.md), and reads back.
    @Test func generationRecordTextsAreTheFormatsAndReadBack() {
        let tag: [UInt8] = [
            0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x10, 0xa5, 0x5a, 0x0f, 0xf0, 0x33, 0xcc, 0x99, 0x66, 0x42,
        ]
        for (generation, digits) in [
            (UInt64(0), "0000000000000000"), (1, "0000000000000001"), (0x0123_4567_89ab_cdef, "0123456789abcdef"),
            (.max, "ffffffffffffffff"), (0xf000_0000_0000_000f, "f00000000000000f"),
        ] {
            let text = GenerationRecord.text(generation: generation, tag: tag)
            #expect(text == "1:\(digits):00017f80feff10a55a0ff033cc996642")
            let bytes = Array(text.utf8)
            #expect(GenerationRecord.parse(bytes.span) == GenerationRecord.Recorded(generation: generation, tag: tag))
        }
    }

    /// An id holds its file name; its hex digits, its records' names and its order come from it.
    @Test func itemIDsNameTheirFileAndRecords() throws {
        let hex = String(repeating: "0123456789abcdef", count: 4)
        let id = try ItemID(hex)
        #expect(id.fileName == hex + ".item")
        #expect(id.rawValue == hex)
        #expect(id.description == hex)
        #expect(id.hashBytes == Hex.decode(hex))
        #expect(ItemID(hash: id.hashBytes) == id)
        #expect(GenerationRecord.name(id) == ".gen." + hex)
        #expect(MoveIntent.noteName(id) == ".move." + hex)
        var bytes: [UInt8] = [1]
        id.appendHexDigits(to: &bytes)
        #expect(bytes == [1] + Array(hex.utf8))
        #expect(ItemID(fileName: hex + ".item") == id)
        try withTemporaryDirectory("store") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            try fd.makeSymbolicLinkAt(".gen." + hex, target: "record")
            #expect(try fd.readSymbolicLinkAt(GenerationRecord.entryName(id)) == "record")
        }

        let upper = String(repeating: "0123456789ABCDEF", count: 4)
        for name in [
            hex, hex + ".itemx", hex + ".tmp", String(hex.dropLast()) + ".item", hex + "0.item", upper + ".item",
            String(hex.dropLast()) + "é.item", hex + ".item\u{301}", ".gen." + hex, "", hex + "abcde", hex + ".ITEM",
            hex + ".itex",
        ] {
            #expect(ItemID(fileName: name) == nil, "\(name)")
        }
        for text in [upper, hex + "0", String(hex.dropLast()), hex + ".item"] {
            #expect(throws: StoreError.self) { _ = try ItemID(text) }
        }

        let ids = try (0..<40).map { i in
            try ItemID(String(repeating: String(i % 16, radix: 16), count: 63) + "\(i % 7)")
        }
        #expect(ids.sorted().map(\.rawValue) == ids.map(\.rawValue).sorted())
    }

    @Test func masterKeyPagesAreLockedInAnOpenStore() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let address = store.classKeys!.always.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
            let smaps = String(
                decoding: FileHandle(forReadingAtPath: "/proc/self/smaps")!.readDataToEndOfFile(), as: UTF8.self)
            var inside = false
            var locked = -1
            var flags: [Substring] = []
            for line in smaps.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
                    let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                    inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
                } else if inside, fields.first == "Locked:" {
                    locked = Int(fields[1]) ?? -1
                } else if inside, fields.first == "VmFlags:" {
                    flags = Array(fields.dropFirst())
                    break
                }
            }
            #expect(locked > 0)
            #expect(flags.contains("lo"))
            #expect(flags.contains("dd"))
        }
    }

    /// The generation record's tag refuses a persistent id too long for its length byte.
    @Test func aGenerationRecordRefusesAnOversizedPersistentID() throws {
        let item = ItemLocation(group: try GroupName("g"), id: try ItemID(String(repeating: "a", count: 64)))
        let error = #expect(throws: StoreError.self) {
            _ = try GenerationRecord.tag(
                key: try SymmetricKey.random(), binding: [1], location: item,
                version: ItemVersion(persistentID: [UInt8](repeating: 1, count: 300), generation: 2))
        }
        #expect(error?.code == .integrity)
    }
}
