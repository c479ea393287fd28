import Foundation
import Testing
import Vault
import VaultDBus

@testable import VaultSecretService

/// The parts of the Secret Service that need no bus: the item mapping, object paths, D-Bus values and
/// the session cipher.
@Suite struct SecretServiceMappingTests {
    @Test func canonicalTextRoundTripsEveryMap() {
        let maps: [[String: String]] = [
            [:], ["service": "git"], ["user": "alice", "server": "git.example", "protocol": "https"],
            ["a&b": "c=d", "%": "%25", "": ""], ["xdg:schema": "org.freedesktop.Secret.Generic", "ü": "ß"],
        ]
        for map in maps {
            let text = SecretItemMapping.canonicalText(map)
            #expect(SecretItemMapping.attributes(fromCanonicalText: text) == map, "\(map) → \(text)")
        }
        #expect(SecretItemMapping.canonicalText(["b": "2", "a": "1"]) == "a=1&b=2")
        #expect(SecretItemMapping.canonicalText(["k": "a&b=c%#"]) == "k=a%26b%3Dc%25%23")
        // The second and later items of the same attributes.
        #expect(SecretItemMapping.canonicalText(["k": "v"], copy: 2) == "k=v#2")
        #expect(SecretItemMapping.attributes(fromCanonicalText: "k=v#2") == ["k": "v"])
        #expect(SecretItemMapping.attributes(fromCanonicalText: "#3") == [:])
    }

    @Test func textsThatNoMapSpellsAreNone() {
        for text in ["app", "a=1=2", "b=2&a=1", "a=%zz", "a=1&", "a=1&a=2", "a=1#1", "a=1#02", "a=1#x", "a#2=1"] {
            #expect(SecretItemMapping.attributes(fromCanonicalText: text) == nil, "\(text)")
        }
    }

    @Test func itemsOfTheSecretServiceAndOfVaultsOwnFacesMapBothWays() throws {
        let group = try AccessGroup("secret-service")
        let made = try SecretItemMapping.vaultAttributes(["service": "git", "user": "bob"], label: "Git", group: group)
        #expect(made.service == "git" && made.account == "service=git&user=bob" && made.label == "Git")
        #expect(made.creator == SecretItemMapping.creator && made.accessGroup == group)
        #expect(SecretItemMapping.secretServiceAttributes(made) == ["service": "git", "user": "bob"])
        // Exactly service and account: the item `vault put db app` names, no creator code.
        let plain = try SecretItemMapping.vaultAttributes(["service": "db", "account": "app"], label: "", group: group)
        #expect(plain.service == "db" && plain.account == "app" && plain.creator == nil)
        #expect(SecretItemMapping.secretServiceAttributes(plain) == ["service": "db", "account": "app"])
        let second = try SecretItemMapping.vaultAttributes(
            ["service": "db", "account": "app"], label: "", group: group, copy: 2)
        #expect(second.account == "account=app&service=db#2")
        #expect(SecretItemMapping.secretServiceAttributes(second) == ["service": "db", "account": "app"])
        let schema = try SecretItemMapping.vaultAttributes(["xdg:schema": "org.git.Password"], label: "", group: group)
        #expect(schema.service == "org.git.Password")
        #expect(try SecretItemMapping.vaultAttributes([:], label: "", group: group).service == "secret-service")
        // Put by `vault put db app`: its service and account.
        let own = ItemAttributes(service: "db", account: "app")
        #expect(SecretItemMapping.secretServiceAttributes(own) == ["service": "db", "account": "app"])
        #expect(SecretItemMapping.label(own) == "db/app")
        // An account that looks like a canonical text, without the creator code, is taken as it is.
        let lookalike = ItemAttributes(service: "x", account: "a=1")
        #expect(SecretItemMapping.secretServiceAttributes(lookalike) == ["service": "x", "account": "a=1"])
        let long = String(repeating: "v", count: ItemKey.maximumLength)
        #expect(throws: ServiceError.self) {
            try SecretItemMapping.vaultAttributes(["k": long], label: "", group: group)
        }
    }

    @Test func searchesMatchEveryAttributeAsked() {
        let attributes = ["service": "git", "user": "bob"]
        #expect(SecretItemMapping.matches([:], attributes))
        #expect(SecretItemMapping.matches(["user": "bob"], attributes))
        #expect(!SecretItemMapping.matches(["user": "alice"], attributes))
        #expect(!SecretItemMapping.matches(["host": "x"], attributes))
    }

    @Test func groupNamesRoundTripThroughPathElements() throws {
        for name in ["secret-service", "a.b_c", "login", "x"] {
            let element = SecretService.pathElement(name)
            #expect(
                element.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) })
            #expect(SecretService.group(fromPathElement: element[...])?.rawValue == name)
        }
        #expect(SecretService.pathElement("secret-service") == "secret_2dservice")
        #expect(SecretService.group(fromPathElement: "_zz") == nil)
        #expect(SecretService.group(fromPathElement: "_2") == nil)
        #expect(SecretService.reference(fromPathElement: "i0") == nil)
        #expect(SecretService.reference(fromPathElement: "nothex") == nil)
    }

    @Test func dbusValuesSayTheirSignatureAndComeApart() {
        let secret = DBusValue.structure([.objectPath("/s/1"), .bytes([1]), .bytes([2, 3]), .string("text/plain")])
        #expect(secret.signature == "(oayays)")
        #expect(DBusValue.properties([("Label", .string("x"))]).signature == "a{sv}")
        #expect(DBusValue.stringDictionary(["b": "2", "a": "1"]).stringDictionaryValue == ["a": "1", "b": "2"])
        #expect(DBusValue.properties([("Label", .string("x"))]).propertiesValue?["Label"] == .string("x"))
        #expect(DBusValue.objectPaths(["/a", "/b"]).objectPathArray == ["/a", "/b"])
        #expect(DBusValue.bytes([9, 8]).byteArray == [9, 8])
        #expect(DBusValue.variant(.variant(.string("v"))).unwrapped == .string("v"))
        // Values of another type are no such thing, never a crash.
        #expect(DBusValue.string("x").byteArray == nil)
        #expect(DBusValue.array(element: "s", [.string("x")]).objectPathArray == nil)
        #expect(DBusValue.array(element: "{ss}", [.string("x")]).stringDictionaryValue == nil)
        #expect(DBusValue.array(element: "y", [.string("x")]).byteArray == nil)
    }

    @Test func theSessionCipherRoundTripsAndRefusesWhatItShould() throws {
        // A client key of 2 (g^1): the shared secret is then the provider's own public key.
        let (session, publicKey) = try SessionCrypto.agree(clientPublicKey: [2])
        #expect(publicKey.count == 128)
        for length in [0, 1, 15, 16, 17, 1000] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
            let (iv, ciphertext) = try session.encrypt(plaintext)
            #expect(iv.count == 16 && ciphertext.count == (length / 16 + 1) * 16)
            #expect(try session.decrypt(ciphertext, iv: iv) == plaintext)
        }
        let (iv, ciphertext) = try session.encrypt(Array("secret".utf8))
        #expect(throws: SessionCrypto.Failure.self) {
            try session.decrypt(ciphertext, iv: [UInt8](repeating: 0, count: 8))
        }
        #expect(throws: SessionCrypto.Failure.self) { try session.decrypt(Array(ciphertext.dropLast()), iv: iv) }
        // Keys that give a shared secret anyone knows: 0, 1, p − 1, and p itself.
        var primeMinusOne = SessionCrypto.prime
        primeMinusOne[primeMinusOne.count - 1] -= 1
        for key in [[0], [1], primeMinusOne, SessionCrypto.prime, [UInt8](repeating: 0xFF, count: 129)] {
            #expect(throws: SessionCrypto.Failure.self) { try SessionCrypto.agree(clientPublicKey: key) }
        }
        // Two sessions with the same client key agree on different keys (the provider's secret is fresh).
        let (other, otherPublicKey) = try SessionCrypto.agree(clientPublicKey: [2])
        #expect(otherPublicKey != publicKey)
        // (A wrong key's padding may pass by chance: what decrypts is never the secret.)
        #expect((try? other.decrypt(ciphertext, iv: iv)) != Array("secret".utf8))
    }

    /// Dates go to D-Bus as whole seconds (`t`): one beyond `UInt64` (a restored backup's record can hold
    /// any date) is held at its end, not a trap; before 1970 or unknown is 0.
    @Test func datesOutsideUInt64AreHeld() {
        #expect(SecretService.seconds(Date(timeIntervalSince1970: 1e300)) == .max)
        #expect(SecretService.seconds(Date(timeIntervalSince1970: 1_700_000_000.5)) == 1_700_000_000)
        #expect(SecretService.seconds(Date(timeIntervalSince1970: -5)) == 0)
        #expect(SecretService.seconds(nil) == 0)
    }
}
