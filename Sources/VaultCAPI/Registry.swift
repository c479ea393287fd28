internal import CVaultAPI
import FoundationEssentials
internal import Glibc
import Synchronization
import Vault
import VaultCrypto

/// The process's live C objects.
enum Registry {
    /// Open vaults (`vault_t`).
    static let vaults = HandleTable<Vault>(tag: 0x5, kind: "vault_t")
    /// Live iterators (`vault_iter_t`).
    static let iterators = HandleTable<ItemSnapshot>(tag: 0xA, kind: "vault_iter_t")
    /// The addresses of the buffers that `vault_get_secret` handed out and that are not freed yet, so
    /// that `vault_free_secret` refuses (instead of crashing on) any other pointer.
    static let secrets = Mutex(Set<UInt>())
}

/// The snapshot behind a `vault_iter_t`: the items' attributes as C strings, allocated once and freed
/// with the iterator, so that every `vault_item_t` handed out stays valid until `vault_iter_free`.
final class ItemSnapshot: @unchecked Sendable {
    // @unchecked: `items` and the strings they point to are written only in `init` and only read
    // afterwards; the position is under a mutex.
    private let items: [vault_item_t]
    private let strings: [UnsafeMutablePointer<CChar>]
    private let position = Mutex(0)

    /// Copies the attributes of `matched` into C strings, in order.
    init(_ matched: [MatchedItem]) throws(Failure) {
        var strings: [UnsafeMutablePointer<CChar>] = []
        var items: [vault_item_t] = []
        func copy(_ text: String) -> UnsafeMutablePointer<CChar>? {
            guard let pointer = strdup(text) else { return nil }
            strings.append(pointer)
            return pointer
        }
        for item in matched {
            let a = item.attributes
            // The fields of a `vault_item_t` are these attributes of the schema (`ItemAttribute`).
            guard let group = copy(a.accessGroup?.rawValue ?? ""), let service = copy(a[text: .service] ?? ""),
                let account = copy(a[text: .account] ?? "")
            else {
                strings.forEach { free($0) }
                throw Failure(Status.allocate, "cannot allocate the strings of \(matched.count) listed items")
            }
            var label: UnsafeMutablePointer<CChar>?
            if let text = a[text: .label] {
                guard let pointer = copy(text) else {
                    strings.forEach { free($0) }
                    throw Failure(Status.allocate, "cannot allocate the strings of \(matched.count) listed items")
                }
                label = pointer
            }
            items.append(
                vault_item_t(
                    group: UnsafePointer(group), service: UnsafePointer(service), account: UnsafePointer(account),
                    label: label.map { UnsafePointer($0) },
                    created_unix_ms: Self.milliseconds(a[date: .creationDate]),
                    modified_unix_ms: Self.milliseconds(a[date: .modificationDate])))
        }
        self.items = items
        self.strings = strings
    }

    deinit {
        strings.forEach { free($0) }
    }

    /// The next item, or nil at the end (and at every call after it).
    func next() -> vault_item_t? {
        position.withLock { index in
            guard index < items.count else { return nil }
            defer { index += 1 }
            return items[index]
        }
    }

    /// A date as milliseconds since the Unix epoch; 0 when missing, clamped when out of range.
    static func milliseconds(_ date: Date?) -> Int64 {
        guard let date else { return 0 }
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return 0 }
        if value >= 9.2e18 { return Int64.max }
        if value <= -9.2e18 { return Int64.min }
        return Int64(value)
    }
}
