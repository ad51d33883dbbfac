/// Comparison of secrets (verifiers, cookie bindings) in time that depends on their length only,
/// never on where they first differ.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes.
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
