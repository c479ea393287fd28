/// Where an item lives: its group and its id (and so its file, `groups/<group>/<id>.item`).
@usableFromInline package struct ItemLocation: Hashable, Sendable, CustomStringConvertible {
    /// The group.
    package let group: GroupName
    /// The item's id in the group.
    package let id: ItemID

    /// Item `id` of `group`.
    package init(group: GroupName, id: ItemID) {
        self.group = group
        self.id = id
    }

    /// "item <id> in group <group>", for messages.
    @usableFromInline package var description: String { "item \(id) in group \(group)" }
}
