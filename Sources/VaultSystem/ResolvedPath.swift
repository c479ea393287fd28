internal import Glibc

extension FileDescriptor {
    /// The absolute path of `path` with every symbolic link, `.` and `..` resolved (`realpath(3)`);
    /// the file must exist.
    package static func resolvedPath(_ path: String) throws(Errno) -> String {
        guard let resolved = path.withCString({ Glibc.realpath($0, nil) }) else { throw Errno.current }
        defer { Glibc.free(resolved) }
        return String(cString: resolved)
    }
}
