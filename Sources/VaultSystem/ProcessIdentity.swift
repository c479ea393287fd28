internal import CVaultSystem
internal import Glibc

/// Facts about the running process that the vault's permission checks need.
package enum ProcessIdentity {
    /// The effective user id.
    package static var effectiveUserID: UInt32 { Glibc.geteuid() }

    /// The host's name (`gethostname(2)`), nil when it has none.
    package static var hostName: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard Glibc.gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }

    /// Whether the process may be dumped or traced (`PR_GET_DUMPABLE`).
    package static var isDumpable: Bool { vsys_get_dumpable() == 1 }

    /// Turns off core dumps and ptrace attach by the same user for this process (`PR_SET_DUMPABLE` 0);
    /// called once a key is held.
    package static func disableDumps() throws(Errno) {
        if vsys_set_dumpable(0) != 0 { throw Errno.current }
    }

    /// Sets the soft core file size limit to 0 (`RLIMIT_CORE`; the kernel and systemd-coredump go by
    /// the soft limit): with `fs.suid_dumpable=2` a crash of a non-dumpable process still writes a core
    /// (to a root-owned file or a pipe), and the heap holds decrypted secrets while they are used. The
    /// hard limit stays, so that `vault run` gives the program it starts the limit the user had. For programs:
    /// a library leaves this to its caller (see `Vault.hardenProcess`).
    package static func disableCoreFiles() throws(Errno) {
        if vsys_disable_core_files() != 0 { throw Errno.current }
    }

    /// The soft core file size limit in bytes (`UInt64.max` for unlimited).
    package static func coreFileLimit() throws(Errno) -> UInt64 {
        let limit = vsys_core_file_limit()
        if limit == -1 { throw Errno.current }
        return UInt64(bitPattern: limit)
    }

    /// Opens `/dev/null` on each standard descriptor (0, 1, 2) that is closed, before anything else is
    /// opened, so that no file of the vault ever gets one of those numbers and receives what the
    /// program writes to standard output (as OpenSSH's `sanitise_stdfd`).
    package static func openClosedStandardStreams() throws(Errno) {
        if vsys_sanitize_standard_descriptors() != 0 { throw Errno.current }
    }

    /// Takes the identity of user `userID` with primary group `groupID` and `supplementaryGroups`, for
    /// good (real, effective and saved ids): what root does before it touches a vault that belongs to
    /// another user, so that every file it leaves is that user's and the user cannot steer it into
    /// writing anywhere else. Needs root.
    package static func become(userID: UInt32, groupID: UInt32, supplementaryGroups: [UInt32]) throws(Errno) {
        let status = supplementaryGroups.withUnsafeBufferPointer {
            vsys_become_user(userID, groupID, $0.baseAddress, Int32($0.count))
        }
        if status != 0 { throw Errno.current }
    }

    /// The effective group id and the supplementary groups (`getegid`, `getgroups`): the groups that
    /// a process without root's privileges may give its files to.
    package static var groupIDs: [UInt32] {
        var ids = [Glibc.getegid()]
        let count = Glibc.getgroups(0, nil)
        guard count > 0 else { return ids }
        var supplementary = [gid_t](repeating: 0, count: Int(count))
        let got = Glibc.getgroups(count, &supplementary)
        if got > 0 { ids += supplementary.prefix(Int(got)).filter { $0 != ids[0] } }
        return ids
    }

    /// The process id (`getpid`): a forked child has its own.
    package static var processID: Int32 { vsys_process_id() }

    /// Sleeps the calling thread for `microseconds`.
    package static func sleep(microseconds: UInt32) {
        _ = Glibc.usleep(microseconds)
    }

    /// The calling thread's identity (`pthread_self`), to tell threads apart while they run.
    package static var threadID: UInt { UInt(Glibc.pthread_self()) }

    /// The command line as the kernel passed it, or the index of the first argument that is not valid
    /// UTF-8. (`CommandLine.arguments` repairs bad bytes to U+FFFD, so two different byte strings
    /// would become one name.)
    package static func commandLineArguments() -> Result<[String], InvalidArgument> {
        var arguments: [String] = []
        for index in 0..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { break }
            guard let argument = String(validatingCString: pointer) else {
                let bytes = UnsafeRawBufferPointer(start: pointer, count: Glibc.strlen(pointer))
                return .failure(
                    InvalidArgument(index: index, bytes: Array(bytes.prefix(InvalidArgument.keptByteCount))))
            }
            arguments.append(argument)
        }
        return .success(arguments)
    }

    /// The environment as a dictionary, as `ProcessInfo.processInfo.environment` gives it (an entry
    /// without `=` is skipped, a later entry of a name wins, bytes that are not UTF-8 are repaired),
    /// but split at the first `=` byte, as `getenv` reads a name, and without Foundation's work:
    /// `ProcessInfo` compares each entry character by character and was a sixth of a `vault get`'s
    /// instructions. Read it before threads start: nothing stops a `setenv` on another thread.
    package static func environmentVariables() -> [String: String] {
        guard let first = vsys_environment() else { return [:] }
        var count = 0
        while first[count] != nil { count += 1 }
        // Sized once: growing entry by entry rehashed the table six times for a shell's ~40 variables.
        var variables = [String: String](minimumCapacity: count)
        var entry = first
        while let pointer = entry.pointee {
            let bytes = UnsafeRawBufferPointer(start: pointer, count: Glibc.strlen(pointer))
            if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                variables[String(decoding: bytes[..<equals], as: UTF8.self)] = String(
                    decoding: bytes[(equals + 1)...], as: UTF8.self)
            }
            entry += 1
        }
        return variables
    }

    /// A command-line argument that is not valid UTF-8.
    package struct InvalidArgument: Error, Sendable, Equatable {
        /// Its position in argv (0 is the program name).
        package let index: Int
        /// Its first bytes (at most `keptByteCount`), for a message that shows it.
        package let bytes: [UInt8]

        /// How many bytes of the argument are kept.
        package static let keptByteCount = 64
    }
}
