internal import Glibc

/// Tells whether the entries of some directories changed since it was last asked (inotify): a file
/// made, removed, renamed in or out, or written and closed. For a long-running process that keeps
/// what it read of a directory and must know, before it answers from that, whether another process
/// changed it. The kernel queues an event as the change happens, so a change finished before `changed`
/// is asked is reported. A full queue counts as a change of every directory; a path that now names
/// another directory than the one watched (removed and made again: the kernel reports the old one's
/// removal only when its last open descriptor goes) counts as changed, and `watch` moves to the new one.
package final class DirectoryWatch {
    private let descriptor: Int32
    /// The watched paths by watch descriptor, with the device and inode watched.
    private var watches: [Int32: (path: String, device: UInt64, inode: UInt64)] = [:]
    private var changedPaths: Set<String> = []
    private var overflowed = false

    /// A watch of no directory yet (`inotify_init1`).
    package init() throws(Errno) {
        descriptor = try retryingOnInterrupt(nil) { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
    }

    deinit { close(descriptor) }

    /// The device and inode at `path`; nil when there is nothing.
    private static func identity(_ path: String) -> (UInt64, UInt64)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    /// The watch descriptor of `path` when it still names the directory watched.
    private func currentWatch(_ path: String) -> Int32? {
        guard let (watch, watched) = watches.first(where: { $0.value.path == path }) else { return nil }
        guard let (device, inode) = Self.identity(path), device == watched.device, inode == watched.inode else {
            inotify_rm_watch(descriptor, watch)
            watches.removeValue(forKey: watch)
            return nil
        }
        return watch
    }

    /// Watches the directory at `path` (again: a no-op while it is the same directory).
    package func watch(_ path: String) throws(Errno) {
        guard currentWatch(path) == nil else { return }
        let mask =
            UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO)
            | UInt32(IN_CLOSE_WRITE) | UInt32(IN_ATTRIB) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
            | UInt32(IN_ONLYDIR)
        let watch = try retryingOnInterrupt(nil) { inotify_add_watch(descriptor, path, mask) }
        // Identified after the watch: a directory that replaced it in between is then no match, and
        // counts as changed.
        let (device, inode) = Self.identity(path) ?? (0, 0)
        watches[watch] = (path, device, inode)
    }

    /// Whether the directory at `path` changed since the last call for it (or since it was first
    /// watched); true also for a path not watched.
    package func changed(_ path: String) -> Bool {
        drain()
        guard !overflowed, currentWatch(path) != nil else {
            if overflowed {
                overflowed = false
                changedPaths = Set(watches.values.map(\.path))
            }
            changedPaths.remove(path)
            return true
        }
        return changedPaths.remove(path) != nil
    }

    /// Reads every queued event.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let headerSize = MemoryLayout<inotify_event>.size
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            var offset = 0
            while offset + headerSize <= count {
                let (watch, mask, length) = buffer.withUnsafeBytes { raw in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, event.mask, Int(event.len))
                }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    overflowed = true
                } else if let path = watches[watch]?.path {
                    changedPaths.insert(path)
                    if mask & (UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_IGNORED)) != 0 {
                        // The directory itself went: a new one at the path is watched anew.
                        watches.removeValue(forKey: watch)
                    }
                }
                offset += headerSize + length
            }
        }
    }
}
