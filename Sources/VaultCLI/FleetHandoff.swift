import Vault
import VaultSystem

/// Fleet groups from the static CLI: `vault` has no etcd client (libcurl has no complete static build,
/// and a static executable cannot load one), so a command that needs one is run, with the same
/// arguments and environment, by `vault-fleet`: the same tool, dynamically linked with `VaultFleet`.
/// It is `$VAULT_FLEET_HELPER`, else `vault-fleet` beside this executable.
enum FleetHandoff {
    /// Replaces this process with `vault-fleet` when `command` needs fleet support this process lacks;
    /// returns an exit status only when that cannot be done (nil: go on here).
    static func handOff(_ command: Command, _ arguments: [String], in context: Context) -> Int32? {
        guard context.fleet == nil, needsFleet(command, in: context) else { return nil }
        let helper: String
        if let given = context.environment["VAULT_FLEET_HELPER"], !given.isEmpty {
            helper = given
        } else if let executable = try? FileDescriptor.resolvedPath("/proc/self/exe") {
            helper = FilePath(executable).parent.string + "/vault-fleet"
        } else {
            helper = "vault-fleet"
        }
        let failure = ChildProcess.replaceProcess(with: helper, arguments: arguments)
        context.writeError(
            "vault: this command uses a fleet group (its items are in etcd), which needs \(helper): \(failure) "
                + "(install vault-fleet beside vault, or set VAULT_FLEET_HELPER)\n")
        return ExitCode.notAvailable.rawValue
    }

    /// Whether `command` uses etcd: the fleet subcommands, and item commands whose group is a fleet
    /// group (its `group.key` says so: one small read per group they may touch).
    static func needsFleet(_ command: Command, in context: Context) -> Bool {
        switch command {
        case .groupCreate(let create): return create.fleet != nil
        case .groupJoin, .groupExportKey, .groupResync, .groupRevoke, .groupMachines: return true
        case .groupRotate(let rotate):
            guard let path = try? context.vaultPath() else { return false }
            return Vault.isFleetGroup(vaultPath: path, group: rotate.group)
        case .groupRemoveMember(let removal):
            // Its last step rotates the group's key: a fleet group's on every machine.
            guard let path = try? context.vaultPath() else { return false }
            return Vault.isFleetGroup(vaultPath: path, group: removal.group)
        case .groupRemove(let remove):
            guard let path = try? context.vaultPath() else { return false }
            return Vault.isFleetGroup(vaultPath: path, group: remove.group)
        case .put, .get, .remove, .list, .run, .inject, .history, .restore:
            guard let path = try? context.vaultPath() else { return false }
            var groups: [AccessGroup]
            if let named = context.global.group.flatMap({ try? AccessGroup($0) }) {
                groups = [named]
            } else {
                groups = (try? context.client())?.accessGroups ?? []
            }
            // Secrets may name their groups (`@GROUP/SERVICE`): `vault run`'s options, a template's
            // placeholders (read here once more; a template on standard input is read by the command only).
            if case .run(let run) = command {
                groups += (run.files + run.variables).compactMap(\.reference.group)
            }
            if case .inject(let inject) = command { groups += InjectCommand.namedGroups(inTemplate: inject.template) }
            return groups.contains { Vault.isFleetGroup(vaultPath: path, group: $0) }
        default:
            return false
        }
    }
}
