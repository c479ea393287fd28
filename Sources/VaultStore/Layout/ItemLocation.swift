/// Where an item lives: its group and its id (and so its file, `groups/<group>/<id>.item`).
public struct ItemLocation: Hashable, Sendable, CustomStringConvertible {
    /// The group.
    public let group: GroupName
    /// The item's id in the group.
    public let id: ItemID

    /// Item `id` of `group`.
    public init(group: GroupName, id: ItemID) {
        self.group = group
        self.id = id
    }

    /// "item <id> in group <group>", for messages.
    public var description: String { "item \(id) in group \(group)" }
}
