import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultTestSupport

@testable import Vault

@Suite struct CheckTests {
    /// Every item file path of the vault, sorted.
    func itemFiles(_ vault: TemporaryVault) throws -> [String] {
        let groups = vault.path + "/groups"
        var paths: [String] = []
        for group in try FileManager.default.contentsOfDirectory(atPath: groups) {
            for name in try FileManager.default.contentsOfDirectory(atPath: groups + "/" + group)
            where name.hasSuffix(".item") {
                paths.append(groups + "/" + group + "/" + name)
            }
        }
        return paths.sorted()
    }

    @Test func aSoundVaultHasNoProblems() throws {
        try withTemporaryVault { dir in
            let vault = try dir.open(app: "com.example.app", groups: ["shared"])
            #expect(
                try vault.verifyAll() == VerificationReport(groupCount: 0, itemCount: 0, versionCount: 0, problems: []))
            try vault.set("one", for: ItemKey(service: "s", account: "a"))
            try vault.set("two", for: ItemKey(service: "s", account: "b", group: AccessGroup("com.example.app")))
            var internet = ItemAttributes()
            internet.server = "example.com"
            internet.account = "me"
            try vault.add(.internetPassword, attributes: internet, data: Data("pw"))
            // A move to another primary key keeps the file name honest.
            try vault.update(
                .genericPassword(service: "s", account: "a"), with: ItemChanges(attributes: genp("s2", "a2")))
            let report = try vault.verifyAll()
            #expect(report.groupCount == 2)
            #expect(report.itemCount == 3)
            #expect(report.problems.isEmpty)
        }
    }

    @Test func damagedTruncatedAndSwappedFilesAreReportedByPath() throws {
        try withTemporaryVault { dir in
            let vault = try dir.open()
            for account in ["a", "b", "c", "d"] {
                try vault.set(Data(account), for: ItemKey(service: "s", account: account))
            }
            let files = try itemFiles(dir)
            #expect(files.count == 4)
            // One flipped byte in the ciphertext.
            var bytes = try Data(contentsOf: URL(fileURLWithPath: files[0]))
            bytes[bytes.count - 1] ^= 1
            try bytes.write(to: URL(fileURLWithPath: files[0]))
            // A truncated file.
            try Data([0x56, 0x4C]).write(to: URL(fileURLWithPath: files[1]))
            // A sound file copied onto another item's name.
            try FileManager.default.removeItem(atPath: files[2])
            try FileManager.default.copyItem(atPath: files[3], toPath: files[2])

            let report = try vault.verifyAll()
            #expect(report.itemCount == 4)
            #expect(report.problems.map(\.path) == [files[0], files[1], files[2]])
            #expect(report.problems.allSatisfy { $0.status == .decode })
            #expect(report.problems.allSatisfy { $0.group == "com.example.app" })
            #expect(report.problems[0].reason.hasPrefix("failed authentication"))
            #expect(report.problems[1].description.hasPrefix(files[1] + ": "))
            // The sound file (whichever account it holds: names are hashes) is still readable.
            let readable = ["a", "b", "c", "d"].filter {
                (try? vault.string(for: ItemKey(service: "s", account: $0))) != nil
            }
            #expect(readable.count == 1)
        }
    }

    @Test func everyGroupIsCheckedWhateverTheClient() throws {
        try withTemporaryVault { dir in
            try dir.open(app: "one").set("x", for: ItemKey(service: "s"))
            let other = try dir.open(app: "two")
            try other.set("y", for: ItemKey(service: "s"))
            let report = try other.verifyAll()
            #expect(report.groupCount == 2)
            #expect(report.itemCount == 2)
            #expect(try other.storedGroups().map(\.group.rawValue) == ["one", "two"])
            #expect(try other.storedGroups().map(\.itemCount) == [1, 1])
        }
    }

    /// A vault with items a, b, c of service "s", one of whose files has a flipped byte.
    func vaultWithOneDamagedItem(_ dir: TemporaryVault) throws -> (vault: Vault, damaged: String) {
        let vault = try dir.open()
        for account in ["a", "b", "c"] {
            try vault.set(Data(account), for: ItemKey(service: "s", account: account))
        }
        let files = try itemFiles(dir)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: files[0]))
        bytes[bytes.count - 1] ^= 1
        try bytes.write(to: URL(fileURLWithPath: files[0]))
        return (vault, files[0])
    }

    @Test func searchReturnsTheReadableItemsAndTheFilesItCouldNotRead() throws {
        try withTemporaryVault { dir in
            let (vault, damaged) = try vaultWithOneDamagedItem(dir)
            let all = Query(itemClass: .genericPassword, limit: .all)
            // copyMatching keeps its silence about a damaged file when others match.
            #expect(try vault.copyMatching(all).count == 2)
            let result = try vault.search(all)
            #expect(result.items.count == 2)
            #expect(result.items.allSatisfy { $0.data == nil })
            #expect(result.problems.map(\.path) == [damaged])
            #expect(result.problems.first?.status == .decode)
            #expect(result.problems.first?.group == "com.example.app")
            #expect(result.problems.first?.reason.hasPrefix("failed authentication") == true)
            #expect(try vault.search(all, returning: [.attributes, .data]).items.allSatisfy { $0.data != nil })
            #expect(try vault.search(Query(itemClass: .genericPassword, limit: .one)).items.count == 1)

            // The damaged item named by its key: copyMatching throws, search reports.
            let sound = Set(result.items.compactMap(\.attributes.account))
            let lost = try #require(["a", "b", "c"].first { !sound.contains($0) })
            let byKey = Query.genericPassword(service: "s", account: lost)
            #expect(status { _ = try vault.copyMatching(byKey) } == .decode)
            let named = try vault.search(byKey)
            #expect(named.items.isEmpty && named.problems.map(\.path) == [damaged])

            // No match on sound files is an empty result, not itemNotFound.
            let none = try vault.search(.genericPassword(service: "nothing", limit: .all), returning: [.attributes])
            #expect(none.items.isEmpty && none.problems.map(\.path) == [damaged])
            let elsewhere = try dir.open(app: "other").search(Query(itemClass: .genericPassword, limit: .all))
            #expect(elsewhere.items.isEmpty && elsewhere.problems.isEmpty)
        }
    }

    @Test func verifiedGroupsCountEveryFileAndReportTheDamagedOnes() throws {
        try withTemporaryVault { dir in
            let (vault, damaged) = try vaultWithOneDamagedItem(dir)
            try dir.open(app: "two").set("x", for: ItemKey(service: "t"))
            let verified = try vault.verifiedGroups()
            #expect(verified.groups == (try vault.storedGroups()))
            #expect(verified.groups.map(\.itemCount) == [3, 1])
            #expect(verified.problems == (try vault.verifyAll()).problems)
            #expect(verified.problems.map(\.path) == [damaged])
        }
    }
}

@Suite struct LockedSearchTests {
    @Test func lockedFilesAreNotDamage() throws {
        try withTemporaryVault { t in
            let client = try Client(applicationIdentifier: "com.example.app")
            let right = KeySource(
                passphrase: { (_) throws(StoreError) in try secureBytes([1, 2]) }, limits: .minimum)
            let vault = try Vault.create(at: t.path, client: client, keySource: right)
            try vault.set("always", for: try ItemKey(service: "always"), accessibility: .always)
            try vault.set("afu", for: try ItemKey(service: "afu"), accessibility: .afterFirstUnlock)

            let locked = try Vault.open(at: t.path, client: client, keySource: KeySource())
            // As copyMatching: a search over locked items is locked...
            #expect(
                status { _ = try locked.search(Query(itemClass: .genericPassword, limit: .all)) }
                    == .interactionNotAllowed)
            // ...unless filtered to an unlocked class, and then nothing is reported as damaged.
            var onlyAlways = Query(itemClass: .genericPassword, limit: .all)
            onlyAlways.attributes.accessible = .always
            let found = try locked.search(onlyAlways)
            #expect(found.items.map(\.attributes.service) == ["always"])
            #expect(found.problems.isEmpty)
            // The groups are counted whole, and a locked file is not a damaged one.
            let verified = try locked.verifiedGroups()
            #expect(verified.groups.map(\.itemCount) == [2])
            #expect(verified.problems.isEmpty)
            // check, which must verify everything, still says it could not.
            #expect(try locked.verifyAll().problems.map(\.status) == [.interactionNotAllowed])
        }
    }
}
