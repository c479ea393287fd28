import Foundation
import VaultTestSupport

/// The etcd cluster the tests use: the process's one `EtcdTestCluster` (`VAULT_TEST_ETCD`, else a
/// cluster this test process starts and stops), shared with the other test targets.
enum TestCluster {
    /// The endpoints, or the test fails saying why there is no cluster.
    static func require() throws -> [String] {
        try EtcdTestCluster.require()
    }

    /// A key prefix of one test's own: tests share the cluster.
    static func prefix(_ label: String) -> [UInt8] {
        Array("/vault-test/\(label)/\(UUID().uuidString)/".utf8)
    }
}
