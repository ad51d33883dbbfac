extension Duration {
    /// The duration in whole nanoseconds (saturating).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }

    /// The duration in seconds, as a `Double` (for `Date` arithmetic).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
