import Foundation
import Testing

/// The summaries of `vault export` and `vault import` count in words: "1 item", "2 items".
@Suite struct BackupSummaryTests {
    func export(_ scratch: Scratch, to backup: String) throws -> RunResult {
        try scratch.run(["export", "--kdf-cost", "minimum", "--passphrase-fd", "0", backup], input: Data("pw\n"))
    }

    func importBackup(_ scratch: Scratch, _ vault: String, _ backup: String) throws -> RunResult {
        try scratch.run(
            ["--vault", vault, "import", "--passphrase-fd", "0", backup], input: Data("pw\n"), vaultOption: false)
    }

    @Test func oneItemIsSingular() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "svc"], input: Data("s"))
            try scratch.run(["uuid"])  // a …ThisDeviceOnly item, left out
            let backup = scratch.root + "/one"
            let exported = try export(scratch, to: backup)
            #expect(
                exported.errors
                    == "vault: exported 1 item to \(backup); left out 1 device identifier of `vault uuid` (it names this "
                    + "device and never leaves it)\n")
            let other = scratch.root + "/other"
            try scratch.run(["--vault", other, "init"], vaultOption: false)
            #expect(
                try importBackup(scratch, other, backup).errors
                    == "vault: made group vault, private\nvault: imported 1 item from \(backup)\n")
            let again = try importBackup(scratch, other, backup)
            #expect(again.status == 3)
            #expect(
                again.errors.hasPrefix(
                    "vault: imported 0 items from \(backup); 1 already existed and was left alone (use --replace):\n"))
            #expect(again.errors.hasSuffix("vault: \(backup): 1 item not imported\n"))
        }
    }

    @Test func otherCountsArePlural() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "a"], input: Data("s"))
            try scratch.run(["put", "b"], input: Data("s"))
            try scratch.run(["uuid"])
            try scratch.run(["uuid", "worker"])
            let backup = scratch.root + "/two"
            #expect(
                try export(scratch, to: backup).errors
                    == "vault: exported 2 items to \(backup); left out 2 device identifiers of `vault uuid` (they name "
                    + "this device and never leave it)\n")
            let other = scratch.root + "/other"
            try scratch.run(["--vault", other, "init"], vaultOption: false)
            #expect(
                try importBackup(scratch, other, backup).errors
                    == "vault: made group vault, private\nvault: imported 2 items from \(backup)\n")
            let again = try importBackup(scratch, other, backup)
            #expect(again.errors.contains("; 2 already existed and were left alone (use --replace):\n"))
            #expect(again.errors.hasSuffix("vault: \(backup): 2 items not imported\n"))
        }
    }
}
