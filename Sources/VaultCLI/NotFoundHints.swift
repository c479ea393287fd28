import Vault
import VaultSystem

/// What the tool adds on standard error when a listing or a get finds nothing: the usual causes are
/// the wrong identity (the item was put for `--app my-service` and is looked up as `vault`) and an
/// internet password named without its protocol or port. Only group names and the caller's own
/// groups' items are shown: within one Unix user every group is open to the tool, but no item names or
/// counts of other groups are printed.
enum NotFoundHints {
    /// A note naming the groups that hold items when none of `searched` matched, if there are any.
    static func otherGroups(_ vault: Vault, searched: [AccessGroup]) -> String? {
        guard let stored = try? vault.storedGroups() else { return nil }
        let others = stored.filter { $0.itemCount > 0 && !searched.contains($0.group) }.map(\.group.rawValue)
        guard !others.isEmpty else { return nil }
        let plural = others.count == 1 ? "group \(others[0]) holds" : "groups \(others.joined(separator: ", ")) hold"
        return "note: \(plural) items; the tool acts as client \(vault.client) (searched "
            + searched.map(\.rawValue).joined(separator: ", ")
            + "): give --app ID (the service's identity) or --group G, or set VAULT_APP_ID"
    }

    /// Items in the searched groups whose name is near `name`: an internet password for the same
    /// server and account under another protocol, port or path, or a generic password of the same
    /// service under another account. At most five, as the options that name them exactly.
    static func nearMatches(_ vault: Vault, to name: ItemName, group: AccessGroup?) -> [String] {
        var query: Query
        switch name {
        case .generic(let service, _):
            query = Query(itemClass: .genericPassword, limit: .all)
            query.attributes.service = service
        case .internet(let internet):
            query = Query(itemClass: .internetPassword, limit: .all)
            query.attributes.server = internet.server
            query.attributes.account = internet.account
        }
        query.attributes.accessGroup = group
        guard let found = try? vault.copyMatching(query, returning: [.attributes]) else { return [] }
        return found.prefix(5).map { item in
            let a = item.attributes
            var words: [String] = []
            if item.itemClass == .genericPassword {
                words = [shellWord(a.service ?? ""), shellWord(a.account ?? "")]
            } else {
                words = ["--server", shellWord(a.server ?? "")]
                if let code = a.protocol, !code.isEmpty { words += ["--protocol", ProtocolName.name(for: code)] }
                if let port = a.port, port != 0 { words += ["--port", String(port)] }
                if let path = a.path, !path.isEmpty { words += ["--path", shellWord(path)] }
                words.append(shellWord(a.account ?? ""))
            }
            if group == nil, let itemGroup = a.accessGroup, vault.client.accessGroups.count > 1 {
                words = ["--group", itemGroup.rawValue] + words
            }
            return words.joined(separator: " ")
        }
    }

    /// `text` as one shell word (single-quoted unless it is plain).
    static func shellWord(_ text: String) -> String {
        let plain =
            !text.isEmpty
            && text.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || "@%+=:,./-_".unicodeScalars.contains($0)
            }
        return plain ? text : "'" + text.replacing("'", with: "'\\''") + "'"
    }
}
