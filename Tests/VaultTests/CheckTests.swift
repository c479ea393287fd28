import Foundation
import Testing

@testable import Vault

@Suite struct CheckTests {
    /// Every item file path of the vault, sorted.
    func itemFiles(_ vault: TestVault) throws -> [String] {
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
        let dir = try TestVault()
        defer { dir.remove() }
        let vault = try dir.open(app: "com.example.app", groups: ["shared"])
        #expect(try vault.verifyAll() == VerificationReport(groupCount: 0, itemCount: 0, problems: []))
        try vault.set("one", for: ItemKey(service: "s", account: "a"))
        try vault.set("two", for: ItemKey(service: "s", account: "b", group: AccessGroup("com.example.app")))
        var internet = ItemAttributes()
        internet.server = "example.com"
        internet.account = "me"
        try vault.add(.internetPassword, attributes: internet, data: Data("pw"))
        // A move to another primary key keeps the file name honest.
        try vault.update(.genericPassword(service: "s", account: "a"), with: ItemChanges(attributes: genp("s2", "a2")))
        let report = try vault.verifyAll()
        #expect(report.groupCount == 2)
        #expect(report.itemCount == 3)
        #expect(report.problems.isEmpty)
    }

    @Test func damagedTruncatedAndSwappedFilesAreReportedByPath() throws {
        let dir = try TestVault()
        defer { dir.remove() }
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
        let readable = try ["a", "b", "c", "d"].filter {
            (try? vault.string(for: ItemKey(service: "s", account: $0))) != nil
        }
        #expect(readable.count == 1)
    }

    @Test func everyGroupIsCheckedWhateverTheClient() throws {
        let dir = try TestVault()
        defer { dir.remove() }
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
