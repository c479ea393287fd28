import Foundation
import Testing
import VaultTestSupport

/// A shared group used by a member through the two library APIs a service links, each from a process
/// of its own running as a throwaway user: the C API (`vault-capi-peer c-put`/`c-get`: vault_open with
/// the group in the client, vault_put, vault_get_secret) and the `Security` module
/// (`vault-security-peer put`/`get`: SecItemAdd/SecItemUpdate/SecItemCopyMatching with
/// kSecAttrAccessGroup, the client from a VAULT_ENTITLEMENTS file). The kernel, not the library, turns a
/// non-member away: errSecMissingEntitlement (-34018), naming the group.
@Suite(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"), .serialized)
struct MemberAPITests {
    static let binaries = vaultExecutable.deletingLastPathComponent()
    static let capiPeer = binaries.appendingPathComponent("vault-capi-peer").path
    static let securityPeer = binaries.appendingPathComponent("vault-security-peer").path

    /// `withSharedGroupsVault` with copies of both peers, and an entitlements file (readable by every
    /// user) whose client is `svc` with the access group `db`.
    func withPeers(
        _ body: (_ vault: String, _ peers: Peers, _ users: [ThrowawayUser], _ groups: [ThrowawayGroup]) throws -> Void
    ) throws {
        try withSharedGroupsVault(copying: [Self.capiPeer, Self.securityPeer]) { vault, copies, users, groups in
            let entitlements = "/tmp/vault-entitlements-\(UUID().uuidString).json"
            try Data(#"{"application-identifier":"svc","keychain-access-groups":["db"]}"#.utf8)
                .write(to: URL(fileURLWithPath: entitlements))
            defer { try? FileManager.default.removeItem(atPath: entitlements) }
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: entitlements)
            try body(vault, Peers(capi: copies[0], security: copies[1], entitlements: entitlements), users, groups)
        }
    }

    /// The peers' copies and the entitlements file.
    struct Peers {
        let capi: String
        let security: String
        let entitlements: String
    }

    /// What one peer process gave back.
    struct Outcome {
        let status: Int32
        let output: String
        let errors: String
    }

    /// `vault-capi-peer c-put|c-get VAULT svc GROUP SERVICE ACCOUNT` as `user`.
    func capi(
        _ user: ThrowawayUser, _ peers: Peers, _ vault: String, _ command: String, group: String, _ service: String,
        _ account: String, input: String? = nil
    ) throws -> Outcome {
        let result = try runAs(
            user, peers.capi, [command, vault, "svc", group, service, account],
            environment: ["HOME": "/nonexistent"], input: input.map { Data($0.utf8) })
        return Outcome(
            status: result.status, output: String(decoding: result.output, as: UTF8.self), errors: result.errors)
    }

    /// `vault-security-peer get|put SERVICE ACCOUNT [GROUP]` as `user`, with VAULT_DIR=`vault` and
    /// VAULT_ENTITLEMENTS=`entitlements` (the peers' file unless given).
    func security(
        _ user: ThrowawayUser, _ peers: Peers, _ vault: String, _ command: String, _ service: String,
        _ account: String, group: String?, input: String? = nil, entitlements: String? = nil
    ) throws -> Outcome {
        let result = try runAs(
            user, peers.security, [command, service, account] + (group.map { [$0] } ?? []),
            environment: [
                "HOME": "/nonexistent", "VAULT_DIR": vault, "VAULT_ENTITLEMENTS": entitlements ?? peers.entitlements,
            ],
            input: input.map { Data($0.utf8) })
        return Outcome(
            status: result.status, output: String(decoding: result.output, as: UTF8.self), errors: result.errors)
    }

    @Test func aMemberWritesAndReadsItsGroupThroughTheCAPI() throws {
        try withPeers { vault, peers, users, _ in
            let put = try capi(users[0], peers, vault, "c-put", group: "db", "postgres", "app", input: "from-c")
            #expect(put.status == 0, "\(put.errors)")
            let get = try capi(users[0], peers, vault, "c-get", group: "db", "postgres", "app")
            #expect(get.status == 0 && get.output == "from-c", "\(get.status) \(get.errors)")
            // A second put replaces the secret (an update of the member's own file in the group).
            let again = try capi(users[0], peers, vault, "c-put", group: "db", "postgres", "app", input: "from-c-2")
            #expect(again.status == 0, "\(again.errors)")
            #expect(try capi(users[0], peers, vault, "c-get", group: "db", "postgres", "app").output == "from-c-2")
            // The same item for the owner, and for the member through the Security module.
            #expect(try ownerReads(vault, group: "db", service: "postgres", account: "app") == Data("from-c-2".utf8))
            let security = try security(users[0], peers, vault, "get", "postgres", "app", group: "db")
            #expect(security.status == 0 && security.output == "from-c-2", "\(security.errors)")
            // An item that is not there is "not found", not a refusal.
            let missing = try capi(users[0], peers, vault, "c-get", group: "db", "postgres", "nobody")
            #expect(missing.status == 44 && missing.errors.contains("-25300"), "\(missing.status) \(missing.errors)")
        }
    }

    @Test func aMemberWritesAndReadsItsGroupThroughTheSecurityModule() throws {
        try withPeers { vault, peers, users, _ in
            let add = try security(users[0], peers, vault, "put", "redis", "cache", group: "db", input: "from-sec")
            #expect(add.status == 0, "\(add.errors)")
            let get = try security(users[0], peers, vault, "get", "redis", "cache", group: "db")
            #expect(get.status == 0 && get.output == "from-sec", "\(get.status) \(get.errors)")
            // SecItemAdd finds the item and the peer updates it.
            let update = try security(users[0], peers, vault, "put", "redis", "cache", group: "db", input: "again")
            #expect(update.status == 0, "\(update.errors)")
            // Without kSecAttrAccessGroup the query searches the client's groups and finds it in db.
            let anyGroup = try security(users[0], peers, vault, "get", "redis", "cache", group: nil)
            #expect(anyGroup.status == 0 && anyGroup.output == "again", "\(anyGroup.status) \(anyGroup.errors)")
            #expect(try ownerReads(vault, group: "db", service: "redis", account: "cache") == Data("again".utf8))
            let c = try capi(users[0], peers, vault, "c-get", group: "db", "redis", "cache")
            #expect(c.status == 0 && c.output == "again", "\(c.errors)")
        }
    }

    @Test func aNonMemberIsRefusedThroughBothAPIsNamingTheGroup() throws {
        try withPeers { vault, peers, users, groups in
            #expect(try capi(users[0], peers, vault, "c-put", group: "db", "postgres", "app", input: "x").status == 0)
            // users[2] is in no group; users[1] is a member of web's Unix group only.
            for user in [users[2], users[1]] {
                for command in ["c-get", "c-put"] {
                    let refused = try capi(user, peers, vault, command, group: "db", "postgres", "app", input: "y")
                    #expect(refused.status == 1, "\(command): \(refused.status) \(refused.errors)")
                    #expect(refused.errors.contains("status -34018 (errSecMissingEntitlement"), "\(refused.errors)")
                    // The library's message names the access group and its Unix group.
                    #expect(
                        refused.errors.contains("group db") && refused.errors.contains(groups[0].name),
                        "\(refused.errors)")
                    #expect(!refused.output.contains("x"))
                }
                for command in ["get", "put"] {
                    let refused = try security(user, peers, vault, command, "postgres", "app", group: "db", input: "y")
                    #expect(refused.status == 2, "\(command): \(refused.status) \(refused.errors)")
                    #expect(
                        refused.errors.contains("in access group db: OSStatus -34018"), "\(command): \(refused.errors)")
                    #expect(refused.output.isEmpty)
                }
            }
            // Nothing the non-members tried changed the item.
            #expect(try ownerReads(vault, group: "db", service: "postgres", account: "app") == Data("x".utf8))
        }
    }

    @Test func aMemberWhoseEntitlementsLackTheGroupIsRefusedByTheLibrary() throws {
        try withPeers { vault, peers, users, _ in
            #expect(try capi(users[0], peers, vault, "c-put", group: "db", "postgres", "app", input: "x").status == 0)
            let other = "/tmp/vault-entitlements-\(UUID().uuidString).json"
            try Data(#"{"application-identifier":"svc","keychain-access-groups":["web"]}"#.utf8)
                .write(to: URL(fileURLWithPath: other))
            defer { try? FileManager.default.removeItem(atPath: other) }
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: other)
            let refused = try security(
                users[0], peers, vault, "get", "postgres", "app", group: "db", entitlements: other)
            #expect(refused.status == 2 && refused.errors.contains("OSStatus -34018"), "\(refused.errors)")
        }
    }
}
