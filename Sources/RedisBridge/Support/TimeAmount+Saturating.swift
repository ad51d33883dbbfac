import NIOCore

extension TimeAmount {
    /// `self + other`, held at the largest (or smallest) amount instead of trapping on overflow:
    /// the client adds timeouts its caller chose (the public API takes any `TimeAmount`).
    func addingSaturated(_ other: TimeAmount) -> TimeAmount {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(other.nanoseconds)
        guard overflow else { return .nanoseconds(sum) }
        return .nanoseconds(other.nanoseconds > 0 ? .max : .min)
    }
}
