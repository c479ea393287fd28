import VaultSystem

/// How a member finds the shared groups of its Unix groups: members may search `groups/` but not list
/// it. For each Unix group that has shared groups, `groups/.shared.<gid>` names them, one a line: the
/// owner's file, of that gid, 0640, so that exactly that Unix group's members (and the owner) read it.
/// The owner writes the indexes again whenever the shared groups change (made, removed, moved to another
/// gid) and at its `group ls`. An index only points: a member still opens a group through its directory
/// and key, which the kernel keeps to the group's members.
enum SharedGroupIndex {
    static let prefix = ".shared."
    /// The most bytes of an index read: 200-byte names, one line each, for many groups.
    static let maximumByteCount = 1 << 20

    /// The index of Unix group `gid`.
    static func name(_ gid: UInt32) -> String { prefix + String(gid) }

    /// The gid an index's name is for; nil for any other name.
    static func groupID(ofName name: String) -> UInt32? {
        guard name.hasPrefix(prefix) else { return nil }
        return UInt32(name.dropFirst(prefix.count))
    }

    /// An index's text: the names sorted, one a line.
    static func text(_ names: [GroupName]) -> [UInt8] {
        Array(names.map(\.rawValue).sorted().map { $0 + "\n" }.joined().utf8)
    }
}

extension VaultStore {
    /// Writes every shared-group index again from the group directories (the owner only, under the
    /// vault's lock): an index per gid that has shared groups, whose text and owner are checked first
    /// (nothing is written when they are right), and none for a gid that has none.
    func updateSharedGroupIndexes() throws(StoreError) {
        var byGroupID: [UInt32: [GroupName]] = [:]
        for group in try groups() {
            guard let status = try? groupsDirectory.statusAt(group.rawValue), status.kind == .directory,
                status.permissions == .sharedDirectory, status.ownerID == ownerID
            else { continue }
            byGroupID[status.groupID, default: []].append(group)
        }
        let names: [String]
        do throws(Errno) {
            names = try groupsDirectory.entryNames()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupsPath)
        }
        var changed = false
        for (groupID, groups) in byGroupID {
            let name = SharedGroupIndex.name(groupID)
            let text = SharedGroupIndex.text(groups)
            if let status = try? groupsDirectory.statusAt(name), status.kind == .regular, status.ownerID == ownerID,
                status.groupID == groupID, status.permissions == .ownerWriteGroupRead, status.linkCount == 1,
                (try? SmallFile.read(name, in: groupsDirectory, path: groupsPath / name, limit: text.count)) == text
            {
                continue
            }
            let temporary = try AtomicFile.writeTemporary(
                .plain(text), in: groupsDirectory, directoryPath: groupsPath, .ownerWriteGroupRead, durable: true)
            do throws(Errno) {
                // Root acting as another user's owner makes it that user's, as the owner's own files are.
                let user = ProcessIdentity.effectiveUserID == 0 ? ownerID : nil
                try groupsDirectory.setOwnerAt(temporary, user: user, group: groupID)
            } catch {
                try? groupsDirectory.unlinkAt(temporary)
                throw StoreError.system(
                    error, .chmod, "give the shared-group index to gid \(groupID)", path: groupsPath / name)
            }
            try AtomicFile.rename(temporary, to: name, in: groupsDirectory, directoryPath: groupsPath)
            changed = true
        }
        for name in names {
            let stale = SharedGroupIndex.groupID(ofName: name).map { byGroupID[$0] == nil } ?? false
            // A temp file here is a leftover of an update that stopped: they are made under this lock only.
            guard stale || name.hasPrefix(AtomicFile.temporaryPrefix) else { continue }
            try? groupsDirectory.unlinkAt(name)
            changed = true
        }
        if changed { try AtomicFile.syncDirectory(groupsDirectory, path: groupsPath) }
    }

    /// `updateSharedGroupIndexes` under the vault's lock (the owner only).
    package func refreshSharedGroupIndexes() throws(StoreError) {
        _ = try ownerClassKeys("index its shared groups")
        try withWriteLock(finishingMoves: false) { (_) throws(StoreError) in try updateSharedGroupIndexes() }
    }

    /// The shared groups whose Unix group this process is in, as the indexes it can read name them
    /// (what a member, which may not list `groups/`, can know of the vault's groups): sorted, each a
    /// directory that is there. Unreadable or malformed indexes count as none.
    package func groupsSharedWithThisProcess() -> [GroupName] {
        var found: Set<GroupName> = []
        for groupID in ProcessIdentity.groupIDs {
            let name = SharedGroupIndex.name(groupID)
            guard
                let text = try? SmallFile.read(
                    name, in: groupsDirectory, path: groupsPath / name, limit: SharedGroupIndex.maximumByteCount)
            else { continue }
            for line in String(decoding: text, as: UTF8.self).split(separator: "\n") {
                guard let group = try? GroupName(String(line)),
                    let status = try? groupsDirectory.statusAt(group.rawValue), status.kind == .directory,
                    status.groupID == groupID
                else { continue }
                found.insert(group)
            }
        }
        return found.sorted()
    }
}
