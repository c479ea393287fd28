/// A path as the vault builds it and names it in messages (in the manner of swift-system's
/// `FilePath`): components joined by "/", nothing resolved or normalised, so that a message shows the
/// path the user gave with the vault's own names after it.
package struct FilePath: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The path as text.
    package let string: String

    /// The path `string`, as given.
    package init(_ string: String) {
        self.string = string
    }

    /// The path `value`, as given.
    package init(stringLiteral value: String) {
        self.string = value
    }

    /// This path with `component` (a name, or a relative path) after a "/".
    package func appending(_ component: String) -> FilePath {
        FilePath(string + "/" + component)
    }

    /// `path.appending(component)`.
    package static func / (path: FilePath, component: String) -> FilePath {
        path.appending(component)
    }

    /// The directory part: "a/b" → "a", "b" → ".", "/b" → "/".
    package var parent: FilePath {
        guard let slash = string.lastIndex(of: "/") else { return "." }
        let directory = String(string[..<slash])
        return FilePath(directory.isEmpty ? "/" : directory)
    }

    /// The last component: "a/b" → "b", "b" → "b".
    package var lastComponent: String {
        guard let slash = string.lastIndex(of: "/") else { return string }
        return String(string[string.index(after: slash)...])
    }

    /// The path without trailing "/" and "/." components, which would make the kernel follow a symlink
    /// in the last component that `O_NOFOLLOW` and `AT_SYMLINK_NOFOLLOW` exist to refuse.
    package var removingTrailingSeparators: FilePath {
        var result = Substring(string)
        while result.count > 1 {
            if result.hasSuffix("/") {
                result = result.dropLast()
            } else if result.hasSuffix("/.") {
                result = result.dropLast(2)
                if result.isEmpty { result = "/" }
            } else {
                break
            }
        }
        return FilePath(String(result))
    }

    /// Whether the path starts at the root.
    package var isAbsolute: Bool { string.hasPrefix("/") }

    /// The path as text.
    package var description: String { string }
}
