import VaultSystem

extension ItemEngine {
    /// Who writes through this engine, as each version it writes records it (`vault history`).
    struct Author: Sendable {
        /// The client's application identifier, or the program's name.
        let client: String?
        let userID: UInt32

        init(_ client: Client) {
            let program = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "") }
            self.client = client.applicationIdentifier ?? program.flatMap { $0.isEmpty ? nil : String($0.prefix(64)) }
            userID = ProcessIdentity.effectiveUserID
        }
    }
}
