/// Every command, with its own options and operands.
package enum Command: Sendable, Hashable {
    /// `vault --help`, `vault help [COMMAND]` or `vault COMMAND --help`.
    case help(topic: String?)
    /// `vault help --man DIR`.
    case manualPages(directory: String)
    /// `vault --version`.
    case version
    /// `vault init`.
    case initialize(InitCommand)
    /// `vault put` and `vault add`.
    case put(PutCommand)
    /// `vault get`.
    case get(GetCommand)
    /// `vault rm`.
    case remove(RemoveCommand)
    /// `vault ls`.
    case list(ListCommand)
    /// `vault uuid`.
    case uuid(UUIDCommand)
    case upgrade(UpgradeCommand)
    /// `vault group create`.
    case groupCreate(GroupCreateCommand)
    /// `vault group ls`, and `vault groups`, its alias.
    case groupList(GroupListCommand)
    /// `vault group rm`.
    case groupRemove(GroupRemoveCommand)
    case groupRotate(GroupRotateCommand)
    /// `vault group remove-member`.
    case groupRemoveMember(GroupRemoveMemberCommand)
    /// `vault group export-key NAME FILE`.
    case groupExportKey(GroupExportKeyCommand)
    /// `vault group join NAME --etcd … --group-key FILE`.
    case groupJoin(GroupJoinCommand)
    /// `vault group resync NAME [--accept-rollback]`.
    case groupResync(GroupResyncCommand)
    case groupRevoke(GroupRevokeCommand)
    case groupMachines(GroupMachinesCommand)
    /// `vault check`.
    case check(CheckCommand)
    /// `vault completion bash`.
    case completion(CompletionCommand)
    /// `vault passwd`.
    case passwd(PasswdCommand)
    /// `vault unlock`.
    case unlock(UnlockCommand)
    /// `vault lock`.
    case lock(LockCommand)
    /// `vault export`.
    case export(ExportCommand)
    /// `vault import`.
    case importBackup(ImportCommand)
    /// `vault rekey`.
    case rekey(RekeyCommand)
    /// `vault run`.
    case run(RunCommand)
    /// `vault inject`.
    case inject(InjectCommand)
    /// `vault history`.
    case history(HistoryCommand)
    /// `vault restore`.
    case restore(RestoreCommand)
    /// `vault config`.
    case config(ConfigCommand)
}
