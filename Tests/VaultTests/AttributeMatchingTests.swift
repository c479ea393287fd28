import Foundation
import Testing

@testable import Vault

/// A record answers a query's attribute filters from its own box (`ItemRecord.attributesMatch`), a
/// compact one or a full one, exactly as `ItemAttributes.matches` answers for its whole attributes.
@Suite struct AttributeMatchingTests {
    static let created = Date(timeIntervalSince1970: 1_700_000_000)
    static let modified = Date(timeIntervalSince1970: 1_700_000_500)

    static func record(_ itemClass: ItemClass, _ attributes: ItemAttributes) -> ItemRecord {
        ItemRecord(
            itemClass: itemClass, attributes: attributes, data: Data("s".utf8), created: created, modified: modified,
            persistentID: Data(repeating: 1, count: 16), generation: 1)
    }

    /// Records with only the four attributes kept inline (a compact box), and with more (a full box).
    static let records: [ItemRecord] = {
        var compact = ItemAttributes(service: "svc", account: "acct")
        compact.accessible = .afterFirstUnlock
        compact.synchronizable = false
        var labelled = ItemAttributes(service: "svc", account: "acct", label: "L", comment: "C")
        labelled.generic = Data([1, 2, 3])
        labelled.creator = 7
        labelled.isInvisible = true
        labelled.synchronizable = true
        var internet = ItemAttributes()
        internet.account = "acct"
        internet.server = "example.org"
        internet.port = 443
        internet.path = "/p"
        internet.`protocol` = "htps"
        internet.securityDomain = "realm"
        internet.authenticationType = "dflt"
        internet.itemDescription = "D"
        internet.type = 9
        internet.isNegative = false
        var synchronizedCompact = ItemAttributes(service: "svc", account: nil)
        synchronizedCompact.synchronizable = true
        return [
            record(.genericPassword, compact), record(.genericPassword, ItemAttributes()),
            record(.genericPassword, labelled), record(.internetPassword, internet),
            record(.genericPassword, synchronizedCompact),
        ]
    }()

    static let filters: [ItemAttributes] = {
        var filters = [
            ItemAttributes(), ItemAttributes(service: "svc", account: nil), ItemAttributes(service: "", account: nil),
            ItemAttributes(service: "svc", account: "other"), ItemAttributes(service: nil, account: "acct"),
            ItemAttributes(service: nil, account: nil, label: "L"),
            ItemAttributes(service: nil, account: nil, comment: "C"),
        ]
        var generic = ItemAttributes()
        generic.generic = Data([1, 2, 3])
        var creator = ItemAttributes()
        creator.creator = 7
        var invisible = ItemAttributes()
        invisible.isInvisible = true
        var accessible = ItemAttributes()
        accessible.accessible = .afterFirstUnlock
        var emptyServer = ItemAttributes()
        emptyServer.server = ""
        var server = ItemAttributes()
        server.server = "example.org"
        server.port = 443
        var noPort = ItemAttributes()
        noPort.port = 0
        var created = ItemAttributes()
        created.creationDate = Self.created
        var otherModified = ItemAttributes()
        otherModified.modificationDate = Date(timeIntervalSince1970: 1)
        filters += [generic, creator, invisible, accessible, emptyServer, server, noPort, created, otherModified]
        // Each internet attribute, with the stored value and with another.
        for (value, other) in [("htps", "ftp "), ("realm", "other"), ("dflt", "ntlm"), ("/p", "/q"), ("D", "E")] {
            for text in [value, other] {
                var filter = ItemAttributes()
                switch value {
                case "htps": filter.`protocol` = text
                case "realm": filter.securityDomain = text
                case "dflt": filter.authenticationType = text
                case "/p": filter.path = text
                default: filter.itemDescription = text
                }
                filters.append(filter)
            }
        }
        for type in [UInt32(9), 10] {
            var filter = ItemAttributes()
            filter.type = type
            filters.append(filter)
        }
        for negative in [false, true] {
            var filter = ItemAttributes()
            filter.isNegative = negative
            filters.append(filter)
        }
        return filters
    }()

    @Test(arguments: records.indices)
    func theBoxAnswersAsTheWholeAttributes(_ index: Int) {
        let record = Self.records[index]
        for filter in Self.filters {
            let expected = filter.matches(record.attributes, created: record.created, modified: record.modified)
            #expect(record.attributesMatch(filter) == expected, "filter \(filter) on record \(index)")
        }
        #expect(record.synchronizable == record.attributes.synchronizable)
    }

    @Test func aCompactRecordMatchesItsOwnAttributesAndAppleDefaults() {
        let compact = Self.records[0]
        #expect(compact.attributesMatch(ItemAttributes(service: "svc", account: "acct")))
        #expect(!compact.attributesMatch(ItemAttributes(service: nil, account: nil, label: "L")))
        var emptyServer = ItemAttributes()
        emptyServer.server = ""
        // A missing text attribute of the primary key is "" (Apple's rule), so "" matches it.
        #expect(compact.attributesMatch(emptyServer))
        #expect(Self.records[2].attributesMatch(ItemAttributes(service: nil, account: nil, label: "L")))
        var realm = ItemAttributes()
        realm.securityDomain = "realm"
        #expect(Self.records[3].attributesMatch(realm))
        #expect(!compact.attributesMatch(realm))
        #expect(Self.records[2].synchronizable == true)
        #expect(Self.records[4].synchronizable == true)
    }
}
