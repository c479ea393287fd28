import Foundation
import Testing

@testable import VaultSystem

/// `ProcessIdentity.environmentVariables()` stands in for `ProcessInfo.processInfo.environment` in the
/// CLI: the same names and values for this process's environment.
@Suite struct ProcessEnvironmentTests {
    @Test func environmentVariablesMatchProcessInfo() {
        let ours = ProcessIdentity.environmentVariables()
        #expect(!ours.isEmpty)
        #expect(ours == ProcessInfo.processInfo.environment)
    }
}
