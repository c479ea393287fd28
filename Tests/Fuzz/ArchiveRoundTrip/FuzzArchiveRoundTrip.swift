// libFuzzer target: whatever decodes must encode, without error, back to exactly the same bytes.
// Built with -DVAULT_FUZZING it exports LLVMFuzzerTestOneInput; otherwise main() replays the files and
// directories named on the command line (a corpus or crash inputs) and exits 1 on a violation.
import FoundationEssentials
internal import Glibc
import VaultArchive

#if VAULT_FUZZING
    /// libFuzzer entry point: runs the oracle on one input.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzArchiveRoundTrip(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
        if let failure = ArchiveFuzzOracle.roundTrip(Array(UnsafeBufferPointer(start: start, count: count))) {
            fatalError("round trip violated: \(failure)")
        }
        return 0
    }
#else
    @main
    enum FuzzArchiveRoundTripReplay {
        static func main() {
            var failures = 0
            var replayed = 0
            let manager = FileManager.default
            for argument in CommandLine.arguments.dropFirst() {
                var isDirectory = false
                guard manager.fileExists(atPath: argument, isDirectory: &isDirectory) else { continue }
                let paths =
                    isDirectory
                    ? ((try? manager.contentsOfDirectory(atPath: argument)) ?? []).sorted().map { argument + "/" + $0 }
                    : [argument]
                for path in paths {
                    guard let data = manager.contents(atPath: path) else { continue }
                    replayed += 1
                    if let failure = ArchiveFuzzOracle.roundTrip([UInt8](data)) {
                        print("\(path): \(failure)")
                        failures += 1
                    }
                }
            }
            print("FuzzArchiveRoundTrip: replayed \(replayed) inputs, \(failures) failures")
            if failures > 0 { exit(1) }
        }
    }
#endif
