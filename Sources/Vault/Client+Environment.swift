import FoundationEssentials

extension Client {
    /// The JSON of an entitlements file: the keys of an Apple entitlements plist.
    struct EntitlementsFile: Decodable {
        var applicationIdentifier: String?
        var keychainAccessGroups: [String]?

        enum CodingKeys: String, CodingKey {
            case applicationIdentifier = "application-identifier"
            case keychainAccessGroups = "keychain-access-groups"
        }
    }

    /// The client identity a process gets from its environment, in this order:
    /// 1. `VAULT_ENTITLEMENTS`: a JSON file with `application-identifier` and `keychain-access-groups`
    ///    (the keys of an Apple entitlements plist);
    /// 2. `VAULT_APP_ID` and `VAULT_ACCESS_GROUPS` (groups separated by commas);
    /// 3. `fallbackApplicationIdentifier` (the `Security` module passes the bundle identifier, else the
    ///    executable's name).
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        fallbackApplicationIdentifier: String?
    ) throws(VaultError) -> Client {
        if let path = environment["VAULT_ENTITLEMENTS"], !path.isEmpty {
            let file: EntitlementsFile
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                file = try JSONDecoder().decode(EntitlementsFile.self, from: data)
            } catch {
                throw VaultError(
                    .param,
                    "cannot read the entitlements file \(path) (VAULT_ENTITLEMENTS): \(error); it must be JSON with "
                        + "\"application-identifier\" and \"keychain-access-groups\"",
                    cause: error)
            }
            return try Client(
                applicationIdentifier: file.applicationIdentifier, accessGroups: file.keychainAccessGroups ?? [])
        }
        let groups = (environment["VAULT_ACCESS_GROUPS"] ?? "").split(separator: ",").map {
            String($0.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
        }.filter { !$0.isEmpty }
        if let app = environment["VAULT_APP_ID"], !app.isEmpty {
            return try Client(applicationIdentifier: app, accessGroups: groups)
        }
        return try Client(applicationIdentifier: fallbackApplicationIdentifier, accessGroups: groups)
    }
}
