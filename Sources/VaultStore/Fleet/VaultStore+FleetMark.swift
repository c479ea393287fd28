import VaultSystem

/// A fleet group's high-water mark (`fleet.mark`, `FleetMark`) and its resynchronisation with the
/// replica, the operator's way out of a refused rollback.
extension VaultStore {
    /// The newest manifest this machine has seen of fleet group `group` (`fleet.mark`), or nil.
    func fleetMark(_ group: GroupName) throws(StoreError) -> FleetMark? {
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        let path = groupPath(group) / FleetMark.fileName
        guard let bytes = try SmallFile.readIfPresent(FleetMark.fileName, in: directory, path: path, limit: 4096)
        else { return nil }
        guard let mark = FleetMark.decode(bytes) else {
            throw StoreError(
                .integrity,
                "\(path) is not a fleet group's high-water mark (damaged?); `vault group resync \(group) "
                    + "--accept-rollback` writes it anew", path: path.string)
        }
        return mark
    }

    /// Durably records `mark` as fleet group `group`'s high-water mark: written in place over the last
    /// one (the same length, one write of under a sector, then `fdatasync`: one flush per fleet write),
    /// or, for a first mark or a file that is not a regular file of that length with one link (of this
    /// user; in a shared group of any member, 0660 and of the directory's Unix group, since every
    /// member's writes move it: what a member could write anyway), replaced.
    func recordFleetMark(_ mark: FleetMark, group: GroupName) throws(StoreError) {
        let directory = try existingGroupDirectory(group)
        let path = groupPath(group) / FleetMark.fileName
        let bytes = mark.encoded()
        let permissions = memberFilePermissions(group)
        if let file = try? directory.openAt(FleetMark.fileName, [.writeOnly, .nonBlocking]) {
            defer { try? file.close() }
            if let status = try? file.status(), status.kind == .regular, status.linkCount == 1,
                status.size == Int64(FleetMark.byteCount),
                status.ownerID == ProcessIdentity.effectiveUserID
                    || (permissions == .ownerAndGroupReadWrite && status.permissions == permissions
                        && status.groupID == (try? directory.status())?.groupID)
            {
                do throws(Errno) {
                    try file.writeAll(bytes, at: 0)
                    try file.syncData()
                    return
                } catch {
                    throw StoreError.system(
                        error, .write, "record the high-water mark of fleet group \(group)", path: path)
                }
            }
        }
        try AtomicFile.replace(
            FleetMark.fileName, contents: .plain(bytes), in: directory, directoryPath: groupPath(group),
            permissions: permissions)
    }

    /// When this machine last took a change of fleet group `group` from its replica (the mark's
    /// modification time, nanoseconds since the epoch), or nil.
    func fleetMarkTime(_ group: GroupName) -> Int64? {
        guard let directory = try? groupDirectory(group, create: false),
            let status = try? directory.statusAt(FleetMark.fileName)
        else { return nil }
        return status.modificationNanoseconds
    }

    /// Checks that `contents` opens under the group's keys as `item`; `integrity` otherwise.
    func checkItemFile(_ contents: [UInt8], as item: ItemLocation) throws(StoreError) {
        let path = itemPath(item)
        let header = try ItemFile.header(of: contents, path: path)
        let (key, keys) = try encryptionKey(header.protectionClass, for: item, generation: header.generation)
        _ = try ItemFile.open(contents, key: key, binding: keys.binding, location: item, path: path)
    }

    /// Reads fleet group `group` from its replica anew, under its lock. With `acceptingRollback`, what
    /// etcd holds now becomes the group's state even when it is older than this machine has seen (an
    /// operator who restored etcd on purpose): a new manifest above every counter seen, then the
    /// refresh. Either way the outcome, a refusal or failure included, goes to the system log.
    public func resyncFleetGroup(_ group: GroupName, acceptingRollback: Bool) throws(StoreError) -> FleetResync {
        let who = "fleet group \(group) of the vault at \(path), by uid \(ProcessIdentity.effectiveUserID)"
        let report: FleetResync
        do throws(StoreError) {
            guard let replica = try replica(for: group) else { throw try notAFleetGroup(group) }
            report = try withWriteLock(groups: [group]) { (_) throws(StoreError) -> FleetResync in
                let cache = ReplicaCache(store: self, group: group)
                let report = try replica.resync(cache, acceptingRollback: acceptingRollback)
                let now = ContinuousClock.now
                state.withLock {
                    $0.replicaRefreshed[group] = now
                    $0.refreshedInTransaction.insert(group)
                }
                return report
            }
        } catch {
            // An operator's attempt to accept a rollback that did not happen is worth a line too.
            SystemLog.notice(
                "vault: resynchronisation of \(who)\(acceptingRollback ? ", accepting a rollback," : "") failed: "
                    + error.message)
            throw error
        }
        let previous = report.previousCounter.map(String.init) ?? "none"
        let found = report.replicaCounter.map(String.init) ?? "none that opened"
        SystemLog.notice(
            "vault: fleet group \(group) of the vault at \(path) resynchronised by uid \(ProcessIdentity.effectiveUserID)"
                + (acceptingRollback ? ", rollback accepted" : "")
                + ": this machine had seen manifest \(previous), etcd had \(found), now \(report.counter) "
                + "(\(report.itemCount) items, \(report.removedCount) that did not open removed)")
        return report
    }
}
