#if canImport(Glibc)
    import Glibc
#endif

/// A property a target checks; on failure it writes what broke to standard error and aborts,
/// which libFuzzer reports as a crash and saves the input for (`crash-<sha1>` under the
/// artifact prefix).
public func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition() {
        let text = Array("property failed at \(file):\(line): \(message())\n".utf8)
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }
}
