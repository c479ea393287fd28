import Testing

@testable import VaultCrypto

@Test func links() {}
