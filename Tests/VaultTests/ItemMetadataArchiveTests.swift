import Foundation
import Testing
import VaultArchive
import VaultTestSupport

@testable import Vault

/// `ItemMetadataArchive` writes the bytes `VaultArchive` writes for a record's metadata and reads only
/// what `VaultArchive` reads the same way; everything else is left to `VaultArchive`.
@Suite struct ItemMetadataArchiveTests {
    typealias Metadata = ItemRecordCodec.Metadata
    static let maxSize = ItemRecordCodec.metadataOptions.maxSize

    /// Texts of every kind the attributes hold: empty, ASCII, precomposed and decomposed accents, CJK,
    /// an emoji, a long one (a two-byte length) and a NUL.
    static let texts = [
        "", "svc", "acct", "\u{e9}l\u{e8}ve", "e\u{301}le\u{300}ve", "\u{540d}\u{524d}", "\u{1F511}",
        String(repeating: "x", count: 300), "a\u{0}b", "K", "\u{212A}",
    ]

    /// Dates that take each of the archive's forms: a whole number of seconds (an integer, negative
    /// too), fractions that a half float holds (0.5, -0.75, a subnormal one), a single float (100,000.5)
    /// and a double, and what `Date()` makes.
    static let dates = [
        Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_700_000_000),
        Date(timeIntervalSince1970: -86_400), Date(timeIntervalSince1970: 0.5), Date(timeIntervalSince1970: 1.25e-5),
        Date(timeIntervalSince1970: 100_000.5), Date(timeIntervalSince1970: 1_700_000_000.25),
        Date(timeIntervalSince1970: -0.75), Date(timeIntervalSince1970: 1e17), ItemRecord.now(),
    ]

    /// The two attributes the hand codec leaves to `VaultArchive`.
    static let leftToVaultArchive: Set<String> = ["accessGroup", "dataTypedKeys"]

    /// A record's metadata with a random subset of the attributes the hand codec writes.
    static func metadata(_ random: inout SeededGenerator) -> Metadata {
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &random) ? value() : nil }
        func text() -> String { texts.randomElement(using: &random)! }
        func date() -> Date { dates.randomElement(using: &random)! }
        var a = ItemAttributes()
        a.service = maybe(text())
        a.account = maybe(text())
        a.label = maybe(text())
        a.itemDescription = maybe(text())
        a.comment = maybe(text())
        a.generic = maybe(Data((0..<Int.random(in: 0..<40, using: &random)).map { UInt8($0 * 7 & 0xFF) }))
        a.creator = maybe(UInt32.random(in: 0...UInt32.max, using: &random))
        a.type = maybe([0, 23, 24, 255, 256, 65_535, 65_536, UInt32.max].randomElement(using: &random)!)
        a.isInvisible = maybe(Bool.random(using: &random))
        a.isNegative = maybe(Bool.random(using: &random))
        a.accessible = maybe(Accessibility.allCases.randomElement(using: &random)!)
        a.synchronizable = maybe(Bool.random(using: &random))
        a.server = maybe(text())
        a.securityDomain = maybe(text())
        a.protocol = maybe(text())
        a.authenticationType = maybe(text())
        a.port = maybe([0, 1, 443, 65_535, -1, -25, Int.min, Int.max].randomElement(using: &random)!)
        a.path = maybe(text())
        a.creationDate = maybe(date())
        a.modificationDate = maybe(date())
        a.genericIsText = maybe(Bool.random(using: &random))
        return Metadata(
            itemClass: ItemClass.allCases.randomElement(using: &random)!, attributes: a, created: date(),
            modified: date(), persistentID: Data((0..<[0, 16, 30].randomElement(using: &random)!).map { UInt8($0) }),
            generation: [0, 1, 23, 24, 1 << 40, UInt64.max].randomElement(using: &random)!)
    }

    /// Every attribute that the hand codec writes set (all but `leftToVaultArchive`), so that each of its
    /// keys and each kind of value is written at least once.
    static func full() -> Metadata {
        var a = ItemAttributes(service: "svc", account: "acct", label: "l", comment: "c")
        a.itemDescription = "d"
        a.generic = Data([1, 2])
        a.creator = 1
        a.type = 2
        a.isInvisible = true
        a.isNegative = false
        a.accessible = .always
        a.synchronizable = true
        a.server = "s"
        a.securityDomain = "sd"
        a.protocol = "htps"
        a.authenticationType = "dflt"
        a.port = -8
        a.path = "/"
        a.creationDate = dates[3]
        a.modificationDate = dates[5]
        a.genericIsText = false
        return Metadata(
            itemClass: .internetPassword, attributes: a, created: dates[4], modified: dates[6],
            persistentID: Data([7]), generation: 9)
    }

    /// The metadata as `VaultArchive` writes it: what two decodes must both give back.
    func archive(_ metadata: Metadata) throws -> [UInt8] {
        try VaultArchive.encode(metadata, options: ItemRecordCodec.metadataOptions)
    }

    /// The fields are `ItemAttributes`' stored properties (its synthesised coding keys), in the order
    /// of their keys in an archive of every attribute; `full()` sets all but `leftToVaultArchive`.
    @Test func theFieldsAreItemAttributesKeysInTheArchivesOrder() throws {
        let stored = Mirror(reflecting: ItemAttributes()).children.compactMap(\.label)
        let fields = ItemMetadataArchive.Field.allCases.map(\.key)
        #expect(Set(fields) == Set(stored))
        #expect(fields.count == stored.count)
        var every = Self.full().attributes
        every.accessGroup = try AccessGroup("com.example.shared")
        every.dataTypedKeys = ["acct"]
        guard case .map(let entries) = try VaultArchive.scan(VaultArchive.encode(every)) else {
            Issue.record("an archive of ItemAttributes is not a map")
            return
        }
        let archived = entries.map { entry -> String in
            guard case .text(let key) = entry.key else { return "<not text>" }
            return key
        }
        #expect(archived == fields)
        let unset = Mirror(reflecting: Self.full().attributes).children.filter {
            Mirror(reflecting: $0.value).children.isEmpty
        }
        #expect(Set(unset.compactMap(\.label)) == Self.leftToVaultArchive)
    }

    /// A date read back through the hand codec (`ItemRecord.now()` makes its dates so) is the date a
    /// round trip through `VaultArchive` gives, or nil where `VaultArchive` refuses it.
    @Test func aDateReadsBackAsThroughVaultArchive() throws {
        var random = SeededGenerator(seed: 7)
        var samples = Self.dates + [Date(), Date(timeIntervalSinceReferenceDate: 0.1), .distantPast, .distantFuture]
        for _ in 0..<5_000 {
            samples.append(Date(timeIntervalSince1970: Double.random(in: -1e11...1e11, using: &random)))
            samples.append(Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &random)))
        }
        samples.append(Date(timeIntervalSince1970: .infinity))
        samples.append(Date(timeIntervalSince1970: .nan))
        for date in samples {
            let expected = try? VaultArchive.decode(Date.self, from: VaultArchive.encode(date))
            let archived = ItemMetadataArchive.archived(date)
            #expect(archived == expected, "\(date.timeIntervalSince1970)")
            #expect(archived?.timeIntervalSince1970.bitPattern == expected?.timeIntervalSince1970.bitPattern)
        }
    }

    @Test func writesTheBytesVaultArchiveWritesAndReadsThemBack() throws {
        var random = SeededGenerator(seed: 19)
        for metadata in [Self.full()] + (0..<2_000).map({ _ in Self.metadata(&random) }) {
            let expected = try archive(metadata)
            let bytes = try #require(ItemMetadataArchive.encode(metadata, maxSize: Self.maxSize))
            #expect(bytes == expected)
            let decoded = try #require(ItemMetadataArchive.decode(bytes[...], maxSize: Self.maxSize))
            #expect(try archive(decoded) == expected)
            #expect(decoded.attributes == metadata.attributes)
            #expect(decoded.created == metadata.created && decoded.modified == metadata.modified)
        }
    }

    /// What the vault never stores in a record's attributes, a date the archive refuses and an archive
    /// over the size limit are `VaultArchive`'s to write (or refuse, with its error).
    @Test func leavesToVaultArchiveWhatItMustDecide() throws {
        var grouped = Self.full()
        grouped.attributes.accessGroup = try AccessGroup("com.example.shared")
        var typed = Self.full()
        typed.attributes.dataTypedKeys = ["acct"]
        var endless = Self.full()
        endless.modified = .distantFuture.addingTimeInterval(.infinity)
        for metadata in [grouped, typed, endless] {
            #expect(ItemMetadataArchive.encode(metadata, maxSize: Self.maxSize) == nil)
        }
        for metadata in [grouped, typed] {
            #expect(ItemMetadataArchive.decode(try archive(metadata)[...], maxSize: Self.maxSize) == nil)
        }
        #expect(throws: EncodingError.self) { try archive(endless) }
        let bytes = try archive(Self.full())
        #expect(ItemMetadataArchive.encode(Self.full(), maxSize: bytes.count - 1) == nil)
        #expect(ItemMetadataArchive.decode(bytes[...], maxSize: bytes.count - 1) == nil)
        #expect(ItemMetadataArchive.decode(bytes[...], maxSize: bytes.count) != nil)
    }

    /// An archive that `VaultArchive` reads but `encode` never writes (a null attribute) is left to it,
    /// and reads as it reads it.
    @Test func leavesOtherShapesToVaultArchive() throws {
        // {created: 1(0), modified: 1(0), itemClass: "genp", attributes: {label: null}, generation: 1,
        //  persistentID: h'00…00' (16 bytes)}
        var item = CBORWriter(capacity: 64)
        item.bytes = CBORWriter.envelope
        item.writeHead(5, 6)
        for key in ["created", "modified"] {
            item.writeText(key)
            _ = item.writeDate(Date(timeIntervalSince1970: 0))
        }
        item.writeText("itemClass")
        item.writeText("genp")
        item.writeText("attributes")
        item.writeHead(5, 1)
        item.writeText("label")
        item.bytes.append(0xF6)
        item.writeText("generation")
        item.writeHead(0, 1)
        item.writeText("persistentID")
        item.writeBytes(Data(count: ItemRecord.persistentIDByteCount))
        let decoded = try VaultArchive.decode(Metadata.self, from: item.bytes, options: ItemRecordCodec.metadataOptions)
        #expect(decoded.attributes.label == nil)
        #expect(ItemMetadataArchive.decode(item.bytes[...], maxSize: Self.maxSize) == nil)
        // Through the record codec, the same bytes read as `VaultArchive` reads them.
        let plaintext = [0, 0, 0, UInt8(item.bytes.count)] + item.bytes + Array("s".utf8)
        let record = try ItemRecordCodec.decode(plaintext, cache: nil)
        #expect(record.attributes == ItemAttributes() && record.data == Data("s".utf8))
    }

    /// Archives one change away from what `encode` writes, each of which the reader leaves to
    /// `VaultArchive`: trailing bytes, a head not in its shortest form, keys out of order or twice, a
    /// count one too high, a whole number of seconds as a float, invalid UTF-8, a code past 32 bits, an
    /// unknown class, a null.
    @Test func refusesEachKindOfDeparture() throws {
        func archive(_ build: (inout CBORWriter) -> Void) -> [UInt8] {
            var writer = CBORWriter(capacity: 96)
            writer.bytes = CBORWriter.envelope
            build(&writer)
            return writer.bytes
        }
        func metadata(
            created: (inout CBORWriter) -> Void = { _ = $0.writeDate(Date(timeIntervalSince1970: 1)) },
            itemClass: (inout CBORWriter) -> Void = { $0.writeText("genp") },
            attributes: (inout CBORWriter) -> Void = { $0.writeHead(5, 0) },
            generation: (inout CBORWriter) -> Void = { $0.writeHead(0, 1) }, count: UInt64 = 6
        ) -> [UInt8] {
            archive { w in
                w.writeHead(5, count)
                w.writeText("created")
                created(&w)
                w.writeText("modified")
                _ = w.writeDate(Date(timeIntervalSince1970: 2))
                w.writeText("itemClass")
                itemClass(&w)
                w.writeText("attributes")
                attributes(&w)
                w.writeText("generation")
                generation(&w)
                w.writeText("persistentID")
                w.writeBytes(Data([1]))
            }
        }
        let plain = metadata()
        let decoded = try #require(ItemMetadataArchive.decode(plain[...], maxSize: Self.maxSize))
        #expect(try self.archive(decoded) == plain)
        let departures: [(String, [UInt8])] = [
            ("a trailing byte", plain + [0]),
            ("a count one too high", metadata(count: 7)),
            ("a head in two bytes", metadata(generation: { $0.bytes += [0x18, 0x01] })),
            ("a whole date as a float", metadata(created: { $0.bytes += [0xC1, 0xF9, 0x3C, 0x00] })),
            (
                "a date as a double a half holds",
                metadata(created: { $0.bytes += [0xC1, 0xFB, 0x3F, 0xE0, 0, 0, 0, 0, 0, 0] })
            ),
            ("invalid UTF-8", metadata(itemClass: { $0.bytes += [0x64, 0x67, 0x65, 0x6E, 0xFF] })),
            ("an unknown class", metadata(itemClass: { $0.writeText("cert") })),
            ("a null class", metadata(itemClass: { $0.bytes.append(0xF6) })),
            (
                "a code past 32 bits",
                metadata(attributes: {
                    $0.writeHead(5, 1)
                    $0.writeText("type")
                    $0.writeHead(0, 1 << 32)
                })
            ),
            (
                "keys out of order",
                metadata(attributes: {
                    $0.writeHead(5, 2)
                    $0.writeText("service")
                    $0.writeText("s")
                    $0.writeText("account")
                    $0.writeText("a")
                })
            ),
            (
                "a key twice",
                metadata(attributes: {
                    $0.writeHead(5, 2)
                    $0.writeText("account")
                    $0.writeText("a")
                    $0.writeText("account")
                    $0.writeText("b")
                })
            ),
            (
                "an unknown key",
                metadata(attributes: {
                    $0.writeHead(5, 1)
                    $0.writeText("colour")
                    $0.writeText("blue")
                })
            ),
            (
                "a null attribute",
                metadata(attributes: {
                    $0.writeHead(5, 1)
                    $0.writeText("label")
                    $0.bytes.append(0xF6)
                })
            ),
        ]
        for (name, bytes) in departures {
            #expect(ItemMetadataArchive.decode(bytes[...], maxSize: Self.maxSize) == nil, "\(name)")
        }
    }

    /// Mutated archives: whatever the reader accepts, `VaultArchive` reads as the same metadata; and
    /// every mutant that is the archive of its own decode (so `encode` would write it) the reader reads.
    @Test func readsNothingVaultArchiveReadsOtherwise() throws {
        var random = SeededGenerator(seed: 2026)
        let seeds = [Self.full()] + (0..<40).map { _ in Self.metadata(&random) }
        var accepted = 0
        var canonical = 0
        var changedAndAccepted = 0
        for _ in 0..<40_000 {
            let original = try archive(seeds.randomElement(using: &random)!)
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &random) { Self.mutate(&bytes, &random) }
            let fast = ItemMetadataArchive.decode(bytes[...], maxSize: Self.maxSize)
            let slow = try? VaultArchive.decode(Metadata.self, from: bytes, options: ItemRecordCodec.metadataOptions)
            if let fast {
                accepted += 1
                if bytes != original { changedAndAccepted += 1 }
                let slow = try #require(slow, "VaultArchive refuses \(bytes) that the reader accepted")
                #expect(try archive(fast) == archive(slow))
                #expect(try archive(fast) == bytes)
            } else if let slow, slow.attributes.accessGroup == nil, slow.attributes.dataTypedKeys == nil,
                (try? archive(slow)) == bytes
            {
                canonical += 1
                Issue.record("the reader refused \(bytes), the archive of its own decode")
            }
        }
        // The mutations must reach the accepting side often enough to mean something, with changed bytes
        // (a text's or an integer's, a flag flipped...), not only mutations that undid themselves.
        #expect(accepted > 1_000)
        #expect(changedAndAccepted > 500)
        #expect(canonical == 0)
    }

    /// One random change: a byte replaced (by a random or a CBOR-significant value) or a bit of it
    /// flipped, a byte inserted or removed, or the archive cut short.
    static func mutate(_ bytes: inout [UInt8], _ random: inout SeededGenerator) {
        guard !bytes.isEmpty else { return }
        let index = Int.random(in: 0..<bytes.count, using: &random)
        let interesting: [UInt8] = [
            0x00, 0x01, 0x17, 0x18, 0x19, 0x1B, 0x20, 0x40, 0x60, 0x7F, 0x80, 0xA0, 0xC1, 0xF4,
            0xF5, 0xF6, 0xF9, 0xFA, 0xFB, 0xFF,
        ]
        switch Int.random(in: 0..<6, using: &random) {
        case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
        case 1: bytes[index] = interesting.randomElement(using: &random)!
        case 2: bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &random)
        case 3: bytes.insert(interesting.randomElement(using: &random)!, at: index)
        case 4: bytes.remove(at: index)
        default: bytes.removeLast(Int.random(in: 1...min(4, bytes.count), using: &random))
        }
    }
}
