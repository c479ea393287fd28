/// Users and groups as `/etc/passwd` and `/etc/group` list them, read directly: the static `vault`
/// executable cannot load NSS modules, so names that only a directory service knows are not found
/// here (give numeric ids for those).
public enum UserDatabase {
    /// One line of `/etc/passwd`.
    public struct User: Sendable, Equatable {
        /// The login name.
        public let name: String
        /// The user id.
        public let id: UInt32
        /// The primary group id.
        public let groupID: UInt32
    }

    /// One line of `/etc/group`.
    public struct Group: Sendable, Equatable {
        /// The group name.
        public let name: String
        /// The group id.
        public let id: UInt32
        /// The members listed on the line (not those who have it as their primary group).
        public let members: [String]
    }

    /// The user with id `id`, if `/etc/passwd` lists one.
    public static func user(id: UInt32, passwd: String = "/etc/passwd") -> User? {
        users(passwd).first { $0.id == id }
    }

    /// The user named `name`, if `/etc/passwd` lists one.
    public static func user(named name: String, passwd: String = "/etc/passwd") -> User? {
        users(passwd).first { $0.name == name }
    }

    /// The group named `name`, if `/etc/group` lists one.
    public static func group(named name: String, groupFile: String = "/etc/group") -> Group? {
        groups(groupFile).first { $0.name == name }
    }

    /// The group with id `id`, if `/etc/group` lists one.
    public static func group(id: UInt32, groupFile: String = "/etc/group") -> Group? {
        groups(groupFile).first { $0.id == id }
    }

    /// The groups a login as `user` has (`initgroups`): its primary group, then every group of
    /// `/etc/group` that lists it as a member.
    public static func groupIDs(of user: User, groupFile: String = "/etc/group") -> [UInt32] {
        var ids = [user.groupID]
        for group in groups(groupFile) where group.members.contains(user.name) && !ids.contains(group.id) {
            ids.append(group.id)
        }
        return ids
    }

    /// The group that `text` names, as an option such as `--unix-group` gives it: a decimal gid
    /// (taken as is, whether `groupFile` lists it or not: a directory service may know it), else a
    /// name that `groupFile` lists. The name is nil for a gid that `groupFile` does not list. Empty
    /// text, a negative or out-of-range number, a name with ':' or a line break, and a name that
    /// `groupFile` does not list are refused; the last is told to give the gid.
    public static func resolveGroup(_ text: String, groupFile: String = "/etc/group") throws(UnixGroupError) -> (
        id: UInt32, name: String?
    ) {
        guard !text.isEmpty else {
            throw UnixGroupError(text: text, message: "a Unix group is a name or a numeric gid, not empty text")
        }
        if text.utf8.allSatisfy(isDigit) {
            guard let id = decimalID(text) else {
                throw UnixGroupError(
                    text: text,
                    message: "gid '\(text)' is out of range (0 to \(UInt32.max - 1); \(UInt32.max) is no gid)")
            }
            return (id, group(id: id, groupFile: groupFile)?.name)
        }
        if text.hasPrefix("-"), text.utf8.count > 1, text.utf8.dropFirst().allSatisfy(isDigit) {
            throw UnixGroupError(text: text, message: "gid '\(text)' is negative")
        }
        guard !text.contains(where: { $0 == ":" || $0.isNewline }) else {
            throw UnixGroupError(
                text: text, message: "'\(text)' is not a Unix group name: names hold no ':' and no line break")
        }
        guard let group = group(named: text, groupFile: groupFile) else {
            throw UnixGroupError(
                text: text,
                message: "no group '\(text)' in \(groupFile) (vault reads no directory service): for a group "
                    + "from LDAP or SSSD give its numeric gid (`getent group \(text)` shows it)")
        }
        return (group.id, group.name)
    }

    static func users(_ path: String) -> [User] { users(parsing: contents(path)) }

    static func groups(_ path: String) -> [Group] { groups(parsing: contents(path)) }

    /// The users of `/etc/passwd` text; lines that lack a name, or a decimal uid and gid, are left out.
    static func users(parsing text: String) -> [User] {
        entries(text).compactMap { fields in
            guard fields.count >= 4, !fields[0].isEmpty, let id = decimalID(fields[2]),
                let group = decimalID(fields[3])
            else { return nil }
            return User(name: String(fields[0]), id: id, groupID: group)
        }
    }

    /// The groups of `/etc/group` text (name:password:gid:members); lines that lack a name or a
    /// decimal gid, or that have more than four fields, are left out.
    static func groups(parsing text: String) -> [Group] {
        entries(text).compactMap { fields in
            guard fields.count == 3 || fields.count == 4, !fields[0].isEmpty, let id = decimalID(fields[2]) else {
                return nil
            }
            let members = fields.count == 4 ? fields[3].split(separator: ",").map(String.init) : []
            return Group(name: String(fields[0]), id: id, members: members)
        }
    }

    /// The colon-separated fields of each entry of passwd or group text. As glibc's files module
    /// does, leading blanks are ignored and empty lines and `#` comments skipped; so are NIS compat
    /// lines (`+name`, `-name`, `+@netgroup`): they defer to NIS, which a static executable cannot ask.
    static func entries(_ text: String) -> [[Substring]] {
        text.split(separator: "\n").compactMap { line in
            let entry = line.drop { $0 == " " || $0 == "\t" }
            guard let first = entry.first, first != "#", first != "+", first != "-" else { return nil }
            return entry.split(separator: ":", omittingEmptySubsequences: false)
        }
    }

    /// A uid or gid in decimal: digits only (`UInt32("+5")` would take a sign), and never 4294967295,
    /// which is `(uid_t)-1` / `(gid_t)-1`, "no change" to chown and setgid rather than an id.
    static func decimalID(_ text: some StringProtocol) -> UInt32? {
        guard !text.isEmpty, text.utf8.allSatisfy(isDigit), let id = UInt32(text), id != UInt32.max else { return nil }
        return id
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// The text of a small system file; empty when it cannot be read.
    private static func contents(_ path: String) -> String {
        guard let fd = try? FileDescriptor.currentWorkingDirectory.openAt(path, [.readOnly, .nonBlocking]) else {
            return ""
        }
        defer { try? fd.close() }
        guard let bytes = try? fd.readAll(limit: 16 << 20) else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A Unix group that cannot be resolved (`UserDatabase.resolveGroup`): the text as given, and why.
public struct UnixGroupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text that was to name a group.
    public let text: String
    /// A sentence for people that names the text.
    public let message: String

    /// The message.
    public var description: String { message }
}
