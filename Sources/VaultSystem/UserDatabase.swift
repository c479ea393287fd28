/// Users and groups as the system's name service switch (NSS: `/etc/passwd` and `/etc/group`, LDAP,
/// SSSD, extrausers, systemd's dynamic users) knows them, as `getent` finds them. The lookups run
/// glibc's own `getent` as a child process rather than calling `getpwnam_r` here: the static `vault`
/// executable cannot load NSS modules (glibc's static NSS crashes in `libnss_systemd`), and the answers
/// must be the same in every program of the package. They are made by administrative commands, by
/// messages, and by root acting as the owner of another user's vault (two lookups per command), never
/// by a get or a put of the vault's own user; and never kept: accounts change while a service runs.
package enum UserDatabase {
    /// A user of the system.
    package struct User: Sendable, Equatable {
        /// The login name.
        package let name: String
        /// The user id.
        package let id: UInt32
        /// The primary group id.
        package let groupID: UInt32
    }

    /// A group of the system.
    package struct Group: Sendable, Equatable {
        /// The group name.
        package let name: String
        /// The group id.
        package let id: UInt32
        /// The members listed in the group's entry (not those who have it as their primary group).
        package let members: [String]
    }

    /// The user with id `id`, if the system knows one.
    package static func user(id: UInt32) -> User? {
        users(parsing: lookUp("passwd", String(id))).first { $0.id == id }
    }

    /// The user named `name`, if the system knows one.
    package static func user(named name: String) -> User? {
        guard isPlausibleName(name) else { return nil }
        return users(parsing: lookUp("passwd", name)).first { $0.name == name }
    }

    /// The group named `name`: the system's, or with `groupFile` the one that file lists (a group
    /// file standing for another machine's, in tests).
    package static func group(named name: String, groupFile: String? = nil) -> Group? {
        if let groupFile { return groups(groupFile).first { $0.name == name } }
        guard isPlausibleName(name) else { return nil }
        return groups(parsing: lookUp("group", name)).first { $0.name == name }
    }

    /// The group with id `id`: the system's, or with `groupFile` the one that file lists.
    package static func group(id: UInt32, groupFile: String? = nil) -> Group? {
        if let groupFile { return groups(groupFile).first { $0.id == id } }
        return groups(parsing: lookUp("group", String(id))).first { $0.id == id }
    }

    /// The groups a login as `user` has (`initgroups`): its primary group, then every other group the
    /// system gives it (`getent initgroups`).
    package static func groupIDs(of user: User) -> [UInt32] {
        var ids = [user.groupID]
        let answer = lookUp("initgroups", user.name)
        for field in answer.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).dropFirst() {
            if let id = decimalID(field), !ids.contains(id) { ids.append(id) }
        }
        return ids
    }

    /// Whether `name` can be a user or group name to ask about: not empty, no `:` or line break, not
    /// all digits (getent would take it as an id) and not an option to getent. Blanks are allowed:
    /// winbind names groups "domain users".
    static func isPlausibleName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix("-") && !name.utf8.allSatisfy(isDigit)
            && !name.contains { $0 == ":" || $0.isNewline }
    }

    /// `getent DATABASE KEY`'s output; empty when it finds nothing or cannot be run.
    static func lookUp(_ database: String, _ key: String) -> String {
        for getent in ["/usr/bin/getent", "/bin/getent"] {
            guard let (status, output) = try? ChildProcess.output(of: getent, arguments: [database, key]) else {
                continue
            }
            return status == 0 ? String(decoding: output, as: UTF8.self) : ""
        }
        return ""
    }

    /// The group that `text` names, as an option such as `--unix-group` gives it: a decimal gid
    /// (taken as is, whether the system knows it or not), else a name the system knows (or with
    /// `groupFile`, that file lists). The name is nil for a gid that has none. Empty text, a negative
    /// or out-of-range number, a name with ':' or a line break, and an unknown name are refused.
    package static func resolveGroup(_ text: String, groupFile: String? = nil) throws(UnixGroupError) -> (
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
            let source = groupFile.map { "in \($0)" } ?? "on this system (`getent group '\(text)'` finds none)"
            throw UnixGroupError(
                text: text, message: "no Unix group '\(text)' \(source): make it first, or give a numeric gid")
        }
        return (group.id, group.name)
    }

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
    /// lines (`+name`, `-name`, `+@netgroup`), which only NSS's compat module reads.
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
package struct UnixGroupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text that was to name a group.
    package let text: String
    /// A sentence for people that names the text.
    package let message: String

    /// The message.
    package var description: String { message }
}
