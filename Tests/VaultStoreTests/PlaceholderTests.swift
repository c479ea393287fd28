import Testing

@testable import VaultStore

@Test func links() {}
