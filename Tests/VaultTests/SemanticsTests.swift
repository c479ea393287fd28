import Foundation
import Testing
import VaultTestSupport

@testable import Vault

@Suite struct AddTests {
    @Test func addThenFindByPrimaryKey() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let added = try vault.add(.genericPassword, attributes: genp("svc", "alice"), data: Data("pw"))
            #expect(added.attributes.accessGroup?.rawValue == "com.example.app")
            #expect(added.attributes.service == "svc")
            #expect(added.attributes.synchronizable == false)
            let found = try vault.copyMatching(.genericPassword(service: "svc", account: "alice"), returning: [.data])
            #expect(found.count == 1)
            #expect(found[0].data == Data("pw"))
        }
    }

    @Test func duplicatePrimaryKeyIsRefusedAndTheStoredItemIsUntouched() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            var first = genp("svc", "alice")
            first.label = "original"
            try vault.add(.genericPassword, attributes: first, data: Data("one"))
            var second = genp("svc", "alice")
            second.label = "other label"  // not part of the primary key
            let error = #expect(throws: VaultError.self) {
                try vault.add(.genericPassword, attributes: second, data: Data("two"))
            }
            #expect(error?.status == .duplicateItem)
            #expect(error?.message.contains("svc") == true)
            #expect(error?.message.contains("com.example.app") == true)
            let found = try vault.copyMatching(
                .genericPassword(service: "svc", account: "alice"), returning: [.data, .attributes])
            #expect(found[0].data == Data("one"))
            #expect(found[0].attributes.label == "original")
        }
    }

    @Test func missingAccountAndServiceAreEmptyForUniqueness() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.add(.genericPassword, attributes: genp("svc", nil), data: Data("a"))
            #expect(
                status { try vault.add(.genericPassword, attributes: genp("svc", ""), data: Data("b")) }
                    == .duplicateItem)
            try vault.add(.genericPassword, attributes: genp(nil, nil), data: Data("c"))
            #expect(
                status { try vault.add(.genericPassword, attributes: genp("", ""), data: Data("d")) } == .duplicateItem)
            // The stored item reports "" for the missing attributes.
            let found = try vault.copyMatching(
                .genericPassword(service: "", account: ""), returning: [.attributes, .data])
            #expect(found[0].attributes.service == "")
            #expect(found[0].attributes.account == "")
            #expect(found[0].data == Data("c"))
        }
    }

    @Test func sameKeyInAnotherGroupOrSynchronizableIsAnotherItem() throws {
        try withTemporaryVault { t in
            let vault = try t.open(groups: ["team.shared", "com.example.app"])
            try vault.add(.genericPassword, attributes: genp("svc", "a", group: "team.shared"), data: Data("shared"))
            try vault.add(.genericPassword, attributes: genp("svc", "a", group: "com.example.app"), data: Data("own"))
            var synced = genp("svc", "a", group: "team.shared")
            synced.synchronizable = true
            try vault.add(.genericPassword, attributes: synced, data: Data("synced"))
            #expect(status { try vault.add(.genericPassword, attributes: synced, data: Data("x")) } == .duplicateItem)
            // Without a group the query searches every group; default sync matching excludes synced items.
            let all = try vault.copyMatching(
                .genericPassword(service: "svc", account: "a", limit: .all), returning: [.data])
            #expect(Set(all.compactMap(\.data)) == [Data("shared"), Data("own")])
            var any = Query.genericPassword(service: "svc", account: "a", limit: .all)
            any.synchronizable = .any
            #expect(try vault.copyMatching(any).count == 3)
            var onlySynced = Query.genericPassword(service: "svc", limit: .all)
            onlySynced.synchronizable = .yes
            #expect(try vault.copyMatching(onlySynced, returning: .data).map(\.data) == [Data("synced")])
        }
    }

    @Test func internetPasswordKeyAttributesOneByOne() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            var base = ItemAttributes()
            base.account = "bob"
            base.server = "example.com"
            base.securityDomain = "realm"
            base.`protocol` = "htps"
            base.authenticationType = "dflt"
            base.port = 443
            base.path = "/login"
            try vault.add(.internetPassword, attributes: base, data: Data("base"))
            #expect(status { try vault.add(.internetPassword, attributes: base, data: Data("dup")) } == .duplicateItem)
            // Changing any one key attribute makes a different item.
            var variants: [ItemAttributes] = []
            var v = base
            v.account = "carol"
            variants.append(v)
            v = base
            v.server = "example.org"
            variants.append(v)
            v = base
            v.securityDomain = "other"
            variants.append(v)
            v = base
            v.`protocol` = "http"
            variants.append(v)
            v = base
            v.authenticationType = "ntlm"
            variants.append(v)
            v = base
            v.port = 8443
            variants.append(v)
            v = base
            v.path = "/other"
            variants.append(v)
            v = base
            v.synchronizable = true
            variants.append(v)
            for variant in variants {
                try vault.add(.internetPassword, attributes: variant, data: Data("variant"))
            }
            // A non-key attribute does not make a new item.
            v = base
            v.label = "label"
            v.comment = "comment"
            #expect(status { try vault.add(.internetPassword, attributes: v, data: Data("x")) } == .duplicateItem)
            var all = Query(itemClass: .internetPassword, limit: .all)
            all.synchronizable = .any
            #expect(try vault.copyMatching(all).count == 1 + variants.count)
            // A generic password with the same account does not collide with internet passwords.
            try vault.add(.genericPassword, attributes: genp("example.com", "bob"), data: Data("g"))
        }
    }

    @Test func attributesOfTheOtherClassAreRefused() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            var a = genp("svc", "acct")
            a.server = "example.com"
            #expect(status { try vault.add(.genericPassword, attributes: a, data: Data("x")) } == .noSuchAttribute)
            var i = ItemAttributes()
            i.service = "svc"
            #expect(status { try vault.add(.internetPassword, attributes: i, data: Data("x")) } == .noSuchAttribute)
        }
    }

    @Test func datesAndIdsAreSetByTheVault() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let before = Date()
            let added = try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("x"))
            let created = try #require(added.attributes.creationDate)
            #expect(created >= before.addingTimeInterval(-1))
            #expect(added.attributes.modificationDate == created)
        }
    }
}

@Suite struct CopyMatchingTests {
    func withSeeded<R>(_ body: (TemporaryVault, Vault) throws -> R) throws -> R {
        try withTemporaryVault { t in
            let vault = try t.open()
            for account in ["a", "b", "c"] {
                var attributes = genp("svc", account)
                attributes.label = account == "c" ? "special" : "plain"
                try vault.add(.genericPassword, attributes: attributes, data: Data("pw-\(account)"))
            }
            try vault.add(.genericPassword, attributes: genp("other", "a"), data: Data("other"))
            return try body(t, vault)
        }
    }

    @Test func limitOneGivesOneAndLimitAllGivesAnArrayEvenForOne() throws {
        try withSeeded { (t, vault) throws in
            #expect(try vault.copyMatching(.genericPassword(service: "svc")).count == 1)
            #expect(try vault.copyMatching(.genericPassword(service: "svc", limit: .all)).count == 3)
            #expect(try vault.copyMatching(.genericPassword(service: "other", limit: .all)).count == 1)
            #expect(try vault.copyMatching(.genericPassword(service: "svc", limit: .count(2))).count == 2)
        }
    }

    @Test func everyReturnCombination() throws {
        try withSeeded { (t, vault) in
            let query = Query.genericPassword(service: "svc", account: "a")
            let options: [ReturnOptions] = [
                [], [.data], [.attributes], [.persistentReference], [.data, .attributes],
                [.data, .persistentReference],
                [.attributes, .persistentReference], [.data, .attributes, .persistentReference],
            ]
            for option in options {
                let item = try #require(try vault.copyMatching(query, returning: option).first)
                #expect((item.data != nil) == option.contains(.data), "\(option)")
                if option.contains(.data) { #expect(item.data == Data("pw-a")) }
                #expect(item.attributes.account == "a")
                // The persistent reference always finds the same item.
                let again = try vault.copyMatching(
                    Query(itemClass: nil, persistentReference: item.persistentReference), returning: .data)
                #expect(again.first?.data == Data("pw-a"))
            }
        }
    }

    @Test func filtersMakeAQueryMissWhileAddStillCollides() throws {
        try withSeeded { (t, vault) throws in
            var query = Query.genericPassword(service: "svc", account: "a")
            query.attributes.label = "not-the-label"
            #expect(status { _ = try vault.copyMatching(query) } == .itemNotFound)
            var attributes = genp("svc", "a")
            attributes.label = "not-the-label"
            #expect(
                status { try vault.add(.genericPassword, attributes: attributes, data: Data("x")) } == .duplicateItem)
            query.attributes.label = "plain"
            #expect(try vault.copyMatching(query).count == 1)
            var byLabel = Query(itemClass: .genericPassword, limit: .all)
            byLabel.attributes.label = "special"
            #expect(try vault.copyMatching(byLabel).map(\.attributes.account) == ["c"])
        }
    }

    @Test func matchingIsExactAndCaseSensitive() throws {
        try withSeeded { (t, vault) in
            #expect(status { _ = try vault.copyMatching(.genericPassword(service: "SVC")) } == .itemNotFound)
            #expect(status { _ = try vault.copyMatching(.genericPassword(service: "sv")) } == .itemNotFound)
            #expect(
                status { _ = try vault.copyMatching(.genericPassword(service: "svc", account: "A")) } == .itemNotFound)
        }
    }

    @Test func notFoundNamesWhatWasSought() throws {
        try withSeeded { (t, vault) in
            let error = #expect(throws: VaultError.self) {
                _ = try vault.copyMatching(.genericPassword(service: "nope", account: "x"))
            }
            #expect(error?.status == .itemNotFound)
            #expect(error?.message.contains("\"nope\"") == true)
        }
    }

    @Test func aFullPrimaryKeyOpensOneFilePerGroup() throws {
        try withTemporaryVault { t in
            let vault = try t.open(groups: ["g1", "g2"])
            for i in 0..<50 {
                try vault.add(.genericPassword, attributes: genp("svc", "acct\(i)", group: "g1"), data: Data("\(i)"))
            }
            // Every searched group exists (a group with no directory is probed instead), and their keys
            // are read once, by the first lookup.
            for group in ["g2", "com.example.app"] {
                try vault.add(.genericPassword, attributes: genp("other", "x", group: group), data: Data("x"))
            }
            _ = try vault.copyMatching(.genericPassword(service: "svc", account: "acct8"), returning: .data)
            let counter = FileOpenCounter()
            let found = try counter.counting {
                try vault.copyMatching(.genericPassword(service: "svc", account: "acct7"), returning: .data)
            }
            #expect(found.first?.data == Data("7"))
            // One item file per searched group (g1, g2, com.example.app), nothing scanned.
            #expect(counter.opens <= 3, "opened \(counter.opens) files")
            let scan = try counter.counting {
                try vault.copyMatching(.genericPassword(service: "svc", limit: .all))
            }
            #expect(scan.count == 50)
            #expect(counter.opens >= 50)
        }
    }
}

@Suite struct UpdateTests {
    @Test func updateKeepsCreationDateAndReferenceAndBumpsTheRest() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let added = try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("v1"))
            Thread.sleep(forTimeInterval: 0.01)
            var changes = ItemChanges(data: Data("v2"))
            changes.attributes.label = "new label"
            #expect(try vault.update(.genericPassword(service: "svc", account: "a"), with: changes) == 1)
            let item = try vault.copyMatching(
                .genericPassword(service: "svc", account: "a"), returning: [.data, .attributes])[0]
            #expect(item.data == Data("v2"))
            #expect(item.attributes.label == "new label")
            #expect(item.attributes.creationDate == added.attributes.creationDate)
            #expect(item.attributes.modificationDate! > added.attributes.modificationDate!)
            #expect(item.persistentReference == added.persistentReference)
            let record = try #require(
                try vault.engine.find(.genericPassword(service: "svc", account: "a"), in: vault.client.accessGroups)
                    .first)
            #expect(record.record.generation == 2)
        }
    }

    @Test func updateChangesEveryMatch() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            for account in ["a", "b", "c"] {
                try vault.add(.genericPassword, attributes: genp("svc", account), data: Data("old"))
            }
            try vault.add(.genericPassword, attributes: genp("keep", "a"), data: Data("old"))
            #expect(try vault.update(.genericPassword(service: "svc"), with: ItemChanges(data: Data("new"))) == 3)
            let all = try vault.copyMatching(Query(itemClass: .genericPassword, limit: .all), returning: [.data])
            #expect(all.filter { $0.data == Data("new") }.count == 3)
            #expect(try vault.data(for: ItemKey(service: "keep", account: "a")) == Data("old"))
        }
    }

    @Test func aMoveOntoAnExistingPrimaryKeyIsADuplicateAndChangesNothing() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("A"))
            try vault.add(.genericPassword, attributes: genp("svc", "b"), data: Data("B"))
            var changes = ItemChanges(data: Data("changed"))
            changes.attributes.account = "b"
            let error = #expect(throws: VaultError.self) {
                try vault.update(.genericPassword(service: "svc", account: "a"), with: changes)
            }
            #expect(error?.status == .duplicateItem)
            #expect(try vault.data(for: ItemKey(service: "svc", account: "a")) == Data("A"))
            #expect(try vault.data(for: ItemKey(service: "svc", account: "b")) == Data("B"))
            // Two matches moving onto one key is also a duplicate, and nothing changes.
            var both = ItemChanges()
            both.attributes.account = "z"
            #expect(status { try vault.update(.genericPassword(service: "svc"), with: both) } == .duplicateItem)
            #expect(try vault.allKeys().map(\.account) == ["a", "b"])
        }
    }

    @Test func changingThePrimaryKeyKeepsThePersistentReference() throws {
        try withTemporaryVault { t in
            let vault = try t.open(groups: ["g1", "g2"])
            let added = try vault.add(.genericPassword, attributes: genp("svc", "a", group: "g1"), data: Data("x"))
            var changes = ItemChanges()
            changes.attributes.account = "renamed"
            try vault.update(.genericPassword(service: "svc", account: "a"), with: changes)
            #expect(
                status { _ = try vault.copyMatching(.genericPassword(service: "svc", account: "a")) } == .itemNotFound)
            // Another process (another open) finds it by the old reference.
            let other = try t.open(groups: ["g1", "g2"])
            let found = try other.copyMatching(Query(itemClass: nil, persistentReference: added.persistentReference))
            #expect(found.first?.attributes.account == "renamed")
            // Moving to another group keeps it too? No: a reference names its group, as Apple's do.
            var move = ItemChanges()
            move.attributes.accessGroup = try AccessGroup("g2")
            try vault.update(.genericPassword(service: "svc", account: "renamed"), with: move)
            let moved = try vault.copyMatching(.genericPassword(service: "svc", account: "renamed"))
            #expect(moved.first?.attributes.accessGroup?.rawValue == "g2")
            #expect(moved.first?.persistentReference != added.persistentReference)
            // No intent files or temp files are left.
            for group in ["g1", "g2"] {
                let names = try FileManager.default.contentsOfDirectory(atPath: t.path + "/groups/\(group)")
                // Item files, their generation records (rollback detection) and kept versions (the moved
                // item's last version at its old name), the group's key and lock, nothing else.
                #expect(
                    names.allSatisfy {
                        $0.hasSuffix(".item") || $0.hasPrefix(".gen.") || $0.hasPrefix(".v.") || $0 == "group.key"
                            || $0 == ".lock"
                    }, "\(names)")
            }
        }
    }

    @Test func updateOfNothingIsNotFound() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            #expect(
                status { try vault.update(.genericPassword(service: "none"), with: ItemChanges(data: Data("x"))) }
                    == .itemNotFound)
        }
    }

    @Test func datesCannotBeUpdated() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("x"))
            var changes = ItemChanges()
            changes.attributes.creationDate = Date()
            #expect(status { try vault.update(.genericPassword(service: "svc"), with: changes) } == .param)
        }
    }
}

@Suite struct DeleteTests {
    @Test func deleteRemovesEveryMatch() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            for account in ["a", "b", "c"] {
                try vault.add(.genericPassword, attributes: genp("svc", account), data: Data("x"))
            }
            try vault.add(.genericPassword, attributes: genp("keep", "a"), data: Data("x"))
            #expect(try vault.delete(.genericPassword(service: "svc")) == 3)
            #expect(status { try vault.delete(.genericPassword(service: "svc")) } == .itemNotFound)
            #expect(try vault.allKeys().map(\.service) == ["keep"])
        }
    }
}

@Suite struct AccessGroupTests {
    @Test func defaultGroupIsTheFirstAndTheAppIDIsAGroupToo() throws {
        let client = try Client(
            applicationIdentifier: "TEAM.com.example.app", accessGroups: ["TEAM.shared", "TEAM.other"])
        #expect(client.accessGroups.map(\.rawValue) == ["TEAM.shared", "TEAM.other", "TEAM.com.example.app"])
        #expect(client.defaultGroup?.rawValue == "TEAM.shared")
        let alone = try Client(applicationIdentifier: "TEAM.app")
        #expect(alone.defaultGroup?.rawValue == "TEAM.app")
    }

    @Test func itemsInOtherGroupsDoNotExistForAClient() throws {
        try withTemporaryVault { t in
            let a = try t.open(app: "app.a", groups: ["shared"])
            let b = try t.open(app: "app.b", groups: ["shared"])
            let c = try t.open(app: "app.c")
            try a.add(.genericPassword, attributes: genp("svc", "x", group: "app.a"), data: Data("private"))
            try a.add(.genericPassword, attributes: genp("svc", "y"), data: Data("shared"))  // default group: shared
            #expect(try b.data(for: ItemKey(service: "svc", account: "y")) == Data("shared"))
            #expect(try b.data(for: ItemKey(service: "svc", account: "x")) == nil)
            #expect(try c.allKeys().isEmpty)
            #expect(try a.allKeys().count == 2)
            // c can add its own svc/x: the primary key includes the group.
            try c.add(.genericPassword, attributes: genp("svc", "x"), data: Data("c's"))
            #expect(try a.data(for: ItemKey(service: "svc", account: "x")) == Data("private"))
        }
    }

    @Test func namingAGroupWithoutEntitlementFailsOnEveryOperationWithNoSideEffects() throws {
        try withTemporaryVault { t in
            let owner = try t.open(app: "owner", groups: ["secret.group"])
            try owner.add(.genericPassword, attributes: genp("svc", "a", group: "secret.group"), data: Data("s"))
            let intruder = try t.open(app: "intruder")
            let group = try AccessGroup("secret.group")
            var query = Query.genericPassword(service: "svc", account: "a", group: group)
            query.limit = .all
            let checks: [() throws -> Void] = [
                {
                    try intruder.add(
                        .genericPassword, attributes: genp("svc", "b", group: "secret.group"), data: Data("x"))
                },
                { _ = try intruder.copyMatching(query) },
                { try intruder.update(query, with: ItemChanges(data: Data("x"))) },
                { try intruder.delete(query) },
                { _ = try intruder.data(for: ItemKey(service: "svc", account: "a", group: group)) },
                { try intruder.set(Data("x"), for: ItemKey(service: "svc", account: "a", group: group)) },
            ]
            for check in checks {
                do {
                    try check()
                    Issue.record("an operation on a group without entitlement succeeded")
                } catch let error as VaultError {
                    #expect(error.status == .missingEntitlement)
                    #expect(error.message.contains("secret.group"))
                    #expect(error.message.contains("intruder"))
                }
            }
            // Moving one's own item into a group one is not entitled to is refused too.
            try intruder.add(.genericPassword, attributes: genp("mine", "a"), data: Data("m"))
            var move = ItemChanges()
            move.attributes.accessGroup = group
            #expect(
                status { try intruder.update(.genericPassword(service: "mine"), with: move) } == .missingEntitlement)
            // Nothing changed.
            #expect(try owner.allKeys().map(\.account) == ["a"])
            #expect(try owner.data(for: ItemKey(service: "svc", account: "a")) == Data("s"))
            #expect(try intruder.allKeys().map(\.service) == ["mine"])
            // A persistent reference into the other group finds nothing.
            let reference = try owner.copyMatching(.genericPassword(service: "svc"), returning: .persistentReference)[0]
                .persistentReference
            #expect(
                status { _ = try intruder.copyMatching(Query(itemClass: nil, persistentReference: reference)) }
                    == .itemNotFound)
        }
    }

    @Test func aClientWithNoGroupsIsMissingEntitlement() throws {
        try withTemporaryVault { t in
            let vault = try t.open(try Client(applicationIdentifier: nil))
            #expect(
                status { try vault.add(.genericPassword, attributes: genp("s", "a"), data: Data("x")) }
                    == .missingEntitlement)
            #expect(status { _ = try vault.copyMatching(.genericPassword(service: "s")) } == .missingEntitlement)
        }
    }

    @Test func invalidGroupNamesAreParameterErrorsThatNameThem() {
        let error = #expect(throws: VaultError.self) { _ = try AccessGroup("../etc") }
        #expect(error?.status == .param)
        #expect(error?.message.contains("../etc") == true)
        #expect(status { _ = try Client(applicationIdentifier: "bad name") } == .param)
    }
}
