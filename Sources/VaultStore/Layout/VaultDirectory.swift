import VaultSystem

/// Opening the vault's directories safely: every open is relative to an open directory with
/// `O_NOFOLLOW`, checked once opened, and each refusal names the path and the fix.
enum VaultDirectory {
    /// Creates the missing parents of `path` (0700) and the vault directory itself (0700); an
    /// existing directory is fine (a systemd `StateDirectory=` makes it empty). Each component is made
    /// and opened relative to its opened parent, so that a component swapped for a symlink after it was
    /// made cannot send the next `mkdir` elsewhere (root making `/tmp/NEW/vault` while a user replaces
    /// `/tmp/NEW`); an existing symlink is followed only when root or this user owns it.
    static func prepareForCreate(_ path: FilePath) throws(StoreError) {
        guard !path.string.isEmpty else { throw StoreError(.invalidName, "the vault path is empty") }
        var walked = path.isAbsolute ? "/" : "."
        var parent: FileDescriptor
        do {
            parent = try FileDescriptor.currentWorkingDirectory.openDirectoryFollowingAt(walked)
        } catch {
            throw StoreError.system(error, .open, "open the directory", path: FilePath(walked))
        }
        defer { try? parent.close() }
        for component in path.string.split(separator: "/", omittingEmptySubsequences: true).map(String.init) {
            let parentPath = FilePath(walked)
            walked = walked == "/" ? "/" + component : walked == "." ? component : walked + "/" + component
            let created: Bool
            do throws(Errno) {
                try parent.makeDirectoryAt(component, permissions: .ownerAll)
                created = true
            } catch {
                guard error == .fileExists else {
                    throw StoreError.system(error, .mkdir, "create the directory", path: FilePath(walked))
                }
                created = false
            }
            // A new directory exists durably only once its parent's entry is on disk (a parent this
            // process may search but not read was opened O_PATH, and cannot be flushed).
            if created {
                do throws(Errno) {
                    try parent.sync()
                } catch {
                    if error != .badFileDescriptor {
                        throw StoreError.system(error, .fsync, "fsync the directory", path: parentPath)
                    }
                }
            }
            let child = try openForCreate(component, in: parent, path: FilePath(walked))
            try? parent.close()
            parent = child
        }
    }

    /// `component` of a vault path being made, opened without following a link, or following one that
    /// root or this user owns (`/var/run` → `/run`); another user's link is refused, naming it.
    private static func openForCreate(_ component: String, in parent: FileDescriptor, path: FilePath)
        throws(StoreError) -> FileDescriptor
    {
        do {
            return try parent.openDirectoryAt(component)
        } catch  where error == .tooManySymbolicLinks || error == .notDirectory {
            guard let status = try? parent.statusAt(component), status.kind == .symbolicLink else {
                throw StoreError.system(error, .open, "open the directory", path: path)
            }
            let user = ProcessIdentity.effectiveUserID
            guard status.ownerID == 0 || status.ownerID == user else {
                throw StoreError(
                    .insecureFile,
                    "\(path) is a symbolic link of uid \(status.ownerID), and vault does not follow another user's "
                        + "link while it makes a vault (it could point anywhere); nothing was created there",
                    path: path.string)
            }
            do {
                return try parent.openDirectoryFollowingAt(component)
            } catch {
                throw StoreError.system(error, .open, "open the directory", path: path)
            }
        } catch {
            throw StoreError.system(error, .open, "open the directory", path: path)
        }
    }

    /// Opens the directory at `path` (outside the vault: a key file's, a backup's); a failure is
    /// `missing` for ENOENT when given, else "cannot `verb` PATH".
    static func openOutside(
        _ path: FilePath, verb: String, naming named: FilePath? = nil, missing: ((Errno) -> StoreError)? = nil
    ) throws(StoreError) -> FileDescriptor {
        do {
            return try FileDescriptor.currentWorkingDirectory.openDirectoryAt(path.string)
        } catch {
            if error == .noSuchFileOrDirectory, let missing { throw missing(error) }
            throw StoreError.system(error, .open, verb, path: named ?? path)
        }
    }

    /// Opens the vault directory after checking that it is a real directory (not a symlink, whatever
    /// trailing "/" or "/." it is named with) that belongs to the effective user (or root) and that
    /// only its owner can write, and that no parent lets another user replace it (`checkParents`).
    /// `vaultOwner` is a user trusted as root is, for a member's open of a vault of that user's.
    static func open(_ given: FilePath, vaultOwner: UInt32? = nil) throws(StoreError) -> FileDescriptor {
        let path = given.removingTrailingSeparators
        let status: FileStatus
        do {
            status = try FileDescriptor.currentWorkingDirectory.statusAt(path.string)
        } catch {
            if error == .noSuchFileOrDirectory {
                let message = "no vault at \(given) (the directory does not exist); create one with `vault init`"
                throw StoreError(.vaultNotFound, message, path: given, failed: .stat, error)
            }
            if error == .permissionDenied, let (owner, _) = VaultLocation.owner(of: given.string),
                owner != ProcessIdentity.effectiveUserID
            {
                let advice = VaultLocation.runAsOwnerAdvice(owner)
                let message = "cannot inspect \(given): \(error); the vault belongs to uid \(owner): " + advice
                throw StoreError(.permissionDenied, message, path: given, failed: .stat, error)
            }
            throw StoreError.system(error, .stat, "inspect", path: given)
        }
        try checkDirectory(status, path: given, what: "vault directory", vaultOwner: vaultOwner)
        try checkParents(of: path, given: given, vaultOwner: vaultOwner)
        let (fd, opened) = try openChecked(
            path.string, in: .currentWorkingDirectory, path: given, what: "vault directory",
            verb: "open the vault directory", vaultOwner: vaultOwner,
            linkRefusal: "vault directory \(given) was replaced by a symbolic link while it was opened")
        guard opened.inode == status.inode, opened.device == status.device else {
            try? fd.close()
            throw StoreError(
                .insecureFile, "vault directory \(given) changed while it was being opened; try again",
                path: given.string)
        }
        return fd
    }

    /// Opens a directory inside the vault, refusing a symlink or anything that is not a directory;
    /// `vaultOwner` as for `open`.
    static func openSubdirectory(_ name: String, in parent: FileDescriptor, path: FilePath, vaultOwner: UInt32? = nil)
        throws(StoreError) -> FileDescriptor
    {
        try openChecked(
            name, in: parent, path: path, what: "directory", verb: "open", vaultOwner: vaultOwner,
            linkRefusal: "\(path) is a symbolic link or not a directory; vault refuses links inside the vault"
        ).fd
    }

    /// Opens a group directory: as `openSubdirectory`, or a shared group's directory,
    /// which must be exactly `<owner>:<any group>` with mode 2770 (setgid, group-writable, nothing for
    /// others), `owner` being the vault's owner.
    static func openGroupDirectory(_ name: String, in parent: FileDescriptor, path: FilePath, owner: UInt32)
        throws(StoreError) -> FileDescriptor
    {
        let fd: FileDescriptor
        do {
            // Read access, never a search-only descriptor: a group's own users can list it, and for
            // anyone else EACCES here is the kernel saying "not a member".
            fd = try parent.openAt(name, [.readOnly, .directory])
        } catch {
            if error == .tooManySymbolicLinks || error == .notDirectory {
                throw StoreError(
                    .insecureFile,
                    "\(path) is a symbolic link or not a directory; vault refuses links inside the vault",
                    path: path, failed: .open, error)
            }
            if error == .permissionDenied, let status = try? parent.statusAt(name),
                status.permissions.rawValue != FilePermissions.sharedDirectory.rawValue
            {
                throw StoreError(
                    .notAMember,
                    "group \(path.lastComponent) is private to the vault's owner (uid \(status.ownerID)); this process "
                        + "(uid \(ProcessIdentity.effectiveUserID)) cannot use it: the owner can share it with a Unix "
                        + "group (`vault group create NAME --unix-group GROUP` for a new group)",
                    path: path, failed: .open, error)
            }
            if error == .permissionDenied, let status = try? parent.statusAt(name) {
                throw StoreError(
                    .notAMember,
                    "group \(path.lastComponent) is shared with the members of Unix group \(UnixGroupName.describe(status.groupID)); "
                        + "this process (uid \(ProcessIdentity.effectiveUserID)) is not one of them: add the user with "
                        + "`usermod -aG \(UnixGroupName.name(status.groupID) ?? String(status.groupID)) USER` (then log in "
                        + "again), or give a service `SupplementaryGroups=\(UnixGroupName.name(status.groupID) ?? String(status.groupID))`",
                    path: path, failed: .open, error)
            }
            throw StoreError.system(error, .open, "open", path: path)
        }
        do throws(StoreError) {
            let status = try status(of: fd, path: path)
            if status.permissions.rawValue & 0o7777 == FilePermissions.sharedDirectory.rawValue {
                guard status.ownerID == owner else {
                    throw StoreError(
                        .insecureFile,
                        "shared group directory \(path) belongs to uid \(status.ownerID), not to the vault's owner "
                            + "(uid \(owner))",
                        path: path.string)
                }
                return fd
            }
            try checkDirectory(status, path: path, what: "group directory", vaultOwner: owner)
            return fd
        } catch {
            try? fd.close()
            throw error
        }
    }

    /// The status of the open directory `fd`, a failure naming `path`.
    private static func status(of fd: FileDescriptor, path: FilePath) throws(StoreError) -> FileStatus {
        do {
            return try fd.status()
        } catch {
            throw StoreError.system(error, .stat, "inspect", path: path)
        }
    }

    /// The one open of a directory: `O_NOFOLLOW|O_DIRECTORY`, then the checks of `checkDirectory` on
    /// what was opened. A link (or a non-directory) at the name is `linkRefusal`.
    private static func openChecked(
        _ name: String, in parent: FileDescriptor, path: FilePath, what: String, verb: String,
        vaultOwner: UInt32? = nil, linkRefusal: String
    ) throws(StoreError) -> (fd: FileDescriptor, status: FileStatus) {
        let fd: FileDescriptor
        do {
            fd = try parent.openDirectoryAt(name)
        } catch {
            if error == .tooManySymbolicLinks || error == .notDirectory {
                throw StoreError(.insecureFile, linkRefusal, path: path, failed: .open, error)
            }
            throw StoreError.system(error, .open, verb, path: path)
        }
        do throws(StoreError) {
            let status = try status(of: fd, path: path)
            try checkDirectory(status, path: path, what: what, vaultOwner: vaultOwner)
            return (fd, status)
        } catch {
            try? fd.close()
            throw error
        }
    }

    /// Walks the directories above the vault (symlinks resolved) as OpenSSH's StrictModes does: each
    /// must belong to root or the effective user (or `vaultOwner`, for a member's open of a vault of
    /// that user's, under its home directory say), and must not be writable by group or others unless
    /// its sticky bit is set (as /tmp's is). Whoever can write a parent can rename the vault away and
    /// put a directory of their own in its place.
    static func checkParents(of path: FilePath, given: FilePath, vaultOwner: UInt32? = nil) throws(StoreError) {
        var current: FilePath
        do {
            current = FilePath(try FileDescriptor.resolvedPath(path.parent.string))
        } catch {
            throw StoreError.system(error, .open, "resolve the parent directory of", path: given)
        }
        let euid = ProcessIdentity.effectiveUserID
        while true {
            let status: FileStatus
            do {
                status = try FileDescriptor.currentWorkingDirectory.statusAt(current.string)
            } catch {
                throw StoreError.system(error, .stat, "inspect", path: current)
            }
            if status.ownerID != 0 && status.ownerID != euid && status.ownerID != vaultOwner {
                let trusted =
                    vaultOwner.map { "the vault's owner (uid \($0)), you (uid \(euid))" } ?? "you (uid \(euid))"
                throw StoreError(
                    .insecureFile,
                    "\(current), a parent of the vault \(given), belongs to uid \(status.ownerID), who could replace "
                        + "the vault; keep the vault under directories owned by \(trusted) or root",
                    path: current.string)
            }
            if !status.permissions.intersection(.groupOrOtherWrite).isEmpty && !status.isSticky {
                throw StoreError(
                    .insecureFile,
                    "\(current), a parent of the vault \(given), is writable by group or others (mode "
                        + "\(status.permissions)), who could replace the vault; run `chmod go-w \(current)`",
                    path: current.string)
            }
            if current.string == "/" { return }
            current = current.parent
        }
    }

    /// Refuses anything but a directory of the effective user, root or `vaultOwner` that group and
    /// others cannot write.
    static func checkDirectory(_ status: FileStatus, path: FilePath, what: String, vaultOwner: UInt32? = nil)
        throws(StoreError)
    {
        switch status.kind {
        case .directory: break
        case .symbolicLink:
            throw StoreError(
                .insecureFile,
                "\(what) \(path) is a symbolic link; vault refuses it (use the real directory's path)",
                path: path.string)
        default:
            throw StoreError(.insecureFile, "\(what) \(path) is not a directory", path: path.string)
        }
        try FileOwnership.requireOwner(status, rootMayOwn: true, vaultOwner: vaultOwner, path: path) { owner, user in
            // Inside the vault, a directory of another user is not the vault's (a member of a shared group
            // can put one in its directory): the advice is never to run vault as whoever put it there.
            let advice =
                what == "directory"
                ? "it is not the vault's (another user, such as a member of a shared group, put it there): look at "
                    + "it and remove it as root"
                : VaultLocation.runAsOwnerAdvice(owner)
            return "\(what) \(path) belongs to uid \(owner), not to the user running vault (uid \(user)) or root; "
                + advice
        }
        try FileOwnership.requireMode(status, without: .groupOrOtherWrite, path: path) { mode in
            "\(what) \(path) is writable by group or others (mode \(mode)); run `chmod 700 \(path)`"
        }
    }

    /// Whether `name` exists in `directory`; an error other than ENOENT is an error, never "no" (a
    /// rename skipped by mistake would mix old and new keys).
    static func exists(_ name: String, in directory: FileDescriptor, path: FilePath) throws(StoreError) -> Bool {
        do {
            _ = try directory.statusAt(name)
            return true
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw StoreError.system(error, .stat, "inspect", path: path / name)
        }
    }

    /// Removes `name` in `parent` and everything below it (files, links, directories), never following
    /// a link; nothing to do when it does not exist.
    static func removeTree(_ name: String, in parent: FileDescriptor, path: FilePath) throws(StoreError) {
        let status: FileStatus
        do {
            status = try parent.statusAt(name)
        } catch {
            if error == .noSuchFileOrDirectory { return }
            throw StoreError.system(error, .stat, "inspect", path: path / name)
        }
        guard status.kind == .directory else {
            do {
                try parent.unlinkAt(name)
            } catch {
                throw StoreError.system(error, .unlink, "remove", path: path / name)
            }
            return
        }
        let child = try openSubdirectory(name, in: parent, path: path / name)
        do throws(StoreError) {
            let names: [String]
            do {
                names = try child.entryNames()
            } catch {
                throw StoreError.system(error, .readDirectory, "list", path: path / name)
            }
            for entry in names { try removeTree(entry, in: child, path: path / name) }
        } catch {
            try? child.close()
            throw error
        }
        try? child.close()
        do {
            try parent.removeDirectoryAt(name)
        } catch {
            throw StoreError.system(error, .unlink, "remove", path: path / name)
        }
    }
}
