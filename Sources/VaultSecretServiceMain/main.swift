import Vault
import VaultSecretService
import VaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// `vault-secret-service [--vault PATH] [--group NAME] [--idle-exit SECONDS]`: serves the freedesktop
/// Secret Service over the vault on the session bus (docs/SECRET-SERVICE.md).
let usage = """
    usage: vault-secret-service [--vault PATH] [--group NAME] [--idle-exit SECONDS]
      --vault PATH         the vault (default: $VAULT_DIR, else ~/.local/share/vault)
      --group NAME         the access group of the default collection (default: secret-service)
      --idle-exit SECONDS  exit after this long without a client (default: 60; 0: never)

    """

func fail(_ message: String) -> Never {
    try? FileDescriptor.standardError.writeAll(Array("vault-secret-service: \(message)\n\(usage)".utf8))
    exit(2)
}

var vaultPath: String?
var groupName = "secret-service"
var idleExit: Int? = 60
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--vault":
        guard let value = arguments.popFirst() else { fail("--vault needs a path") }
        vaultPath = value
    case "--group":
        guard let value = arguments.popFirst() else { fail("--group needs a name") }
        groupName = value
    case "--idle-exit":
        guard let value = arguments.popFirst(), let seconds = Int(value), seconds >= 0 else {
            fail("--idle-exit needs a number of seconds")
        }
        idleExit = seconds == 0 ? nil : seconds
    case "-h", "--help":
        print(usage, terminator: "")
        exit(0)
    default:
        fail("unknown argument \(argument)")
    }
}
let group: AccessGroup
do {
    group = try AccessGroup(groupName)
} catch {
    fail("--group \(groupName): \(error.message)")
}
exit(SecretService.run(SecretService.Options(vaultPath: vaultPath, defaultGroup: group, idleExit: idleExit)))
