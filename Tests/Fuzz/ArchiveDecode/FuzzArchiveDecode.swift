// libFuzzer target: the decoder must never trap, hang or exhaust memory, whatever the bytes.
// Built with -DVAULT_FUZZING it exports LLVMFuzzerTestOneInput; otherwise main() replays the files and
// directories named on the command line (a corpus or crash inputs).
import FoundationEssentials
import VaultArchive

#if VAULT_FUZZING
    /// libFuzzer entry point: runs the oracle on one input.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzArchiveDecode(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
        ArchiveFuzzOracle.decodeOnly(Array(UnsafeBufferPointer(start: start, count: count)))
        return 0
    }
#else
    @main
    enum FuzzArchiveDecodeReplay {
        static func main() {
            let files = FuzzReplayFiles.collect(CommandLine.arguments.dropFirst())
            for (path, bytes) in files {
                _ = path
                ArchiveFuzzOracle.decodeOnly(bytes)
            }
            print("FuzzArchiveDecode: replayed \(files.count) inputs")
        }
    }
#endif

/// Reads every regular file named, or found directly inside a directory named.
enum FuzzReplayFiles {
    static func collect(_ arguments: ArraySlice<String>) -> [(String, [UInt8])] {
        let manager = FileManager.default
        var result: [(String, [UInt8])] = []
        for argument in arguments {
            var isDirectory = false
            guard manager.fileExists(atPath: argument, isDirectory: &isDirectory) else { continue }
            let paths: [String]
            if isDirectory {
                let names = (try? manager.contentsOfDirectory(atPath: argument)) ?? []
                paths = names.sorted().map { argument + "/" + $0 }
            } else {
                paths = [argument]
            }
            for path in paths {
                if let data = manager.contents(atPath: path) { result.append((path, [UInt8](data))) }
            }
        }
        return result
    }
}
