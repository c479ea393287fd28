import Foundation
import Synchronization
import VaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A system user made for one test by `withThrowawayAccounts`, with its own primary group.
package struct ThrowawayUser: Sendable, Equatable {
    /// The login name (`vt-…`).
    package let name: String
    /// The user id.
    package let uid: UInt32
    /// The primary group id (the user's own group, of the same name).
    package let gid: UInt32
}

/// A system group made for one test by `withThrowawayAccounts`.
package struct ThrowawayGroup: Sendable, Equatable {
    /// The group name (`vt-…`).
    package let name: String
    /// The group id.
    package let gid: UInt32
}

/// A test-account operation that failed: what was being done, and what the tool or system said.
package struct UnixAccountError: Error, Sendable, CustomStringConvertible {
    /// A sentence for people that names the command, user, group or directory.
    package let message: String

    /// The message.
    package var description: String { message }
}

/// Whether this process can make and remove throwaway users and groups: it runs as root and the
/// shadow tools are installed.
package var canManageAccounts: Bool {
    geteuid() == 0 && ["useradd", "groupadd", "usermod", "userdel", "groupdel"].allSatisfy { tool($0) != nil }
}

/// Whether `runAs` can work here: `canManageAccounts`, and util-linux's `setpriv` is installed.
package var canRunAsOtherUsers: Bool { canManageAccounts && tool("setpriv") != nil }

/// Runs `body` with `users` new system users (each with its own group, no home directory, no login
/// shell) and `groups` new system groups, all named `vt-` and 12 random hex digits, and removes them
/// all when `body` ends, however it ends. A removal that fails is thrown after a `body` that did not
/// throw (an account left behind is a bug of the test), else written to standard error.
package func withThrowawayAccounts<R>(
    users: Int, groups: Int, _ body: ([ThrowawayUser], [ThrowawayGroup]) throws -> R
) throws -> R {
    var made = MadeAccounts()
    let result: Result<R, any Error>
    do {
        for _ in 0..<groups { made.groups.append(try makeGroup()) }
        for _ in 0..<users { made.users.append(try makeUser()) }
        result = .success(try body(made.users, made.groups))
    } catch {
        result = .failure(error)
    }
    let failures = made.remove()
    switch result {
    case .success(let value):
        guard failures.isEmpty else {
            throw UnixAccountError(message: "throwaway accounts left behind: " + failures.joined(separator: "; "))
        }
        return value
    case .failure(let error):
        for failure in failures { FileHandle.standardError.write(Data("throwaway accounts: \(failure)\n".utf8)) }
        throw error
    }
}

/// Adds `user` to `group` as a supplementary member (`usermod -aG`), as `/etc/group` then lists it.
package func addMember(_ user: ThrowawayUser, to group: ThrowawayGroup) throws {
    try runAccountTool("usermod", ["-aG", group.name, user.name])
}

/// Runs `executable` with `arguments` as `user` (its uid, primary gid and the supplementary groups that
/// `/etc/group` gives it, through `setpriv --init-groups`), with exactly `environment` plus `PATH`
/// (`environment`'s, else the usual one), and `input` (else nothing) on standard input. Returns the exit
/// status (128 + the signal for a signal), standard output and standard error. `executable` must be
/// reachable by `user`: see `makeTraversable` and `copyExecutableForOtherUsers`.
package func runAs(
    _ user: ThrowawayUser, _ executable: String, _ arguments: [String], environment: [String: String],
    input: Data? = nil
) throws -> (status: Int32, output: Data, errors: String) {
    guard let setpriv = tool("setpriv") else {
        throw UnixAccountError(
            message: "cannot run \(executable) as \(user.name): util-linux's setpriv is not installed")
    }
    var environment = environment
    if environment["PATH"] == nil { environment["PATH"] = "/usr/local/bin:/usr/bin:/bin" }
    let result = try run(
        setpriv, ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", "--", executable] + arguments,
        environment: environment, input: input)
    return (result.status, result.output, String(decoding: result.errors, as: UTF8.self))
}

/// Makes `path` reachable by any user: every directory from `/` down to `path` (`path` too, when it
/// is a directory) must be searchable by others (o+x). Directories inside the system's temp directory
/// get o+x added; any other directory is never changed, and the first that is not searchable is
/// thrown, named (e.g. a checkout under `/root`: copy the executable instead, with
/// `copyExecutableForOtherUsers`).
package func makeTraversable(_ path: String) throws {
    try makeTraversable(path, changingOnlyUnder: FileManager.default.temporaryDirectory.path)
}

/// `makeTraversable`, with the directory inside which modes may change given (for its tests).
func makeTraversable(_ path: String, changingOnlyUnder root: String) throws {
    let resolvedRoot = try realPath(root)
    let target = try realPath(path)
    var directories: [String] = []
    var directory = target
    if !isDirectory(target) { directory = (target as NSString).deletingLastPathComponent }
    while true {
        directories.append(directory)
        if directory == "/" { break }
        directory = (directory as NSString).deletingLastPathComponent
    }
    // From the top down, so that the first directory that blocks the way is the one named.
    for directory in directories.reversed() {
        var status = stat()
        guard stat(directory, &status) == 0 else {
            throw UnixAccountError(message: "cannot check \(directory) for other users: \(Errno(rawValue: errno))")
        }
        if status.st_mode & S_IXOTH != 0 { continue }
        guard directory.hasPrefix(resolvedRoot + "/") else {
            throw UnixAccountError(
                message: "\(directory) is not searchable by other users (mode "
                    + String(status.st_mode & 0o7777, radix: 8) + "), so no throwaway user can reach \(path); "
                    + "it is outside \(resolvedRoot) and stays as it is: copy the executable with "
                    + "copyExecutableForOtherUsers")
        }
        guard chmod(directory, (status.st_mode & 0o7777) | S_IXOTH) == 0 else {
            throw UnixAccountError(
                message: "cannot make \(directory) searchable by other users: \(Errno(rawValue: errno))")
        }
    }
}

/// Copies the executable at `path` into a fresh directory under `/tmp` (mode 0755, as the copy is),
/// for users that cannot reach the build directory, and returns the copy's path. The caller removes
/// the directory (the copy's parent); `withExecutableForOtherUsers` does it for a scope.
///
/// A debug build's executable still loads the Swift runtime from the toolchain, which must be
/// readable by others (it normally is).
package func copyExecutableForOtherUsers(_ path: String) throws -> String {
    var template = Array("/tmp/vault-exec-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
        throw UnixAccountError(
            message: "cannot make a directory under /tmp for a copy of \(path): \(Errno(rawValue: errno))")
    }
    let directory = String(cString: made)
    let copy = directory + "/" + (path as NSString).lastPathComponent
    do {
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy)
    } catch {
        try? FileManager.default.removeItem(atPath: directory)
        throw UnixAccountError(message: "cannot copy \(path) to \(copy) for other users: \(error)")
    }
    return copy
}

/// Runs `body` with a copy of the executable at `path` that other users can run
/// (`copyExecutableForOtherUsers`), removed when `body` ends.
package func withExecutableForOtherUsers<R>(_ path: String, _ body: (String) throws -> R) throws -> R {
    let copy = try copyExecutableForOtherUsers(path)
    defer { try? FileManager.default.removeItem(atPath: (copy as NSString).deletingLastPathComponent) }
    return try body(copy)
}

// MARK: - Making and removing accounts

/// The accounts one `withThrowawayAccounts` made so far, for their removal.
private struct MadeAccounts {
    var users: [ThrowawayUser] = []
    var groups: [ThrowawayGroup] = []

    /// Removes the users (and with them their own groups), then the groups; returns what failed.
    func remove() -> [String] {
        var failures: [String] = []
        for user in users {
            do {
                try runAccountTool("userdel", [user.name])
                // userdel removes the user's own group only where login.defs says USERGROUPS_ENAB yes.
                if UserDatabase.group(named: user.name) != nil { try runAccountTool("groupdel", [user.name]) }
            } catch {
                failures.append("\(error)")
            }
        }
        for group in groups {
            do { try runAccountTool("groupdel", [group.name]) } catch { failures.append("\(error)") }
        }
        return failures
    }
}

/// A new name for a throwaway account: `vt-` and 12 random hex digits (15 characters; useradd takes
/// up to 32), different from every other so that tests running at once do not collide.
private func throwawayName() -> String {
    "vt-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
}

private func makeGroup() throws -> ThrowawayGroup {
    let name = throwawayName()
    try runAccountTool("groupadd", ["--system", name])
    guard let group = UserDatabase.group(named: name) else {
        // Made but not in /etc/group (another database in login.defs?): remove it rather than leak it.
        try? runAccountTool("groupdel", [name])
        throw UnixAccountError(message: "groupadd made group \(name), but /etc/group does not list it")
    }
    return ThrowawayGroup(name: name, gid: group.id)
}

private func makeUser() throws -> ThrowawayUser {
    let name = throwawayName()
    try runAccountTool(
        "useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name])
    guard let user = UserDatabase.user(named: name) else {
        try? runAccountTool("userdel", [name])
        throw UnixAccountError(message: "useradd made user \(name), but /etc/passwd does not list it")
    }
    return ThrowawayUser(name: name, uid: user.id, gid: user.groupID)
}

/// One account tool at a time in this process: the shadow tools lock /etc/passwd and /etc/group, and
/// one that cannot take the lock fails ("cannot lock /etc/passwd; try again later").
private let accountTools = Mutex(())

/// Runs the shadow tool `name` with `arguments`, retrying for a while when another process holds the
/// account files' lock; throws, naming the command and its message, when it fails.
private func runAccountTool(_ name: String, _ arguments: [String]) throws {
    guard let path = tool(name) else {
        throw UnixAccountError(message: "\(name) is not installed (needed for throwaway test accounts)")
    }
    let command = ([name] + arguments).joined(separator: " ")
    try accountTools.withLock { _ in
        for attempt in 1...20 {
            let result = try run(path, arguments, environment: ProcessInfo.processInfo.environment, input: nil)
            if result.status == 0 { return }
            let message = String(decoding: result.errors, as: UTF8.self)
            if attempt < 20, message.contains("lock") {
                usleep(100_000)
                continue
            }
            throw UnixAccountError(
                message: "\(command) failed (status \(result.status)): "
                    + message.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}

// MARK: - Processes and files

/// The path of the program `name` in `PATH` or the system directories (a test's `PATH` may lack
/// `/usr/sbin`), or nil.
private func tool(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    return directories.map { $0 + "/" + name }.first { access($0, X_OK) == 0 }
}

/// Runs `executable` with exactly `environment`, `input` (else /dev/null) on standard input, and
/// returns its status and both outputs. Input and standard error are written and read on their own
/// threads, so that no pipe fills while this one waits on another.
private func run(_ executable: String, _ arguments: [String], environment: [String: String], input: Data?) throws
    -> (status: Int32, output: Data, errors: Data)
{
    // A child that exits without reading its input must fail the write, not kill the test process.
    _ = ignoreBrokenPipes
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    let output = Pipe()
    let errors = Pipe()
    let standardInput = Pipe()
    process.standardOutput = output
    process.standardError = errors
    if input == nil {
        process.standardInput = FileHandle.nullDevice
    } else {
        process.standardInput = standardInput
    }
    do {
        try process.run()
    } catch {
        throw UnixAccountError(message: "cannot start \(executable): \(error)")
    }
    let group = DispatchGroup()
    if let input {
        let handle = standardInput.fileHandleForWriting
        DispatchQueue.global().async(group: group) {
            try? handle.write(contentsOf: input)
            try? handle.close()
        }
    }
    let errorData = Mutex(Data())
    let errorHandle = errors.fileHandleForReading
    DispatchQueue.global().async(group: group) {
        let data = errorHandle.readDataToEndOfFile()
        errorData.withLock { $0 = data }
    }
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    let status =
        process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    return (status, outputData, errorData.withLock { $0 })
}

/// SIGPIPE ignored in this process, once.
private let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

private func isDirectory(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
}

/// `path` absolute, without symbolic links, `.` or `..`.
func realPath(_ path: String) throws -> String {
    guard let resolved = realpath(path, nil) else {
        throw UnixAccountError(message: "cannot resolve \(path): \(Errno(rawValue: errno))")
    }
    defer { free(resolved) }
    return String(cString: resolved)
}
