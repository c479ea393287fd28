import Testing

@testable import VaultArchive

@Test func archiveModuleLinks() {
    _ = VaultArchive.self
}
