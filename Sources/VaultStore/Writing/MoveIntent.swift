import VaultSystem

/// The intent note of a move: `.move.<old id>` in the old item's group directory, whose text names the
/// new place, `<group>\n<id>\n`. Written (durably) before the new item, removed after the old item is
/// gone, so that a reader, and the next writer after a crash, know where the item went (`Moves`).
struct MoveIntent: Equatable {
    static let prefix = ".move."
    /// The longest note read back.
    static let maximumByteCount = 4096

    /// The item being moved.
    let source: ItemLocation
    /// Where it goes.
    let destination: ItemLocation

    static func noteName(_ id: ItemID) -> String { id.name(prefixedBy: prefix) }

    /// The id of the item that note `name` is about, or nil for any other name.
    static func itemID(fromNoteName name: String) -> ItemID? {
        guard name.hasPrefix(prefix) else { return nil }
        return try? ItemID(String(name.dropFirst(prefix.count)))
    }

    /// The note's text.
    var contents: [UInt8] {
        Array("\(destination.group.rawValue)\n\(destination.id.rawValue)\n".utf8)
    }

    /// The new place that a note's text names, or nil for text that names none.
    static func destination(_ contents: [UInt8]) -> ItemLocation? {
        let lines = String(decoding: contents, as: UTF8.self).split(separator: "\n").map(String.init)
        guard lines.count == 2, let group = try? GroupName(lines[0]), let id = try? ItemID(lines[1]) else {
            return nil
        }
        return ItemLocation(group: group, id: id)
    }
}
