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
@usableFromInline package final class VaultStore: Sendable {
    /// The vault directory as given.
    package var path: String { location.string }
    /// The vault's 16-byte id from its marker.
    package let vaultID: [UInt8]

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
    /// The marker's setting of how many versions of each item to keep (`VaultMarker.versionsKept`), as
    /// read at open or set through this store since.
    let versionsKeptSetting: Atomic<UInt8>
    /// How many versions of each item a write keeps before the current one (of a deleted item, before
    /// its tombstone); 0 keeps none.
    package var versionsKept: Int { VaultMarker.versionsKept(versionsKeptSetting.load(ordering: .relaxed)) }
    /// The replication of the vault's fleet groups, given by the layer that opened it (nil: none, and a
    /// fleet group is refused).
    package let replication: (any Replication)?
    /// The master key, when this process has it (a key file, or the passphrase); not when the vault
    /// was opened with only the `always` key and cached class keys.
    var masterKey: SymmetricKey? { classKeys?.master }
    /// Whether this process opened the vault as a member of shared groups, not as its owner.
    package var isMember: Bool { classKeys == nil }

    /// What the store learns while it is open, each part under a lock of its own, defined where it is
    /// used: the open group directories, the groups' keys, the `.lock` descriptors and group commit's
    /// state, the cleanups done, the running transaction, and the replicas.
    let directories = Mutex(OpenGroupDirectories())
    let keyCache = Mutex(GroupKeyCache())
    let groupCommit = Mutex(GroupCommitState())
    let housekeeping = Mutex(HousekeepingState())
    let transactionState = Mutex(TransactionState())
    let replicas = Mutex(ReplicaTable())
    /// Serialises this process's writers; the OFD lock on `.lock` serialises processes.
    let writerMutex = Mutex(())

    static let lockFileName = ".lock"
    static let groupsDirectoryName = "groups"

    init(
        location: FilePath, vaultID: [UInt8], directory: FileDescriptor, groupsDirectory: FileDescriptor,
        lockFile: FileDescriptor?, classKeys: ClassKeys?, itemClassKeys: ClassKeys? = nil,
        versions: ItemVersionReader?, replication: (any Replication)?, versionsKeptSetting: UInt8 = 0
    ) {
        self.versionsKeptSetting = Atomic(versionsKeptSetting)
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
        let fds =
            directories.withLock { Array($0.groupDirectories.values) + $0.retiredDescriptors }
            + groupCommit.withLock { $0.groupLocks.values.map(\.file) }
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
    package func path(of group: GroupName) -> String { groupPath(group).string }

    /// The path of the file of `item`, as messages name it.
    @usableFromInline package func path(of item: ItemLocation) -> String { itemPath(item).string }

    /// The path of `group`'s key file, as messages name it.
    package func keyPath(of group: GroupName) -> String { (groupPath(group) / GroupKeyFile.fileName).string }
}
