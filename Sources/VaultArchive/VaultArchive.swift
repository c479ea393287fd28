/// The Codable archive that replaces NSKeyedArchiver: deterministic CBOR (RFC 8949 §4.2.1).
public enum VaultArchive {}
