public import CVaultAPI
import FoundationEssentials
import Vault
import VaultCrypto
import VaultFleet

// The implementations of include/vault.h. Each is `@c @implementation`: the compiler checks its
// signature against the header's declaration, so the header stays the single source of truth. The
// documentation of every function is in the header; what follows is how each keeps its promises.
//
// Every body runs inside `reporting`, which turns every thrown failure into a status and the
// thread's last error message: no Swift error crosses into C.

/// Runs one C call: `VAULT_OK` and an empty message, or the failure's status and message.
@inline(__always)
func reporting(_ body: () throws(Failure) -> Void) -> Int32 {
    do {
        try body()
        LastError.set("")
        return Status.ok
    } catch {
        LastError.set(error.message)
        return error.status
    }
}

/// Runs a vault operation, turning its `VaultError` into a `Failure`.
@inline(__always)
func vaultCall<R>(_ body: () throws(VaultError) -> R) throws(Failure) -> R {
    do {
        return try body()
    } catch {
        throw Failure(error)
    }
}

/// The etcd client every vault the library opens uses for its fleet groups, as for any other group.
// Without watches: a watch runs on a thread of the library's own, which may hold a lock (Foundation's
// JSON, the client's) at a caller's fork(), and a child that needs it then crashes
// (Tests/CAPI/test_fleet_fork.py found it). Every C read of a fleet group asks etcd instead.
let fleetClient = FleetClient.etcd(watching: false)

/// The most access groups `vault_open` accepts: a bound that turns a garbage count into an error
/// instead of a read past the caller's array.
let maximumGroupCount: UInt32 = 65_535

// MARK: Errors

/// `vault_strerror`: a static description of a status.
@c @implementation
public func vault_strerror(_ status: Int32) -> UnsafePointer<CChar>! {
    cString(Status.description(status))
}

/// `vault_last_error_message`: the calling thread's last failure message.
@c @implementation
public func vault_last_error_message() -> UnsafePointer<CChar>! {
    LastError.current
}

// MARK: Opening and closing

/// `vault_open`: opens a vault as a client and registers a handle for it.
@c @implementation
public func vault_open(
    _ path: UnsafePointer<CChar>?, _ app_id: UnsafePointer<CChar>?, _ groups: UnsafePointer<UnsafePointer<CChar>?>?,
    _ ngroups: UInt32, _ flags: UInt32, _ out_vault: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    reporting { () throws(Failure) in
        let output = try Arguments.output(out_vault, "out_vault")
        output.pointee = nil
        let known = UInt32(VAULT_OPEN_CREATE)
        guard flags & ~known == 0 else {
            throw Failure.param("flags 0x\(String(flags, radix: 16)) has bits other than VAULT_OPEN_CREATE")
        }
        let path = try Arguments.optionalString(path, "path")
        let appID = try Arguments.optionalString(app_id, "app_id")
        guard ngroups <= maximumGroupCount else {
            throw Failure.param("ngroups is \(ngroups); at most \(maximumGroupCount) access groups are allowed")
        }
        var names: [String] = []
        if ngroups > 0 {
            guard let groups else { throw Failure.param("groups is NULL but ngroups is \(ngroups)") }
            for index in 0..<Int(ngroups) {
                names.append(try Arguments.string(groups[index], "groups[\(index)]"))
            }
        }
        let vault = try vaultCall { () throws(VaultError) in
            let client = try Client(applicationIdentifier: appID, accessGroups: names)
            return try Vault.open(at: path, client: client, createIfMissing: flags & known != 0, fleet: fleetClient)
        }
        output.pointee = Registry.vaults.insert(vault)
    }
}

/// `vault_close`: unregisters a handle; running calls keep their reference until they finish.
@c @implementation
public func vault_close(_ vault: OpaquePointer?) -> Int32 {
    reporting { () throws(Failure) in
        guard let vault else { return }
        _ = try Registry.vaults.remove(vault, name: "vault")
    }
}

// MARK: Items

/// The secret of a generic password, or `VAULT_ERR_NOT_FOUND` with a message naming it.
func secret(of key: ItemKey, in vault: Vault) throws(Failure) -> Data {
    let query = Query.genericPassword(service: key.service, account: key.account, group: key.group)
    return try vaultCall { () throws(VaultError) in
        try vault.copyMatching(query, returning: [.data]).first?.data ?? Data()
    }
}

/// The arguments of a write (`vault_put`, `vault_add`) checked and converted; the copy of the secret
/// is wiped when `body` returns.
func writing(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ secret: UnsafePointer<UInt8>?, _ secretLength: UInt64,
    _ body: (Vault, ItemKey, Data) throws(Failure) -> Void
) -> Int32 {
    reporting { () throws(Failure) in
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        var data = try Arguments.secret(secret, secretLength)
        defer { data.wipe() }
        try body(vault, key, data)
    }
}

/// `vault_put`: add-or-update under the vault's lock.
@c @implementation
public func vault_put(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ secret: UnsafePointer<UInt8>?, _ secret_len: UInt64
) -> Int32 {
    writing(vault, group, service, account, secret, secret_len) { (vault, key, data) throws(Failure) in
        try vaultCall { () throws(VaultError) in try vault.set(data, for: key) }
    }
}

/// `vault_add`: add only; an existing item is `VAULT_ERR_DUPLICATE` and stays as it was.
@c @implementation
public func vault_add(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ secret: UnsafePointer<UInt8>?, _ secret_len: UInt64
) -> Int32 {
    writing(vault, group, service, account, secret, secret_len) { (vault, key, data) throws(Failure) in
        var attributes = ItemAttributes(service: key.service, account: key.account)
        attributes.accessGroup = key.group
        // As `vault_put` (Vault.set) gives new items.
        attributes.accessible = .afterFirstUnlock
        try vaultCall { () throws(VaultError) in
            _ = try vault.add(.genericPassword, attributes: attributes, data: data)
        }
    }
}

/// `vault_get`: the secret into the caller's buffer, with size negotiation.
@c @implementation
public func vault_get(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ buffer: UnsafeMutablePointer<UInt8>?, _ buffer_size: UInt64,
    _ out_len: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    reporting { () throws(Failure) in
        let length = try Arguments.output(out_len, "out_len")
        length.pointee = 0
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        // Only compared with the secret's length, so a size beyond Int.max is as good as Int.max.
        let capacity = Int(clamping: buffer_size)
        if capacity > 0, buffer == nil { throw Failure.param("buffer is NULL but buffer_size is \(buffer_size)") }
        var data = try secret(of: key, in: vault)
        defer { data.wipe() }
        length.pointee = UInt64(data.count)
        guard data.count <= capacity else {
            throw Failure(
                Status.bufferTooSmall,
                "the secret of \(key) is \(data.count) bytes; the buffer has \(capacity) (*out_len has the size)")
        }
        if let buffer, !data.isEmpty {
            data.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            }
        }
    }
}

/// `vault_get_secret`: the secret in a new buffer of secure memory, registered for `vault_free_secret`.
@c @implementation
public func vault_get_secret(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ out_secret: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ out_len: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    reporting { () throws(Failure) in
        let output = try Arguments.output(out_secret, "out_secret")
        output.pointee = nil
        let length = try Arguments.output(out_len, "out_len")
        length.pointee = 0
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        var data = try secret(of: key, in: vault)
        defer { data.wipe() }
        output.pointee = try secureCopy(of: data)
        length.pointee = UInt64(data.count)
    }
}

/// `data` copied into a new buffer of secure memory, registered for `vault_free_secret`.
func secureCopy(of data: Data) throws(Failure) -> UnsafeMutablePointer<UInt8> {
    let memory: UnsafeMutableRawPointer
    do throws(CryptoError) {
        memory = try SecureAllocation.allocate(byteCount: data.count)
    } catch {
        throw Failure(error)
    }
    data.withUnsafeBytes { bytes in
        if let base = bytes.baseAddress, bytes.count > 0 { memory.copyMemory(from: base, byteCount: bytes.count) }
    }
    Registry.secrets.withLock { _ = $0.insert(UInt(bitPattern: memory)) }
    return memory.assumingMemoryBound(to: UInt8.self)
}

/// `vault_free_secret`: wipes and frees a registered buffer; refuses any other pointer.
@c @implementation
public func vault_free_secret(_ secret: UnsafeMutablePointer<UInt8>?) -> Int32 {
    reporting { () throws(Failure) in
        guard let secret else { return }
        let address = UInt(bitPattern: secret)
        guard Registry.secrets.withLock({ $0.remove(address) }) != nil else {
            throw Failure.param(
                "secret (0x\(String(address, radix: 16))) was not returned by vault_get_secret, or was already freed")
        }
        SecureAllocation.free(UnsafeMutableRawPointer(secret))
    }
}

/// `vault_remove`: deletes the matching item (in every group of the client when group is NULL).
@c @implementation
public func vault_remove(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?
) -> Int32 {
    reporting { () throws(Failure) in
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        let query = Query.genericPassword(service: key.service, account: key.account, group: key.group)
        try vaultCall { () throws(VaultError) in _ = try vault.delete(query) }
    }
}

// MARK: Listing

/// `vault_list`: a snapshot of the generic passwords' attributes, as an iterator handle.
@c @implementation
public func vault_list(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ out_iter: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    reporting { () throws(Failure) in
        let output = try Arguments.output(out_iter, "out_iter")
        output.pointee = nil
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        var attributes = ItemAttributes()
        attributes.accessGroup = try Arguments.group(group)
        let query = Query(itemClass: .genericPassword, attributes: attributes, limit: .all)
        let matched = try vaultCall { () throws(VaultError) -> [MatchedItem] in
            do throws(VaultError) {
                return try vault.copyMatching(query, returning: [.attributes])
            } catch  where error.status == .itemNotFound {
                return []
            }
        }
        let sorted = matched.sorted { lhs, rhs in
            let (l, r) = (lhs.attributes, rhs.attributes)
            return (l.accessGroup?.rawValue ?? "", l[text: .service] ?? "", l[text: .account] ?? "")
                < (r.accessGroup?.rawValue ?? "", r[text: .service] ?? "", r[text: .account] ?? "")
        }
        output.pointee = Registry.iterators.insert(try ItemSnapshot(sorted))
    }
}

/// `vault_iter_next`: the next item of the snapshot, or `VAULT_ERR_NOT_FOUND` at the end.
@c @implementation
public func vault_iter_next(_ iter: OpaquePointer?, _ out_item: UnsafeMutablePointer<vault_item_t>?) -> Int32 {
    reporting { () throws(Failure) in
        let snapshot = try Registry.iterators.lookup(iter, name: "iter")
        let output = try Arguments.output(out_item, "out_item")
        guard let item = snapshot.next() else {
            output.pointee = vault_item_t()
            throw Failure(Status.notFound, "the iteration has no more items")
        }
        output.pointee = item
    }
}

/// `vault_iter_free`: unregisters an iterator; its strings are freed with the last reference.
@c @implementation
public func vault_iter_free(_ iter: OpaquePointer?) -> Int32 {
    reporting { () throws(Failure) in
        guard let iter else { return }
        _ = try Registry.iterators.remove(iter, name: "iter")
    }
}

// MARK: Device identity

/// `vault_device_id`: the persistent UUID under `key`, created atomically on first use.
@c @implementation
public func vault_device_id(
    _ vault: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out_uuid: UnsafeMutablePointer<UInt8>?,
    _ out_created: UnsafeMutablePointer<UInt8>?
) -> Int32 {
    reporting { () throws(Failure) in
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let uuidOutput = try Arguments.output(out_uuid, "out_uuid")
        let key = try Arguments.optionalString(key, "key") ?? Vault.defaultDeviceIdentifierKey
        let (identifier, created) = try vaultCall { () throws(VaultError) in try vault.deviceIdentifier(for: key) }
        withUnsafeBytes(of: identifier.uuid) { bytes in
            UnsafeMutableRawPointer(uuidOutput).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        out_created?.pointee = created ? 1 : 0
    }
}

// MARK: Fleet groups

/// `vault_fleet_cache_status`: whether this process's last answer from fleet group `group` came from
/// its cache without etcd, and when that cache was last known current.
@c @implementation
public func vault_fleet_cache_status(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ out_stale: UnsafeMutablePointer<UInt8>?,
    _ out_known_current_ms: UnsafeMutablePointer<Int64>?
) -> Int32 {
    reporting { () throws(Failure) in
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        guard let group = try Arguments.group(group) else { throw Failure.param("group is NULL") }
        let staleOutput = try Arguments.output(out_stale, "out_stale")
        guard let status = vault.fleetCacheStatus(of: group) else {
            throw Failure(
                Status.notFound,
                "group \(group) is not a fleet group of the vault at \(vault.path), or this process has not read it")
        }
        staleOutput.pointee = status.isStale ? 1 : 0
        out_known_current_ms?.pointee = (status.knownCurrentAt ?? 0) / 1_000_000
    }
}

/// `vault_require_fresh_fleet_reads`: every read of a fleet group confirmed by etcd, or not answered.
@c @implementation
public func vault_require_fresh_fleet_reads(_ vault: OpaquePointer?, _ required: Int32) -> Int32 {
    reporting { () throws(Failure) in
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        vault.requireFreshFleetReads(required != 0)
    }
}
