import Vault
import VaultSystem

/// The credential helpers that the `vault` binary is when it runs under their names (installed as
/// links to it): one static executable, one start-up cost.
enum CredentialHelpers {
    /// A helper and the program name it answers to.
    enum Helper {
        /// `git-credential-vault`.
        case git
        /// `docker-credential-vault`.
        case docker
    }

    /// The helper called `program`, if any.
    static func named(_ program: String) -> Helper? {
        switch program {
        case GitCredentialHelper.programName: return .git
        case DockerCredentialHelper.programName: return .docker
        default: return nil
        }
    }

    /// Runs `helper` with `arguments` (without the program name), as the CLI's default client and vault
    /// (`VAULT_DIR`, `VAULT_APP_ID`, … as for `vault` itself); returns the exit status.
    static func run(
        _ helper: Helper, _ arguments: [String], environment: [String: String], input: FileDescriptor,
        output: FileDescriptor, errors: FileDescriptor, fleet: FleetClient? = nil
    ) -> Int32 {
        var context = Context(
            global: GlobalOptions(), environment: environment, input: input, output: output, errors: errors,
            fleet: fleet)
        do {
            // Root storing into another user's vault acts as its owner, as the CLI does.
            if ProcessIdentity.effectiveUserID == 0,
                let owner = try VaultOwner.actAsOwner(
                    ofVaultAt: try context.vaultPath(), creatingKey: false, in: context)
            {
                var global = GlobalOptions()
                global.vaultPath = owner.vaultPath
                context = Context(
                    global: global, environment: environment, input: input, output: output, errors: errors,
                    preloadedKey: owner.key, fleet: fleet)
            }
            switch helper {
            case .git: try GitCredentialHelper.run(arguments, in: context)
            case .docker: try DockerCredentialHelper.run(arguments, in: context)
            }
            return ExitCode.success.rawValue
        } catch {
            if !error.reported { context.writeError(error) }
            return error.code == .success ? 1 : error.code.rawValue
        }
    }
}
