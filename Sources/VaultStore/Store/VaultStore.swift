import Synchronization
import VaultCrypto
import VaultSystem

/// An open vault directory: the master key, the vault id, and encrypted item files grouped by access
/// group. It stores the plaintexts of the layer above under item ids and owns each item's life on
/// disk: reads verify an item against its generation record and hide the old half of an unfinished
/// move; every mutation runs inside `withWriteLock`, through a `WriteTransaction`.
///
/// Layout (docs/FORMAT.md): `VAULT` (marker), `master.key`, `.lock`, `groups/<group>/<item-id>.item`.
/// Where each part of the protocol is implemented: docs/FORMAT.md, "Where the code is".
public final class VaultStore: Sendable {
    /// The vault directory as given.
    public var path: String { location.string }
    /// The vault's 16-byte id from its marker.
    public let vaultID: [UInt8]

    /// The vault directory as given, for the paths in messages.
    let location: FilePath
    /// `<location>/groups/`, the start of every item's path (built once: a get builds one path).
    let groupsPathPrefix: String
    /// The uid that owns the vault directory: the vault's owner, whose files alone `group.key` and
    /// `.lock` may be.
    let ownerID: UInt32
    let directory: FileDescriptor
    let groupsDirectory: FileDescriptor
    /// The open `.lock` and the process that opened it. A forked child inherits the descriptor, and
    /// with it the parent's open file description and OFD lock: both would "hold" the lock at once
    /// and write through the same spare. So a child opens `.lock` anew before its first write
    /// (`WriteLock`).
    let lock: Mutex<(file: FileDescriptor?, processID: Int32)>
    /// The owner's class keys; nil for a member of a shared group, who opens the vault
    /// without `master.key` and reaches only the groups whose keys the kernel lets it read.
    let classKeys: ClassKeys?
    /// The owner's item class keys (`ItemClassKeyFile`): what private groups' item keys are
    /// made from, so that a rekey leaves items as they are; the class keys themselves in a vault
    /// without `classes.key`. Nil for a member.
    let itemClassKeys: ClassKeys?
    /// How to read an item's version from its plaintext, for the recovery of interrupted moves.
    let versions: ItemVersionReader?
    /// The replication of the vault's fleet groups, given by the layer that opened it (nil: none, and a
    /// fleet group is refused).
    package let replication: (any Replication)?
    /// The master key, when this process has it (a key file, or the passphrase); not when the vault
    /// was opened with only the `always` key and cached class keys.
    var masterKey: SymmetricKey? { classKeys?.master }
    /// Whether this process opened the vault as a member of shared groups, not as its owner.
    public var isMember: Bool { classKeys == nil }

    /// What the store learns while it is open.
    struct State {
        /// The open group directories (`GroupDirectories`).
        var groupDirectories: [GroupName: FileDescriptor] = [:]
        /// The derived keys of each group seen.
        var groupKeys: [GroupName: GroupKeys] = [:]
        /// Which file each group's `group.key` was when its keys were read (inode and change
        /// time); a writer that finds another one under the lock reads the keys again (a rotation
        /// replaced the file).
        var groupKeyInodes: [GroupName: GroupKeyFileIdentity] = [:]
        /// Each group's open `.lock` and the process that opened it (see `lock`).
        var groupLocks: [GroupName: (file: FileDescriptor, processID: Int32)] = [:]
        /// Descriptors of removed groups, closed only with the store: a prepared write of another thread
        /// (`PreparedItemWrite`) may still hold one, and a closed number can be reused by any open.
        var retiredDescriptors: [FileDescriptor] = []
        /// Group commit (`GroupCommit`): the slots this process holds in each group (threads
        /// sharing one `.lock` descriptor do not exclude each other by its locks).
        var claimedSlots: [GroupName: Set<Int>] = [:]
        /// The ticket of this store's last write to each group (prepared or under the lock), and how
        /// many more of its writes there it prepares since it last saw another writer's (`othersWriteToo`).
        var lastTicket: [GroupName: CommitTicket] = [:]
        var preparedWritesLeft: [GroupName: Int] = [:]
        /// Each group's in-process half of the flush lock.
        var flushLeaders: [GroupName: GroupCommit.FlushLeader] = [:]
        /// The groups whose interrupted moves were finished since the store was opened.
        var movesRecoveredGroups: Set<GroupName> = []
        /// The groups whose stale temp files were removed (`Housekeeping`).
        var cleanedGroups: Set<GroupName> = []
        var cleanedVaultDirectory = false
        /// Whether the moves that a dead writer left were finished since the store was opened (`Moves`).
        var movesRecovered = false
        var bulkLoading = false
        /// In the current transaction, a write through a spare failed or the spares could not be
        /// removed: a spare may be an item's file on disk. No spare is used until the next writer has
        /// removed them all (the transaction leaves `WriterMark.sparesUntrusted`).
        var spareUntrusted = false
        /// This process holds the vault's `.lock` (a whole-vault transaction), so that making a
        /// group inside it does not take (and then release) the lock again.
        var holdsVaultLock = false
        /// Replicated groups: each group's replica (nil inside: not replicated).
        var replicas: [GroupName: (any GroupReplica)?] = [:]
        /// The thread that holds `writerMutex` (a transaction of this store), the groups it locked (nil:
        /// all), and the replicated groups it brought up to date (each once, on first touch).
        var writerThread: UInt?
        var transactionGroups: Set<GroupName>?
        var refreshedInTransaction: Set<GroupName> = []
        /// The threads whose transaction's replica write met a conflict: `withWriteLock` runs it again
        /// (by thread: another thread's transaction may start before this one's caller looks).
        var conflictedThreads: Set<UInt> = []
    }
    let state: Mutex<State>
    /// Serialises this process's writers; the OFD lock on `.lock` serialises processes.
    let writerMutex = Mutex(())

    static let lockFileName = ".lock"
    static let groupsDirectoryName = "groups"

    init(
        location: FilePath, vaultID: [UInt8], directory: FileDescriptor, groupsDirectory: FileDescriptor,
        lockFile: FileDescriptor?, classKeys: ClassKeys?, itemClassKeys: ClassKeys? = nil,
        versions: ItemVersionReader?, replication: (any Replication)?
    ) {
        self.state = Mutex(State())
        self.location = location
        self.groupsPathPrefix = location.string + "/" + Self.groupsDirectoryName + "/"
        self.ownerID = (try? directory.status().ownerID) ?? ProcessIdentity.effectiveUserID
        self.vaultID = vaultID
        self.directory = directory
        self.groupsDirectory = groupsDirectory
        self.lock = Mutex((lockFile, ProcessIdentity.processID))
        self.classKeys = classKeys
        self.itemClassKeys = itemClassKeys ?? classKeys
        self.versions = versions
        self.replication = replication
    }

    deinit {
        let fds = state.withLock {
            Array($0.groupDirectories.values) + $0.groupLocks.values.map(\.file) + $0.retiredDescriptors
        }
        for fd in fds { try? fd.close() }
        try? lock.withLock { $0.file }?.close()
        try? groupsDirectory.close()
        try? directory.close()
    }

    // MARK: Paths, for messages

    var groupsPath: FilePath { location / Self.groupsDirectoryName }

    func groupPath(_ group: GroupName) -> FilePath { groupsPath / group.rawValue }

    /// Built in one buffer: every read builds it (for its messages and its decoder), and the joins of
    /// `/` allocated a string each.
    func itemPath(_ item: ItemLocation) -> FilePath {
        var path = groupsPathPrefix
        path.reserveCapacity(path.utf8.count + item.group.rawValue.utf8.count + 2 + 70)
        path += item.group.rawValue
        path += "/"
        path += item.id.fileName
        return FilePath(path)
    }

    /// The path of the directory of `group`, as messages name it.
    public func path(of group: GroupName) -> String { groupPath(group).string }

    /// The path of the file of `item`, as messages name it.
    public func path(of item: ItemLocation) -> String { itemPath(item).string }
}
