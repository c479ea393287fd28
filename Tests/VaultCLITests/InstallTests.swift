import Foundation
import Testing

/// What an installed vault ships besides the binary: manual pages from the command table, a version
/// that says which tool this is, the helpers named in the help.
@Suite struct InstallTests {
    @Test func manualPagesComeFromTheCommandTableAndFormatCleanly() throws {
        try withScratch { scratch in
            let directory = scratch.root + "/man1"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let run = try scratch.run(["help", "--man", directory], vaultOption: false)
            #expect(run.status == 0, "\(run.errors)")
            let pages = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
            let help = try scratch.run(["--help"], vaultOption: false).text
            let commands = help.split(separator: "\n").drop { !$0.hasPrefix("commands:") }.dropFirst()
                .prefix { $0.hasPrefix("  ") }.map { String($0.split(separator: " ")[0]) }
            #expect(!commands.isEmpty)
            #expect(pages == Set(["vault.1"] + commands.map { "vault-\($0).1" }), "\(pages)")
            let get = try String(contentsOfFile: directory + "/vault-get.1", encoding: .utf8)
            #expect(get.contains(".SH OPTIONS") && get.contains("\\-\\-server"))
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else {
                print("SKIP the man --warnings check: no man here")
                return
            }
            for page in pages.sorted() {
                let checked = try runVault(
                    ["--warnings", "-E", "UTF-8", "-l", directory + "/" + page], input: Data(),
                    environment: ["PATH": "/usr/bin:/bin", "MANWIDTH": "80"], scratch: scratch.root,
                    executable: URL(fileURLWithPath: "/usr/bin/man"))
                #expect(checked.status == 0 && checked.errors.isEmpty, "\(page): \(checked.errors)")
                #expect(checked.text.contains("NAME"), "\(page)")
            }
        }
    }

    /// HashiCorp's Vault CLI is called `vault` too, and is common on the same servers.
    @Test func theVersionSaysWhichToolThisIs() throws {
        try withScratch { scratch in
            let version = try scratch.run(["--version"], vaultOption: false)
            #expect(version.text.contains("the keychain for Linux") && version.text.contains("not HashiCorp Vault"))
            let help = try scratch.run(["--help"], vaultOption: false)
            #expect(help.text.contains("git-credential-vault") && help.text.contains("docker-credential-vault"))
        }
    }
}
