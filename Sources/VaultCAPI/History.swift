public import CVaultAPI
import FoundationEssentials
import Vault
import VaultCrypto

// The history functions of include/vault.h (`vault_history` to `vault_purge`), as `Exports.swift`
// implements the others: each body runs inside `reporting`.

/// `vault_history`: the versions' numbers, dates, writers and kinds, with size negotiation.
@c @implementation
public func vault_history(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ versions: UnsafeMutablePointer<vault_version_t>?, _ capacity: UInt64,
    _ out_count: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    reporting { () throws(Failure) in
        let count = try Arguments.output(out_count, "out_count")
        count.pointee = 0
        if capacity > 0, versions == nil { throw Failure.param("versions is NULL but capacity is \(capacity)") }
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        let history = try vaultCall { () throws(VaultError) in try vault.history(of: key) }
        count.pointee = UInt64(history.count)
        guard UInt64(history.count) <= capacity else {
            throw Failure(
                Status.bufferTooSmall,
                "\(key) has \(history.count) versions; versions has room for \(capacity) (*out_count has the count)")
        }
        guard let versions else { return }
        for (index, version) in history.enumerated() {
            versions[index] = vault_version_t(
                number: version.number, written_unix_ms: ItemSnapshot.milliseconds(version.date),
                writer_uid: version.writerID.map { Int64($0) } ?? -1, is_current: version.isCurrent ? 1 : 0,
                is_deletion: version.isDeletion ? 1 : 0)
        }
    }
}

/// `vault_get_version`: one version's secret in secure memory.
@c @implementation
public func vault_get_version(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ version: UInt64,
    _ out_secret: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ out_len: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    reporting { () throws(Failure) in
        let output = try Arguments.output(out_secret, "out_secret")
        output.pointee = nil
        let length = try Arguments.output(out_len, "out_len")
        length.pointee = 0
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        let found = try vaultCall { () throws(VaultError) in try vault.data(for: key, version: version) }
        guard var data = found else {
            throw Failure(Status.notFound, "\(key) has no version \(version)")
        }
        defer { data.wipe() }
        output.pointee = try secureCopy(of: data)
        length.pointee = UInt64(data.count)
    }
}

/// `vault_put_if_version`: check-and-set.
@c @implementation
public func vault_put_if_version(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ secret: UnsafePointer<UInt8>?, _ secret_len: UInt64,
    _ expected_version: UInt64, _ out_version: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    out_version?.pointee = 0
    return writing(vault, group, service, account, secret, secret_len) { (vault, key, data) throws(Failure) in
        let version = try vaultCall { () throws(VaultError) in
            try vault.set(data, for: key, ifVersion: expected_version)
        }
        out_version?.pointee = version
    }
}

/// `vault_restore`: an old version made current as a new one.
@c @implementation
public func vault_restore(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?, _ version: UInt64, _ out_version: UnsafeMutablePointer<UInt64>?
) -> Int32 {
    out_version?.pointee = 0
    return reporting { () throws(Failure) in
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        let restored = try vaultCall { () throws(VaultError) in try vault.restore(key, version: version) }
        out_version?.pointee = restored
    }
}

/// `vault_purge`: the item and every version of it removed.
@c @implementation
public func vault_purge(
    _ vault: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ service: UnsafePointer<CChar>?,
    _ account: UnsafePointer<CChar>?
) -> Int32 {
    reporting { () throws(Failure) in
        let vault = try Registry.vaults.lookup(vault, name: "vault")
        let key = try Arguments.itemKey(group: group, service: service, account: account)
        let purged = try vaultCall { () throws(VaultError) in try vault.purge(key) }
        guard purged else { throw Failure(Status.notFound, "\(key): no such item, and no version of it") }
    }
}
