import Foundation
import Vault

// Apple's four SecItem functions over the vault. Parameter checks and result shapes follow Apple's
// SecItem.h documentation and its open-source SecItemServer (`_SecItemAdd`, `_SecItemCopyMatching`,
// `_SecItemUpdate`, `_SecItemDelete`). Like every C function Swift imports, their results may be discarded.

/// Adds an item (Apple's `SecItemAdd`). `attributes` holds `kSecClass`, the attributes, `kSecValueData`
/// and optionally `kSecReturn*` keys; with those and a non-nil `result`, `result` receives the new
/// item as `SecItemCopyMatching` would return it. An item with the same primary key is
/// `errSecDuplicateItem` and stays unchanged; search keys (`kSecMatch*`) are `errSecParam`.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    status { () throws(SecStatusError) in
        let object = try SecItemOperations.add(attributes)
        if let result, let object { result.pointee = object }
    }
}

/// Finds items (Apple's `SecItemCopyMatching`). Without `kSecMatchLimit` one item is returned; with
/// `kSecMatchLimitAll` (or a number above one) an `NSArray`, even of one item. Per item: `NSData` for
/// `kSecReturnData` or `kSecReturnPersistentRef` alone, else an `NSDictionary` with raw keys. Without
/// return keys only the status says whether something matched. No match is `errSecItemNotFound`.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    status { () throws(SecStatusError) in
        let object = try SecItemOperations.copyMatching(query, wantsResult: result != nil)
        result?.pointee = object
    }
}

/// Changes every item that `query` matches (Apple's `SecItemUpdate`) to have the attributes and
/// `kSecValueData` of `attributesToUpdate`. Return keys in `query` are `errSecParam`; a change that
/// would give an item another item's primary key is `errSecDuplicateItem`, and nothing changes.
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    status { () throws(SecStatusError) in try SecItemOperations.update(query, attributesToUpdate) }
}

/// Deletes every item that `query` matches (Apple's `SecItemDelete`). Search keys are `errSecParam`,
/// but `kSecMatchLimit` = `kSecMatchLimitAll` (what a delete does anyway, and what wrappers send on
/// macOS); no match is `errSecItemNotFound`.
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    status { () throws(SecStatusError) in try SecItemOperations.delete(query) }
}

private func status(_ body: () throws(SecStatusError) -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        return error.status
    }
}

/// The four operations with their failures as errors (with messages, for tests and debugging).
enum SecItemOperations {
    /// The vault for an add: created when missing (see `VaultConnection.current`).
    static func openVault() throws(SecStatusError) -> Vault {
        let vault: Vault?
        do {
            vault = try VaultConnection.current(creating: true)
        } catch {
            throw SecStatusError(error)
        }
        guard let vault else { throw SecStatusError(errSecNoSuchKeychain, "no vault") }
        return vault
    }

    /// The vault for a read, an update or a delete; a vault that does not exist holds no item.
    static func openExistingVault() throws(SecStatusError) -> Vault {
        let vault: Vault?
        do {
            vault = try VaultConnection.current(creating: false)
        } catch {
            throw SecStatusError(error)
        }
        guard let vault else {
            throw SecStatusError(
                errSecItemNotFound, "no vault exists at VAULT_DIR or the default location yet: no item matches")
        }
        return vault
    }

    static func add(_ dictionary: CFDictionary) throws(SecStatusError) -> AnyObject? {
        let request = try ItemRequest(query: dictionary)
        guard let itemClass = request.itemClass else {
            throw SecStatusError(errSecParam, "SecItemAdd needs kSecClass")
        }
        if request.hasSearchKeys { throw SecStatusError(errSecParam, "SecItemAdd does not take kSecMatch keys") }
        if request.persistentReference != nil {
            throw SecStatusError(errSecParam, "SecItemAdd does not take kSecValuePersistentRef")
        }
        let data = request.data ?? Data()
        let vault = try openVault()
        let item: MatchedItem
        do {
            item = try vault.add(itemClass, attributes: request.addAttributes, data: data)
        } catch {
            throw SecStatusError(error)
        }
        guard !request.returning.isEmpty else { return nil }
        return ItemResult.object(item, data: data, returning: request.returning)
    }

    static func copyMatching(_ dictionary: CFDictionary, wantsResult: Bool) throws(SecStatusError) -> AnyObject? {
        let request = try ItemRequest(query: dictionary)
        if !request.returning.isEmpty && !wantsResult {
            throw SecStatusError(errSecParam, "return keys were given but the result pointer is nil")
        }
        var returning = request.returning
        if returning.contains(.reference) { returning.insert(.data) }
        let vault = try openExistingVault()
        let items: [MatchedItem]
        do {
            items = try vault.copyMatching(request.query, returning: returning.intersection([.data]))
        } catch {
            throw SecStatusError(error)
        }
        guard !request.returning.isEmpty else { return nil }
        let objects = items.map { ItemResult.object($0, data: $0.data, returning: request.returning) }
        if request.query.limit == .one { return objects.first }
        return NSArray(array: objects)
    }

    static func update(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) throws(SecStatusError) {
        let request = try ItemRequest(query: query)
        if !request.returning.isEmpty {
            throw SecStatusError(errSecParam, "SecItemUpdate does not take kSecReturn keys in its query")
        }
        let changes = try ItemRequest(changes: attributesToUpdate, itemClass: request.itemClass)
        var attributes = changes.attributes
        if let synchronizable = changes.synchronizable { attributes.synchronizable = synchronizable == .yes }
        let vault = try openExistingVault()
        do {
            try vault.update(request.query, with: ItemChanges(attributes: attributes, data: changes.data))
        } catch {
            throw SecStatusError(error)
        }
    }

    static func delete(_ query: CFDictionary) throws(SecStatusError) {
        let request = try ItemRequest(query: query)
        // kSecMatchLimitAll is what a delete does anyway: Apple's macOS client strips it before the
        // server's check (SecItem.cpp, SecItemCopyTranslatedAttributes with pruneMatch), and wrappers
        // such as Valet and KeychainAccess send it on every platform but iOS. Any other limit, and any
        // other match key, is refused as Apple's server refuses it (SecServerItemDeleteWithCustomDb:
        // errSecMatchLimitUnsupported and errSecItemMatchUnsupported, both errSecParam).
        if request.limit != nil, request.limit != .all {
            throw SecStatusError(
                errSecParam,
                "SecItemDelete takes no kSecMatchLimit other than kSecMatchLimitAll (it deletes every match)")
        }
        if !request.searchKeys.subtracting(["m_Limit"]).isEmpty {
            throw SecStatusError(errSecParam, "SecItemDelete does not take kSecMatch keys (but kSecMatchLimitAll)")
        }
        if request.persistentReference != nil && !request.attributeKeys.isEmpty {
            throw SecStatusError(errSecParam, "SecItemDelete takes a persistent reference or attributes, not both")
        }
        var vaultQuery = request.query
        vaultQuery.limit = .all
        let vault = try openExistingVault()
        do {
            try vault.delete(vaultQuery)
        } catch {
            throw SecStatusError(error)
        }
    }
}
