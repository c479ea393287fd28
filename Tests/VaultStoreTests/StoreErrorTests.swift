import Testing
import VaultSystem

@testable import VaultStore

/// An error's one line says each thing once: the system's text follows the message only when the
/// message does not already say it.
@Suite struct StoreErrorTests {
    func failure(_ message: String, _ errno: Errno) -> StoreError {
        StoreError(.io, message, cause: SystemCallError(systemCall: .open, errno: errno))
    }

    @Test func theSystemsTextIsAddedWhenTheMessageDoesNotSayIt() {
        let error = failure("cannot open /v/groups/db/.lock", .permissionDenied)
        #expect(error.description == "cannot open /v/groups/db/.lock (Permission denied)")
    }

    @Test func theSystemsTextIsNotRepeated() {
        #expect(
            failure("cannot inspect /v: Permission denied; ask its owner", .permissionDenied).description
                == "cannot inspect /v: Permission denied; ask its owner")
        #expect(
            failure("no vault at /v (the directory does not exist)", .noSuchFileOrDirectory).description
                == "no vault at /v (the directory does not exist)")
        #expect(failure("/v/master.key is missing", .noSuchFileOrDirectory).description == "/v/master.key is missing")
        #expect(
            failure("/k already exists; never written over", .fileExists).description
                == "/k already exists; never written over")
        // Through a store error that wraps another.
        let wrapped = StoreError(.io, "the key file does not exist", cause: failure("inner", .noSuchFileOrDirectory))
        #expect(wrapped.description == "the key file does not exist")
    }
}
