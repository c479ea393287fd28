import FoundationEssentials
import VaultCrypto
import VaultStore

/// An open vault, seen as one client (an application identifier and its access groups): the
/// keychain's add, copy-matching, update and delete over an encrypted directory. Thread-safe; one
/// vault may be opened by many threads and many processes at once. Every mutation is atomic and
/// durable and runs under the vault's lock, so a check-then-act cannot lose another process's write.
public final class Vault: Sendable {
    /// The client this handle acts as.
    public let client: Client
    /// The vault directory.
    public var path: String { engine.store.path }

    /// The directory of `group` in the vault (which may not exist yet), for tools and messages.
    public func path(of group: AccessGroup) -> String { engine.store.path(of: group.name) }

    /// Whether this open found a vault of the old format 1 and upgraded it (`upgrade`) before anything
    /// else: a face may say so once.
    public let upgradedOnOpen: Bool

    let engine: ItemEngine

    init(
        store: VaultStore, client: Client, cacheBounds: ItemEngine.CacheBounds = ItemEngine.CacheBounds(),
        upgradedOnOpen: Bool = false
    ) {
        self.engine = ItemEngine(store: store, author: ItemEngine.Author(client), cacheBounds: cacheBounds)
        self.client = client
        self.upgradedOnOpen = upgradedOnOpen
    }

    /// This vault as a new handle with caches of `cacheBounds` (tests of the bounds).
    func withCacheBounds(_ cacheBounds: ItemEngine.CacheBounds) -> Vault {
        Vault(store: engine.store, client: client, cacheBounds: cacheBounds)
    }

    /// Opens the vault at `path` (default: `VaultLocation.defaultPath()`), creating it when it does
    /// not exist and `createIfMissing` is set. `keySource` says where the master key is (by default
    /// from the environment: `VAULT_KEY_FILE`, a systemd credential, else `master.key`); a vault whose
    /// key needs a passphrase that `keySource` does not give is `interactionNotAllowed` (locked), and a
    /// wrong passphrase is `authFailed`. A vault of the old format 1 is upgraded first (`upgrade`,
    /// crash-safe), which needs its master key; where it cannot run (a passphrase vault opened without
    /// its passphrase, a read-only file system) the open fails, naming the vault and `vault upgrade`.
    /// `fleet` reaches the vault's fleet groups (`FleetClient.etcd()` of `VaultFleet`); without it they
    /// are refused and no fleet code runs.
    public static func open(
        at path: String? = nil, client: Client, createIfMissing: Bool = false,
        keySource: KeySource = .fromEnvironment(), fleet: FleetClient? = nil
    ) throws(VaultError) -> Vault {
        guard let path = path ?? VaultLocation.defaultPath() else {
            throw VaultError(.noSuchVault, "no vault location: set VAULT_DIR or HOME, or pass a path")
        }
        do {
            return Vault(
                store: try openStore(at: path, createIfMissing: createIfMissing, keySource: keySource, fleet: fleet),
                client: client)
        } catch  where (error.cause as? StoreError)?.code == .needsUpgrade {
            // The upgrade and the open after it unwrap the same master.key: one passphrase for both.
            let keySource = keySource.askingForThePassphraseOnce()
            let upgraded: Bool
            do {
                upgraded = try upgrade(at: path, keySource: keySource)
            } catch {
                throw upgradeRefusal(error, path: path)
            }
            // Not upgraded here: another process did it first.
            return Vault(
                store: try openStore(at: path, createIfMissing: false, keySource: keySource, fleet: fleet),
                client: client,
                upgradedOnOpen: upgraded)
        }
    }

    /// Why an open could not upgrade the format-1 vault at `path`, and what to do.
    private static func upgradeRefusal(_ error: VaultError, path: String) -> VaultError {
        guard VaultStore.isFormatOne(vaultPath: path) else {
            return VaultError(
                error.status,
                "the upgrade of the vault at \(path) from the old format 1 passed its commit point and then stopped: "
                    + "\(error.message); the next open finishes it", cause: error)
        }
        let advice =
            switch error.status {
            case .interactionNotAllowed:
                "give its passphrase (at a terminal, or with --passphrase-fd), or run `vault upgrade` with it"
            case .decode: "then run `vault upgrade` (or any command) again"
            default: "run `vault upgrade` as the vault's owner, with its key, where the vault is writable"
            }
        return VaultError(
            error.status,
            "the vault at \(path) is in the old format 1, which is upgraded at the first open that holds its master "
                + "key, and the upgrade could not run: \(error.message); \(advice). Nothing was upgraded",
            cause: error)
    }

    /// The store of the vault at `path` (created when missing and `createIfMissing`).
    private static func openStore(at path: String, createIfMissing: Bool, keySource: KeySource, fleet: FleetClient?)
        throws(VaultError) -> VaultStore
    {
        let replication = fleet?.makeEngine()
        return try translatingStoreErrors { () throws(StoreError) in
            createIfMissing
                ? try VaultStore.openOrCreate(
                    at: path, keySource: keySource, versions: ItemRecordCodec.version, replication: replication)
                : try VaultStore.open(
                    at: path, keySource: keySource, versions: ItemRecordCodec.version, replication: replication)
        }
    }

    /// Whether `environment` puts the master key in an external file (`VAULT_KEY_FILE`, a systemd
    /// credential): then a vault was set up on purpose, and none is ever created implicitly.
    public static func usesExternalKey(_ environment: [String: String]) -> Bool {
        KeySource.fromEnvironment(environment).keyFile != nil
    }

    /// Creates a new vault at `path`; refuses (`duplicateVault`) when one exists. `keySource` chooses
    /// where its new master key goes (see `KeySource`). Each access group gets a key of its own, and a
    /// group can be shared with the members of a Unix group (`createGroup`). `fleet` as for `open`.
    public static func create(
        at path: String, client: Client, keySource: KeySource = .fromEnvironment(), fleet: FleetClient? = nil
    ) throws(VaultError) -> Vault {
        let replication = fleet?.makeEngine()
        return Vault(
            store: try translatingStoreErrors { () throws(StoreError) in
                try VaultStore.create(
                    at: path, keySource: keySource, versions: ItemRecordCodec.version, replication: replication)
            },
            client: client)
    }

    /// Re-wraps `master.key` under `newPassphrase` (nil stores the key plainly); items are untouched.
    /// Atomic: a crash leaves the old passphrase or the new one working.
    public func changePassphrase(
        to newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate,
        keySource: KeySource = .fromEnvironment()
    ) throws(VaultError) {
        try translatingStoreErrors { () throws(StoreError) in
            try engine.store.changePassphrase(to: newPassphrase, limits: limits, keySource: keySource)
        }
    }

    /// The path of the vault's `master.key`, as prompts and messages name it.
    public var masterKeyPath: String { engine.store.masterKeyPath }

    /// Whether the vault's `master.key` is wrapped under a passphrase.
    public var isPassphraseProtected: Bool { engine.store.isPassphraseProtected }

    /// Whether this handle opened the vault locked: a passphrase vault without its passphrase or
    /// `vault unlock`'s cache, whose items other than `.always` ones are `interactionNotAllowed`. A
    /// handle opened after `vault unlock` is not.
    public var isLocked: Bool { engine.store.isLocked }

    /// The same vault seen as another client.
    public func asClient(_ other: Client) -> Vault {
        Vault(store: engine.store, client: other)
    }

    /// Runs `body` under the vault's write lock (the store first cleans up after a writer that died).
    func withWriteLock<R>(_ body: (WriteTransaction) throws(VaultError) -> R) throws(VaultError) -> R {
        try engine.store.withWriteLock(body)
    }

    /// Runs `body` under the write locks of `groups` (which it may change) and `creating` (which it
    /// may also make): those groups' locks only, so that writers of other groups,
    /// and members who cannot take a vault-wide lock, need not wait.
    func withWriteLock<R>(
        groups: [AccessGroup], creating: [AccessGroup] = [], _ body: (WriteTransaction) throws(VaultError) -> R
    ) throws(VaultError) -> R {
        try engine.store.withWriteLock(groups: groups.map(\.name), creating: creating.map(\.name), body)
    }

    // MARK: The four operations

    /// Adds an item (`SecItemAdd`). The group is `attributes.accessGroup` (which the client must be
    /// entitled to) or the client's default group. An item with the same primary key is a
    /// `duplicateItem` error and stays untouched.
    @discardableResult
    public func add(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data) throws(VaultError)
        -> MatchedItem
    {
        if let name = attributes.unsupportedAttribute(for: itemClass) {
            throw VaultError(.noSuchAttribute, "\(name) is not an attribute of class \(itemClass.rawValue)")
        }
        if let port = attributes.port, !(0...65535).contains(port) {
            throw VaultError(.param, "port \(port) is outside 0...65535")
        }
        let group = try client.targetGroup(for: attributes.accessGroup)
        let located = try withWriteLock(groups: [], creating: [group]) { tx throws(VaultError) in
            try engine.add(itemClass, attributes: attributes, data: data, group: group, in: tx)
        }
        return located.matched(returning: [.attributes, .persistentReference])
    }

    /// Finds items (`SecItemCopyMatching`): at most `query.limit` of them, with the secret when
    /// `returning` contains `.data`. No match is an `itemNotFound` error.
    public func copyMatching(_ query: Query, returning: ReturnOptions = [.attributes]) throws(VaultError)
        -> [MatchedItem]
    {
        let groups = try searchGroups(query)
        let found = try engine.find(query, in: groups, needsData: returning.contains(.data))
        guard !found.isEmpty else { throw notFound(query) }
        return Self.matched(found, limit: query.limit.maximum, returning: returning)
    }

    /// The first `limit` of `found` as results. Each item found is let go as its result is made:
    /// for a query of every item of a large vault, the items found and their results are the peak of
    /// its memory, and holding both whole doubled it.
    static func matched(_ found: consuming [LocatedItem], limit: Int, returning: ReturnOptions) -> [MatchedItem] {
        var remaining = found
        if remaining.count > limit { remaining.removeLast(remaining.count - limit) }
        remaining.reverse()
        var results: [MatchedItem] = []
        results.reserveCapacity(remaining.count)
        while let item = remaining.popLast() {
            results.append(item.matched(returning: returning))
        }
        return results
    }

    /// Finds items as `copyMatching` does, and also says which item files it could not read: a file
    /// that fails authentication or decoding, or cannot be read, is left out of `items` and reported
    /// in `problems` (`copyMatching` skips it silently, and throws it only when nothing matched). No
    /// match is an empty result, not an error. Files of a locked class are no problem: they make the
    /// search `interactionNotAllowed`, as in `copyMatching`. For listings that must be honest about
    /// what they could not show.
    public func search(_ query: Query, returning: ReturnOptions = [.attributes]) throws(VaultError) -> SearchResult {
        let groups = try searchGroups(query)
        let found = try engine.find(
            query, in: groups, underWriteLock: false, needsData: returning.contains(.data), settingDamageAside: true)
        let problems = found.damaged.map { file in
            guard let id = file.id else {
                return ItemProblem(
                    path: file.path, group: file.group.rawValue, status: file.error.status, message: file.error.message)
            }
            return ItemProblem(path: file.path, group: file.group, id: id, error: file.error)
        }
        return SearchResult(
            items: Self.matched(found.items, limit: query.limit.maximum, returning: returning),
            problems: problems.sorted { $0.path < $1.path })
    }

    /// Updates every item that `query` matches (`SecItemUpdate`; the limit is ignored): creation date
    /// and persistent reference are kept, the modification date and generation move on. A change that
    /// would give an item the primary key of another is `duplicateItem`, and nothing changes.
    @discardableResult
    public func update(_ query: Query, with changes: ItemChanges) throws(VaultError) -> Int {
        if let itemClass = query.itemClass, let name = changes.attributes.unsupportedAttribute(for: itemClass) {
            throw VaultError(.noSuchAttribute, "\(name) is not an attribute of class \(itemClass.rawValue)")
        }
        if changes.attributes.creationDate != nil || changes.attributes.modificationDate != nil {
            throw VaultError(.param, "the creation and modification dates are set by the vault and cannot be updated")
        }
        let groups = try searchGroups(query)
        // An update may move items into the group it names.
        let destination = try changes.attributes.accessGroup.map { (name) throws(VaultError) in
            try client.targetGroup(for: name)
        }
        return try withWriteLock(groups: groups, creating: destination.map { [$0] } ?? []) { tx throws(VaultError) in
            let found = try engine.find(query, in: groups, underWriteLock: true)
            guard !found.isEmpty else { throw notFound(query) }
            return try engine.update(found, with: changes, client: client, in: tx).count
        }
    }

    /// Deletes every item that `query` matches (`SecItemDelete`); none is `itemNotFound`.
    @discardableResult
    public func delete(_ query: Query) throws(VaultError) -> Int {
        let groups = try searchGroups(query)
        return try withWriteLock(groups: groups) { tx throws(VaultError) in
            let found = try engine.find(query, in: groups, underWriteLock: true)
            guard !found.isEmpty else { throw notFound(query) }
            try engine.delete(found, in: tx)
            return found.count
        }
    }

    func searchGroups(_ query: Query) throws(VaultError) -> [AccessGroup] {
        if let reference = query.persistentReference, query.attributes.accessGroup == nil {
            // A reference to a group the client cannot see finds nothing, as Apple's does.
            _ = try client.groups(for: nil)
            return client.accessGroups.contains(reference.group) ? [reference.group] : []
        }
        return try client.groups(for: query.attributes.accessGroup)
    }

    func notFound(_ query: Query) -> VaultError {
        let a = query.attributes
        var parts: [String] = []
        if let itemClass = query.itemClass {
            parts.append(itemClass == .genericPassword ? "generic password" : "internet password")
        }
        if let service = a.service { parts.append("service \"\(service)\"") }
        if let server = a.server { parts.append("server \"\(server)\"") }
        if let account = a.account { parts.append("account \"\(account)\"") }
        if query.persistentReference != nil { parts.append("with the given persistent reference") }
        let scope = a.accessGroup.map { "group \($0)" } ?? "the groups of client \(client)"
        let what = parts.isEmpty ? "item" : parts.joined(separator: ", ")
        return VaultError(.itemNotFound, "no \(what) in \(scope)")
    }
}

extension Vault {
    /// Runs `body` with per-write fsyncs skipped and one `syncfs` at the end (see
    /// `VaultStore.withBulkLoad`): for filling benchmark vaults quickly.
    package func withBulkLoad<R>(_ body: () throws(VaultError) -> R) throws(VaultError) -> R {
        try engine.store.withBulkLoad(body)
    }
}

extension Vault {
    /// Unwraps the master key of the passphrase-protected vault at `path` (with `keySource`'s
    /// passphrase) and caches its class keys in the kernel keyring, the `AfterFirstUnlock` key until
    /// reboot and the `WhenUnlocked` key for `timeoutSeconds` (0: until reboot or `lock`): other
    /// processes of this user then open the vault without the passphrase. A vault without a passphrase
    /// (a plain `master.key` or an external key file) has nothing to unlock: nothing is cached, and the
    /// result says so.
    @discardableResult
    public static func unlock(at path: String, keySource: KeySource, timeoutSeconds: UInt32) throws(VaultError)
        -> UnlockOutcome
    {
        try translatingStoreErrors { () throws(StoreError) in
            try VaultStore.unlock(at: path, keySource: keySource, timeoutSeconds: timeoutSeconds)
        }
    }

    /// Drops the cached `WhenUnlocked` key of the vault at `path` (the `AfterFirstUnlock` key stays
    /// until reboot, as on Apple devices; `lockEveryVault` drops it too); returns false when none was
    /// cached. Handles that are already open keep working until they are released.
    @discardableResult
    public static func lock(at path: String) throws(VaultError) -> Bool {
        try translatingStoreErrors { () throws(StoreError) in try VaultStore.lock(at: path) }
    }

    /// Drops every cached class key of every vault of this user from the kernel keyring, the
    /// `AfterFirstUnlock` keys too, including those of vaults that no longer exist; needs no vault.
    /// Afterwards only `Always` items open without a passphrase. Returns how many keys were dropped;
    /// handles that are already open keep working until they are released.
    @discardableResult
    public static func lockEveryVault() throws(VaultError) -> Int {
        try translatingStoreErrors { () throws(StoreError) in try VaultStore.lockEveryVault() }
    }
}
