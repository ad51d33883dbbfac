#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads secrets, which never come from the configuration file itself: `<key>_file` names a file
/// holding the secret, and `AUTHGATE_<SECTION>_<KEY>` may carry it in the environment.
struct SecretReader {
    /// Reads a secret for `key` of `section`: the environment wins over `<key>_file`.
    func secret(in section: ConfigurationSection, key: String) -> String? {
        if let value = section.environmentValue(key) { return value }
        let fileKey = key + "_file"
        guard let path = section.optionalString(fileKey) else { return nil }
        let resolved = Self.resolve(path, against: section.baseDirectory)
        guard let data = FileManager.default.contents(atPath: resolved) else {
            section.report(fileKey, "cannot read \"\(resolved)\"")
            return nil
        }
        let text = String(decoding: data, as: UTF8.self).trimmed
        if text.isEmpty { section.report(fileKey, "\"\(resolved)\" is empty") }
        return text
    }

    /// An absolute path: `path` itself, or `path` relative to `directory`.
    static func resolve(_ path: String, against directory: String) -> String {
        if path.hasPrefix("/") || directory.isEmpty { return path }
        return directory.hasSuffix("/") ? directory + path : directory + "/" + path
    }
}
