import Foundation
import Synchronization
import VaultCrypto
import VaultEtcd
import VaultStore

/// Fleet groups through etcd: installs the replica maker that `VaultStore` asks for a fleet group.
public enum VaultFleet {
    /// Lets every vault this process opens use its fleet groups (`VaultStore.fleetReplicas`).
    public static func install() {
        VaultStore.fleetReplicas.withLock { make in
            make = { (identity) throws(StoreError) -> GroupReplica in try EtcdReplica(identity) }
        }
    }
}

/// A fleet group's items in etcd: `/vault/v2/<group id hex>/items/<item id>` holds each item's file,
/// byte for byte as on disk; `/vault/v2/<group id hex>/meta` the registration (name and the key's
/// check value, never the key). Every write is one transaction that compares the item's
/// `mod_revision` with what the last refresh saw (`create_revision` 0 for a new item).
final class EtcdReplica: GroupReplica {
    let identity: FleetGroupIdentity
    let client: EtcdClient
    let itemsPrefix: [UInt8]
    let metaKey: [UInt8]
    /// Each item's `mod_revision` as the last refresh (or this process's last write) saw it.
    private let seen = Mutex<[String: Int64]>([:])

    init(_ identity: FleetGroupIdentity) throws(StoreError) {
        self.identity = identity
        let root = "/vault/v2/" + identity.groupID.map { String(format: "%02x", $0) }.joined() + "/"
        itemsPrefix = Array((root + "items/").utf8)
        metaKey = Array((root + "meta").utf8)
        var configuration: EtcdClient.Configuration
        do {
            configuration = try EtcdClient.Configuration(endpoints: identity.settings.endpoints)
        } catch {
            throw StoreError(.invalidName, "fleet group \(identity.group): \(error.message)")
        }
        configuration.caFile = identity.settings.caFile
        configuration.certificateFile = identity.settings.certificateFile
        configuration.keyFile = identity.settings.keyFile
        configuration.user = identity.settings.user
        if let passwordFile = identity.settings.passwordFile {
            configuration.password = try Self.readPassword(passwordFile, group: identity.group)
        }
        client = EtcdClient(configuration)
    }

    /// The first line of `path`, in secure memory.
    static func readPassword(_ path: String, group: GroupName) throws(StoreError) -> SecureBytes {
        guard var bytes = FileManager.default.contents(atPath: path).map(Array.init) else {
            throw StoreError(
                .permissionDenied, "cannot read the etcd password file \(path) of fleet group \(group)", path: path)
        }
        defer { for index in bytes.indices { bytes[index] = 0 } }
        var line = Array(bytes.prefix { $0 != 10 })
        defer { for index in line.indices { line[index] = 0 } }
        do {
            return try SecureBytes(copying: line)
        } catch {
            throw StoreError(
                .cryptoUnavailable, "cannot hold the etcd password of fleet group \(group): \(error)", cause: error)
        }
    }

    private func storeError(_ error: EtcdError, _ what: String) -> StoreError {
        switch error.code {
        case .unavailable, .outcomeUnknown:
            return StoreError(
                .unavailable,
                "fleet group \(identity.group): \(what): \(error.message)"
                    + (error.code == .outcomeUnknown ? "" : "; nothing was changed"))
        case .authentication:
            return StoreError(.permissionDenied, "fleet group \(identity.group): \(what): \(error.message)")
        default:
            return StoreError(.io, "fleet group \(identity.group): \(what): \(error.message)")
        }
    }

    private func meta(check: [UInt8]) -> [UInt8] {
        Array(
            "vault fleet group v1\nname=\(identity.group)\ncheck=\(check.map { String(format: "%02x", $0) }.joined())\n"
                .utf8)
    }

    func register(check: [UInt8]) throws(StoreError) {
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: [.createRevision(key: metaKey, equals: 0)],
                success: [.put(key: metaKey, value: meta(check: check))])
        } catch {
            throw storeError(error, "cannot register it in etcd")
        }
        guard result.succeeded else {
            throw StoreError(.vaultAlreadyExists, "fleet group \(identity.group): its id is registered in etcd already")
        }
    }

    func verifyRegistration(check: [UInt8]) throws(StoreError) {
        let found: EtcdRangeResult
        do {
            found = try client.range(metaKey)
        } catch {
            throw storeError(error, "cannot read its registration")
        }
        guard let registered = found.keyValues.first?.value else {
            throw StoreError(
                .groupNotFound,
                "fleet group \(identity.group): etcd at \(identity.settings.endpoints.joined(separator: ",")) has no "
                    + "group with this key's id (made with `vault group create --etcd`, on the same cluster?)")
        }
        guard registered == meta(check: check) else {
            throw StoreError(
                .integrity,
                "fleet group \(identity.group): the key file does not match the group etcd has under its id (another "
                    + "group's key, or the name differs)")
        }
    }

    private func itemKey(_ id: ItemID) -> [UInt8] { itemsPrefix + Array(id.rawValue.utf8) }

    func isCurrent() throws(StoreError) -> Bool {
        let found: EtcdRangeResult
        do {
            found = try client.range(prefix: itemsPrefix, keysOnly: true)
        } catch {
            throw storeError(error, "cannot read its items' revisions from etcd")
        }
        let current = items(found).reduce(into: [String: Int64]()) { $0[$1.id.rawValue] = $1.keyValue.modRevision }
        return seen.withLock { $0 == current }
    }

    /// The items of a range of `itemsPrefix`: each key that names an item id, with its id (the check and
    /// the refresh count the same keys, so that a stray key does not make every check fail).
    private func items(_ found: EtcdRangeResult) -> [(id: ItemID, keyValue: EtcdKeyValue)] {
        found.keyValues.compactMap { keyValue in
            (try? ItemID(String(decoding: keyValue.key.dropFirst(itemsPrefix.count), as: UTF8.self)))
                .map { ($0, keyValue) }
        }
    }

    func refresh(_ cache: ReplicaCache) throws(StoreError) {
        let found: EtcdRangeResult
        do {
            found = try client.range(prefix: itemsPrefix)
        } catch {
            throw storeError(error, "cannot read its items from etcd")
        }
        var revisions: [String: Int64] = [:]
        for (id, keyValue) in items(found) {
            revisions[id.rawValue] = keyValue.modRevision
            if try cache.contents(of: id) != keyValue.value { try cache.store(keyValue.value, as: id) }
        }
        for id in try cache.cachedIDs() where revisions[id.rawValue] == nil { try cache.remove(id) }
        seen.withLock { $0 = revisions }
    }

    /// The largest item file a fleet group takes: etcd refuses requests over 1.5 MiB by default
    /// (`--max-request-bytes`), and a put's JSON carries the file in base64 (4/3 of its size).
    static let maximumItemFileByteCount = 1_048_576

    func write(_ id: ItemID, contents: [UInt8]) throws(StoreError) {
        guard contents.count <= Self.maximumItemFileByteCount else {
            throw StoreError(
                .invalidName,
                "fleet group \(identity.group): the item's file would be \(contents.count) bytes; a fleet group's "
                    + "items are at most \(Self.maximumItemFileByteCount) bytes encrypted and padded (etcd refuses "
                    + "larger requests), about 1 MB of secret; nothing was changed")
        }
        let key = itemKey(id)
        let compare: EtcdCompare =
            seen.withLock({ $0[id.rawValue] }).map { .modRevision(key: key, equals: $0) }
            ?? .createRevision(key: key, equals: 0)
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: [compare], success: [.put(key: key, value: contents)],
                failure: [.range(key: key, rangeEnd: nil)])
        } catch {
            throw storeError(error, "cannot write an item to etcd")
        }
        guard result.succeeded else {
            // This write itself, applied by an attempt whose answer was lost (item files carry a random
            // nonce: equal bytes are this write's), is a success at that revision.
            if let current = result.ranges.first??.keyValues.first, current.value == contents {
                seen.withLock { $0[id.rawValue] = current.modRevision }
                return
            }
            throw StoreError(.conflict, "fleet group \(identity.group): the item changed on another machine meanwhile")
        }
        seen.withLock { $0[id.rawValue] = result.revision }
    }

    func forget() {
        seen.withLock { $0 = [:] }
    }

    func delete(_ id: ItemID) throws(StoreError) {
        guard let revision = seen.withLock({ $0[id.rawValue] }) else { return }
        let key = itemKey(id)
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: [.modRevision(key: key, equals: revision)], success: [.delete(key: key, rangeEnd: nil)])
        } catch {
            throw storeError(error, "cannot delete an item in etcd")
        }
        guard result.succeeded else {
            throw StoreError(.conflict, "fleet group \(identity.group): the item changed on another machine meanwhile")
        }
        seen.withLock { _ = $0.removeValue(forKey: id.rawValue) }
    }
}
