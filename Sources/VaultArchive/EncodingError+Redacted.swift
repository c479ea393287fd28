extension EncodingError {
    /// What went wrong and where (the coding path and the description), without the value itself:
    /// `EncodingError.invalidValue` carries the value being encoded, and printing the error prints it,
    /// which must not happen when the value is a secret.
    public var redactedDescription: String {
        switch self {
        case .invalidValue(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "invalid value" + (path.isEmpty ? "" : " at \(path)") + ": \(context.debugDescription)"
        @unknown default:
            return "encoding failed"
        }
    }
}
