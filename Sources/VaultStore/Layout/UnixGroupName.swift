import VaultSystem

/// How messages name a Unix group: by its name where the system has one, always with its gid.
enum UnixGroupName {
    static func name(_ id: UInt32) -> String? {
        UserDatabase.group(id: id)?.name
    }

    static func describe(_ id: UInt32) -> String {
        name(id).map { "\($0) (gid \(id))" } ?? "gid \(id)"
    }
}
