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

    static func users(_ path: String) -> [User] {
        lines(path).compactMap { fields in
            guard fields.count >= 4, let id = UInt32(fields[2]), let group = UInt32(fields[3]) else { return nil }
            return User(name: String(fields[0]), id: id, groupID: group)
        }
    }

    static func groups(_ path: String) -> [Group] {
        lines(path).compactMap { fields in
            guard fields.count >= 3, let id = UInt32(fields[2]) else { return nil }
            let members = fields.count >= 4 ? fields[3].split(separator: ",").map(String.init) : []
            return Group(name: String(fields[0]), id: id, members: members)
        }
    }

    /// The colon-separated fields of each line of a small system file; nothing when it cannot be read.
    private static func lines(_ path: String) -> [[Substring]] {
        guard let fd = try? FileDescriptor.currentWorkingDirectory.openAt(path, [.readOnly, .nonBlocking]) else {
            return []
        }
        defer { try? fd.close() }
        guard let bytes = try? fd.readAll(limit: 16 << 20) else { return [] }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            $0.split(separator: ":", omittingEmptySubsequences: false)
        }
    }
}
