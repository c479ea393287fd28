import Testing

@testable import VaultSystem

@Test func links() {}
