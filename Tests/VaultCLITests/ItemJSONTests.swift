import Foundation
import Testing
import Vault

/// The keys of `ls --json` and `get --json` are an interface (docs/CLI.md has their table): these pin
/// the exact key sets of each kind of item, so that a rename or a new key breaks a test.
@Suite struct ItemJSONTests {
    static let always = ["kind", "group", "account", "created", "modified"]
    static let secretKeys = ["secret", "secretEncoding"]

    /// Every attribute the JSON can carry: label and comment from the CLI, the description from the
    /// library (the CLI cannot set it).
    func addFullItems(_ scratch: Scratch) throws {
        #expect(try scratch.run(["put", "--label", "L", "--comment", "C", "db", "app"], input: Data("s")).status == 0)
        #expect(
            try scratch.run(
                [
                    "put", "--server", "mail.example", "--protocol", "imaps", "--port", "993", "--path", "/inbox",
                    "--label", "L", "--comment", "C", "alice",
                ], input: Data("s")
            ).status == 0)
        // The key is the vault's master.key (a test run has no VAULT_KEY_FILE or systemd credential).
        let vault = try Vault.open(at: scratch.vault, client: try Client(applicationIdentifier: "vault"))
        var described = ItemAttributes(service: "described", account: "")
        described.itemDescription = "D"
        try vault.add(.genericPassword, attributes: described, data: Data("s"))
        var internet = ItemAttributes()
        internet.server = "described.example"
        internet.itemDescription = "D"
        try vault.add(.internetPassword, attributes: internet, data: Data("s"))
    }

    func listed(_ scratch: Scratch) throws -> [[String: Any]] {
        let ls = try scratch.run(["ls", "--json"])
        #expect(ls.status == 0, "\(ls.errors)")
        return try #require(try ls.json() as? [[String: Any]])
    }

    func keys(_ object: [String: Any]?) -> Set<String> { Set(object?.keys.map { $0 } ?? []) }

    @Test func aGenericPasswordHasExactlyTheseKeys() throws {
        try withScratch(initialized: true) { scratch in
            try addFullItems(scratch)
            try scratch.run(["put", "bare"], input: Data("s"))
            let items = try listed(scratch)
            let full = items.first { $0["service"] as? String == "db" }
            #expect(keys(full) == Set(Self.always + ["service", "label", "comment"]))
            #expect(full?["kind"] as? String == "generic")
            #expect(full?["account"] as? String == "app")
            #expect(full?["label"] as? String == "L" && full?["comment"] as? String == "C")
            let described = items.first { $0["service"] as? String == "described" }
            #expect(keys(described) == Set(Self.always + ["service", "description"]))
            #expect(described?["description"] as? String == "D")
            let bare = items.first { $0["service"] as? String == "bare" }
            #expect(keys(bare) == Set(Self.always + ["service"]))
            #expect(bare?["account"] as? String == "")
            let get = try scratch.run(["get", "--json", "db", "app"]).json() as? [String: Any]
            #expect(keys(get) == Set(Self.always + ["service", "label", "comment"] + Self.secretKeys))
        }
    }

    @Test func anInternetPasswordHasExactlyTheseKeys() throws {
        try withScratch(initialized: true) { scratch in
            try addFullItems(scratch)
            try scratch.run(["put", "--server", "bare.example"], input: Data("s"))
            let items = try listed(scratch)
            let full = items.first { $0["server"] as? String == "mail.example" }
            #expect(keys(full) == Set(Self.always + ["server", "protocol", "port", "path", "label", "comment"]))
            #expect(full?["kind"] as? String == "internet")
            #expect(full?["protocol"] as? String == "imaps")
            #expect(full?["port"] as? Int == 993)
            #expect(full?["path"] as? String == "/inbox")
            let described = items.first { $0["server"] as? String == "described.example" }
            #expect(keys(described) == Set(Self.always + ["server", "description"]))
            let bare = items.first { $0["server"] as? String == "bare.example" }
            #expect(keys(bare) == Set(Self.always + ["server"]))
            let get = try scratch.run(["get", "--json", "--server", "bare.example"]).json() as? [String: Any]
            #expect(keys(get) == Set(Self.always + ["server"] + Self.secretKeys))
        }
    }

    /// The fields that mean the same for both kinds have the same names and forms.
    @Test func sharedFieldsHaveOneForm() throws {
        try withScratch(initialized: true) { scratch in
            try addFullItems(scratch)
            let items = try listed(scratch)
            #expect(Set(items.compactMap { $0["kind"] as? String }) == ["generic", "internet"])
            for item in items {
                #expect(item["group"] as? String == "vault")
                for date in ["created", "modified"] {
                    let text = try #require(item[date] as? String)
                    #expect(try Date.ISO8601FormatStyle().parse(text) <= Date(), "\(date): \(text)")
                }
                // A generic password never has an internet field, and an internet one never a service.
                if item["kind"] as? String == "generic" {
                    #expect(
                        item["server"] == nil && item["protocol"] == nil && item["port"] == nil && item["path"] == nil)
                } else {
                    #expect(item["service"] == nil)
                }
            }
        }
    }
}
