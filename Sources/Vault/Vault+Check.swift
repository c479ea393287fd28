import VaultStore

/// One item file that failed verification.
public struct ItemProblem: Sendable, Hashable, CustomStringConvertible {
    /// The file's path.
    public let path: String
    /// The group directory it is in.
    public let group: String
    /// `decode` for a file that fails authentication or decoding; `io` or `permissionDenied` for one
    /// that cannot be read.
    public let status: VaultStatus
    /// Why it failed (never any content of the file).
    public let reason: String

    /// The path and the reason.
    public var description: String { "\(path): \(reason)" }
}

/// What `verifyAll()` found.
public struct VerificationReport: Sendable, Hashable {
    /// The number of groups checked.
    public let groupCount: Int
    /// The number of item files checked.
    public let itemCount: Int
    /// The damaged or unreadable files, in group and file-name order; empty when all are sound.
    public let problems: [ItemProblem]
}

/// A group directory present in the vault.
public struct StoredGroup: Sendable, Hashable {
    /// The group.
    public let group: AccessGroup
    /// How many item files it holds.
    public let itemCount: Int
}

extension Vault {
    /// Decrypts and decodes every item file in every group of the vault, whatever groups the client
    /// has: an integrity check that reveals no content, only which files are damaged. A file that
    /// fails is reported by path and the check goes on; only a failure to list the vault itself
    /// throws.
    public func verifyAll() throws(VaultError) -> VerificationReport {
        let store = engine.store
        let groups = try translatingStoreErrors { try store.groups() }
        var problems: [ItemProblem] = []
        var itemCount = 0
        for name in groups {
            let group = AccessGroup(name)
            let ids: [ItemID]
            do {
                ids = try translatingStoreErrors { try store.itemIDs(in: name) }
            } catch {
                problems.append(
                    ItemProblem(
                        path: "\(store.path)/groups/\(name)", group: name.rawValue, status: error.status,
                        reason: error.message))
                continue
            }
            for id in ids {
                let path = engine.filePath(group, id)
                do {
                    guard let record = try engine.load(group, id) else { continue }  // removed meanwhile
                    itemCount += 1
                    // Authentication binds the file to its name, so a mismatch here means the file was
                    // written wrongly, not tampered with; it would still never be found by its key.
                    if try engine.itemID(group, record.primaryKey) != id {
                        problems.append(
                            ItemProblem(
                                path: path, group: name.rawValue, status: .decode,
                                reason: "the item's primary key does not match its file name"))
                    }
                } catch {
                    itemCount += 1
                    problems.append(
                        ItemProblem(
                            path: path, group: name.rawValue, status: error.status,
                            reason: Self.reason(error.message, path: path)))
                }
            }
        }
        return VerificationReport(groupCount: groups.count, itemCount: itemCount, problems: problems)
    }

    /// The message without a leading copy of the path, which the problem carries on its own.
    static func reason(_ message: String, path: String) -> String {
        guard message.hasPrefix(path + " ") else { return message }
        return String(message.dropFirst(path.count + 1))
    }

    /// The groups that have a directory in the vault, whatever groups the client has, with their item
    /// counts, sorted by name.
    public func storedGroups() throws(VaultError) -> [StoredGroup] {
        let store = engine.store
        let groups = try translatingStoreErrors { try store.groups() }
        var result: [StoredGroup] = []
        for name in groups {
            let count = try translatingStoreErrors { try store.itemIDs(in: name).count }
            result.append(StoredGroup(group: AccessGroup(name), itemCount: count))
        }
        return result
    }
}
