import Foundation
import Testing
import VaultTestSupport

/// `vault history`, `get --version`, `restore`, `rm --purge`, `put --if-version` and `config versions`
/// through the real binary, with a bad input each.
@Suite struct HistoryCommandTests {
    @Test func theHistoryCommandsAndTheirRefusals() throws {
        try withScratch { scratch in
            #expect(try scratch.run(["init"]).status == 0)
            #expect(try scratch.run(["put", "db", "app"], input: Data("one".utf8)).status == 0)
            #expect(try scratch.run(["put", "db", "app"], input: Data("two".utf8)).status == 0)
            let listed = try scratch.run(["history", "db", "app"])
            #expect(listed.status == 0)
            let lines = listed.text.split(separator: "\n")
            #expect(
                lines.count == 3 && lines[0].hasPrefix("VERSION") && lines[2].hasSuffix("current"), "\(listed.text)")
            #expect(!listed.text.contains("one") && !listed.text.contains("two"))
            #expect(try scratch.run(["get", "--version", "1", "db", "app"]).text == "one")
            // A version not kept names the ones that are; a word is no version.
            let missing = try scratch.run(["restore", "--version", "9", "db", "app"])
            #expect(
                missing.status == 1 && missing.errors.contains("has no version 9; it keeps 1, 2"), "\(missing.errors)")
            #expect(try scratch.run(["get", "--version", "one", "db", "app"]).status == 2)
            // Check-and-set: a stale version writes nothing and says which is current.
            let stale = try scratch.run(["put", "--if-version", "1", "db", "app"], input: Data("late".utf8))
            #expect(stale.status == 3 && stale.errors.contains("version 2 is current"), "\(stale.errors)")
            #expect(try scratch.run(["put", "--if-version", "2", "db", "app"], input: Data("three".utf8)).status == 0)
            // rm, then restore brings it back as a new version; --purge leaves nothing to restore.
            #expect(try scratch.run(["rm", "db", "app"]).status == 0)
            let restored = try scratch.run(["restore", "--version", "2", "db", "app"])
            #expect(restored.status == 0 && restored.text.contains("as version 5"), "\(restored.errors)")
            #expect(try scratch.run(["get", "db", "app"]).text == "two")
            #expect(try scratch.run(["rm", "--purge", "--all", "db"]).status == 2)
            #expect(try scratch.run(["rm", "--purge", "db", "app"]).status == 0)
            #expect(try scratch.run(["history", "db", "app"]).status == 1)
            // The setting.
            #expect(try scratch.run(["config"]).text == "versions 10\n")
            #expect(try scratch.run(["config", "versions", "3"]).status == 0)
            #expect(try scratch.run(["config"]).text == "versions 3\n")
            #expect(try scratch.run(["config", "versions", "300"]).status == 2)
            #expect(try scratch.run(["config", "colour", "blue"]).status == 2)
        }
    }

    /// `vault check` verifies kept versions too: a damaged one and one renamed to another number are
    /// each reported by path, and `--remove-damaged` removes them and nothing else.
    @Test func checkVerifiesKeptVersionsAndRemovesTheDamagedOnes() throws {
        try withScratch { scratch in
            #expect(try scratch.run(["init"]).status == 0)
            for value in ["one", "two", "three", "four"] {
                #expect(try scratch.run(["put", "db", "app"], input: Data(value.utf8)).status == 0)
            }
            #expect(try scratch.run(["check"]).status == 0)
            let json = try scratch.run(["check", "--json"])
            #expect(json.text.contains("\"versions\":3"), "\(json.text)")
            let group = scratch.vault + "/groups/vault"
            let versions = try FileManager.default.contentsOfDirectory(atPath: group).filter { $0.hasPrefix(".v.") }
                .sorted()
            #expect(versions.count == 3)
            // Version 1 damaged (a byte flipped), version 2 renamed over version 3's name.
            let first = group + "/" + versions[0]
            var bytes = try Data(contentsOf: URL(fileURLWithPath: first))
            bytes[bytes.count - 5] ^= 0x55
            try bytes.write(to: URL(fileURLWithPath: first))
            try FileManager.default.removeItem(atPath: group + "/" + versions[2])
            try FileManager.default.moveItem(atPath: group + "/" + versions[1], toPath: group + "/" + versions[2])
            let checked = try scratch.run(["check"])
            #expect(checked.status == 6, "\(checked.errors)")
            #expect(checked.errors.contains(versions[0]) && checked.errors.contains(versions[2]), "\(checked.errors)")
            #expect(checked.errors.contains("0 of 1 item files and 2 of 2 kept versions failed"), "\(checked.errors)")
            let removed = try scratch.run(["check", "--remove-damaged"])
            #expect(removed.status == 0, "\(removed.errors)")
            #expect(try scratch.run(["check"]).status == 0)
            #expect(try scratch.run(["get", "db", "app"]).text == "four")
            let left = try FileManager.default.contentsOfDirectory(atPath: group).filter { $0.hasPrefix(".v.") }
            #expect(left.isEmpty, "\(left)")
        }
    }
}
