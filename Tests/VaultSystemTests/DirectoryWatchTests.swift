import Foundation
import Testing
import VaultSystem
import VaultTestSupport

/// `DirectoryWatch`: a change in a watched directory is reported once, no change is reported as none,
/// and a directory removed and made again at the path (while something still holds the old one open,
/// so the kernel has not yet reported its removal) counts as changed, and is watched anew.
@Suite struct DirectoryWatchTests {
    @Test func changesAreReportedOnceAndADirectoryMadeAgainIsWatchedAnew() throws {
        try withTemporaryDirectory("directory-watch") { t in
            let path = t.path + "/group"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            let watch = try DirectoryWatch()
            #expect(watch.changed(path), "a path not watched yet counts as changed")
            try watch.watch(path)
            #expect(!watch.changed(path))
            FileManager.default.createFile(atPath: path + "/item", contents: Data("1".utf8))
            #expect(watch.changed(path))
            #expect(!watch.changed(path), "reported once")
            try FileManager.default.moveItem(atPath: path + "/item", toPath: path + "/renamed")
            #expect(watch.changed(path))
            // Removed while held open, then made again: the old directory's removal is not reported yet.
            let held = try FileDescriptor.currentWorkingDirectory.openAt(path, [.directory])
            defer { try? held.close() }
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            _ = watch.changed(path)
            try watch.watch(path)
            #expect(!watch.changed(path))
            FileManager.default.createFile(atPath: path + "/new", contents: Data("2".utf8))
            #expect(watch.changed(path), "a change in the directory made again")
        }
    }
}
