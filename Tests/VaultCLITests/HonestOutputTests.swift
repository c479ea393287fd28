import Foundation
import Testing
import VaultTestSupport

/// `ls`, `groups` and `check` on a vault with a damaged item file, and user-controlled names with
/// control characters in every kind of output.
@Suite struct HonestOutputTests {
    /// A vault with three items, one of whose files has a flipped byte; returns the damaged file's path.
    /// Standard error of a listing over a damaged file: the file's line, then the command's summary.
    func expectDamageNamed(_ errors: String, _ damaged: String, then command: String) throws {
        let lines = errors.split(separator: "\n").map(String.init)
        try #require(lines.count == 2)
        #expect(lines[0].hasPrefix("vault: \(damaged): failed authentication"))
        #expect(lines[1].hasPrefix("vault: \(command): "))
    }

    /// Runs `body` with `vaultWithOneDamagedItem()`, removed when `body` ends.
    func withVaultWithOneDamagedItem<R>(_ body: (Scratch, String) throws -> R) throws -> R {
        let (scratch, damaged) = try vaultWithOneDamagedItem()
        defer { scratch.remove() }
        return try body(scratch, damaged)
    }

    func vaultWithOneDamagedItem() throws -> (scratch: Scratch, damaged: String) {
        let scratch = try Scratch.initialized()
        for service in ["one", "two", "three"] {
            try scratch.run(["put", service, "acct"], input: Data("secret-\(service)"))
        }
        let group = scratch.vault + "/groups/vault"
        let files = try FileManager.default.contentsOfDirectory(atPath: group).filter { $0.hasSuffix(".item") }.sorted()
        try #require(files.count == 3)
        let damaged = group + "/" + files[0]
        var bytes = try Data(contentsOf: URL(fileURLWithPath: damaged))
        bytes[bytes.count - 3] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: damaged))
        return (scratch, damaged)
    }

    /// The services whose secret can still be read.
    func readableServices(_ scratch: Scratch) throws -> [String] {
        try ["one", "two", "three"].filter { try scratch.run(["get", $0, "acct"]).status == 0 }.sorted()
    }

    @Test func listShowsTheReadableItemsAndNamesTheDamagedFile() throws {
        try withVaultWithOneDamagedItem { scratch, damaged in
            let sound = try readableServices(scratch)
            try #require(sound.count == 2)

            let ls = try scratch.run(["ls"])
            #expect(ls.status == 6)
            let rows = ls.text.split(separator: "\n").map {
                $0.split(separator: "\t", omittingEmptySubsequences: false)
            }
            #expect(rows.map { String($0[1]) }.sorted() == sound)
            try expectDamageNamed(ls.errors, damaged, then: "ls")

            // The JSON stays valid and holds the readable items; the damage is on stderr and in the status.
            let json = try scratch.run(["ls", "--json"])
            #expect(json.status == 6)
            let items = try #require(try json.json() as? [[String: Any]])
            #expect(items.compactMap { $0["service"] as? String }.sorted() == sound)
            #expect(json.errors.hasPrefix("vault: \(damaged): failed authentication"))

            // A damaged file may be the item asked for: a filtered listing says so too.
            let filtered = try scratch.run(["ls", "--service", sound[0]])
            #expect(filtered.status == 6)
            #expect(filtered.text.hasPrefix("generic\t\(sound[0])\tacct\t"))
            #expect(filtered.errors.hasPrefix("vault: \(damaged): "))
        }
    }

    @Test func groupsCountsEveryFileAndNamesTheDamagedOne() throws {
        try withVaultWithOneDamagedItem { scratch, damaged in
            let groups = try scratch.run(["groups"])
            #expect(groups.status == 6)
            #expect(groups.text == "vault\tprivate\t-\t3\tyes\tdefault\n")
            try expectDamageNamed(groups.errors, damaged, then: "group ls")
            let json = try scratch.run(["groups", "--json"])
            #expect(json.status == 6)
            let rows = try #require(try json.json() as? [[String: Any]])
            #expect(rows.map { $0["items"] as? Int } == [3])
            #expect(json.errors.hasPrefix("vault: \(damaged): "))
            // `vault group ls` is the same command: the same output, report and status.
            for (alias, command) in [
                (["groups"], ["group", "ls"]), (["groups", "--json"], ["group", "ls", "--json"]),
            ] {
                let one = try scratch.run(alias)
                let other = try scratch.run(command)
                #expect(one.status == other.status && one.output == other.output && one.errors == other.errors)
            }
        }
    }

    @Test func checkNamesTheSameDamagedFile() throws {
        try withVaultWithOneDamagedItem { scratch, damaged in
            let check = try scratch.run(["check"])
            #expect(check.status == 6)
            #expect(check.output.isEmpty)
            #expect(check.errors.hasPrefix("vault: \(damaged): failed authentication"))
            let summary = try #require(check.errors.split(separator: "\n").last)
            #expect(summary.hasPrefix("vault: check: 1 of 3 item files failed verification; "), "\(summary)")
            #expect(summary.contains("vault check --remove-damaged"), "\(summary)")
        }
    }

    @Test func aSoundVaultListsWithoutComplaint() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "one"], input: Data("1"))
            for command in [["ls"], ["ls", "--json"], ["groups"], ["group", "ls"], ["check"]] {
                let result = try scratch.run(command)
                #expect(result.status == 0, "\(command)")
                #expect(result.errors.isEmpty, "\(command)")
            }
        }
    }

    // MARK: Control characters in names

    static let service = "svc\u{1B}[31mred"
    static let account = "acc\u{9B}2J"
    static let label = "lab\u{202E}el\u{07}"

    /// Whether `bytes` hold ESC, a C1 CSI (UTF-8 C2 9B) or U+202E (UTF-8 E2 80 AE).
    func holdsRawControls(_ bytes: Data) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.unicodeScalars.contains { [0x07, 0x1B, 0x9B, 0x202E].contains($0.value) }
    }

    @Test func namesWithControlCharactersAreEscapedInListsAndExactInJSON() throws {
        try withScratch(initialized: true) { scratch in
            let put = try scratch.run(["put", Self.service, Self.account, "--label", Self.label], input: Data("s"))
            #expect(put.status == 0)

            let ls = try scratch.run(["ls"])
            #expect(ls.status == 0)
            #expect(!holdsRawControls(ls.output))
            #expect(ls.text.hasPrefix("generic\tsvc\\x1b[31mred\tacc\\u{9b}2J\tvault\tlab\\u{202e}el\\x07\t"))

            let json = try scratch.run(["ls", "--json"])
            let items = try #require(try json.json() as? [[String: Any]])
            #expect(items.first?["service"] as? String == Self.service)
            #expect(items.first?["account"] as? String == Self.account)
            #expect(items.first?["label"] as? String == Self.label)
            let get = try #require(
                try scratch.run(["get", "--json", Self.service, Self.account]).json() as? [String: Any])
            #expect(get["service"] as? String == Self.service)
        }
    }

    @Test func namesWithControlCharactersAreEscapedInErrors() throws {
        try withScratch(initialized: true) { scratch in
            let missing = try scratch.run(["get", "x\u{1B}]0;title\u{07}", Self.account])
            #expect(missing.status == 1)
            #expect(!holdsRawControls(Data(missing.errors.utf8)))
            #expect(
                missing.errors
                    == "vault: service \"x\\x1b]0;title\\x07\", account \"acc\\u{9b}2J\": not found (searched group vault)\n"
            )

            let usage = try scratch.run(["frob\u{202E}"])
            #expect(usage.status == 2)
            #expect(usage.errors == "vault: unknown command 'frob\\u{202e}' (see 'vault --help')\n")

            let export = try scratch.run(
                ["--passphrase-fd", "0", "export", scratch.root + "/back\u{1B}up"], input: Data())
            #expect(export.status != 0)
            #expect(!holdsRawControls(Data(export.errors.utf8)))
        }
    }

    @Test func namesWithControlCharactersAreEscapedInTablesAndPromptsOnATerminal() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", Self.service, Self.account, "--label", Self.label], input: Data("s"))
            let session = try TerminalSession()
            defer { session.close() }
            let ls = try session.start(["ls"], scratch: scratch, outputToTerminal: true)
            #expect(exits(ls, with: 0))
            #expect(session.waitFor("MODIFIED\r\n"))
            #expect(session.waitFor("generic  svc\\x1b[31mred  acc\\u{9b}2J  vault  lab\\u{202e}el\\x07  "))

            let put = try session.start(["put", "new\u{1B}[2J"], scratch: scratch)
            #expect(session.waitFor("Secret for service \"new\\x1b[2J\", account \"\": "))
            #expect(try session.typeTwice("pw"))
            #expect(exits(put, with: 0))
            #expect(!holdsRawControls(Data(session.text.utf8)))
        }
    }
}
