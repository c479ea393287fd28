import Foundation
import Vault

/// Hidden modes for profiling the read path under `valgrind --tool=callgrind`, whose instruction
/// counts repeat on a shared machine where times do not: a bench vault that stays (`--fill`), and
/// loops of the bench's get and query over it.
///
///     vault-bench --fill DIR 100000
///     valgrind --tool=callgrind vault-bench --profile-gets DIR 100000 2000
///     valgrind --tool=callgrind vault-bench --profile-query DIR 3
///     valgrind --tool=callgrind vault-bench --profile-floor DIR 2000
enum ProfileModes {
    /// Creates the bench's vault at `path`: `items` generic passwords of service `bench`, accounts
    /// `item-0` …, as `ScaleBench` fills it.
    static func fill(path: String, items: Int) throws {
        let vault = try Vault.create(at: path, client: try Client(applicationIdentifier: "bench"))
        let secret = Data(repeating: 0x5a, count: 32)
        try vault.withBulkLoad { () throws(VaultError) in
            for i in 0..<items {
                try vault.add(
                    .genericPassword, attributes: ItemAttributes(service: "bench", account: "item-\(i)"), data: secret)
            }
        }
    }

    /// `count` gets of item `item-(items/2)` with its secret, the bench's "get by primary key".
    static func gets(path: String, items: Int, count: Int) throws {
        let vault = try Vault.open(at: path, client: try Client(applicationIdentifier: "bench"))
        let get = Query.genericPassword(service: "bench", account: "item-\(items / 2)")
        for _ in 0..<count {
            _ = try vault.copyMatching(get, returning: .data)
        }
    }

    /// `count` queries of every item returning attributes, the bench's "query by service".
    static func queries(path: String, count: Int) throws {
        let vault = try Vault.open(at: path, client: try Client(applicationIdentifier: "bench"))
        for _ in 0..<count {
            _ = try vault.copyMatching(.genericPassword(service: "bench", limit: .all), returning: .attributes)
        }
    }

    /// `count` runs of the read floor ("read + AEAD open") on a file of 227 bytes (the size of the
    /// bench's item files), made in `directory`.
    static func floor(directory: String, count: Int) throws {
        let floors = try Floors(directory: directory, fileSize: 227)
        for _ in 0..<count { try floors.readAndOpen() }
    }
}
