import NIOCore
import Synchronization

/// One value per event loop, found without a shared lock for the loops of the group it was made
/// for (the dictionary is built once and never changes). A loop outside that group (an
/// `EmbeddedEventLoop` in tests) gets its value on first use, under a lock.
///
/// Each value belongs to its loop: callers touch it only from that loop.
final class PerEventLoop<Value: AnyObject & Sendable>: Sendable {
    private let values: [ObjectIdentifier: Value]
    private let others = Mutex<[ObjectIdentifier: Value]>([:])
    private let make: @Sendable (any EventLoop) -> Value

    init(group: any EventLoopGroup, make: @escaping @Sendable (any EventLoop) -> Value) {
        var values: [ObjectIdentifier: Value] = [:]
        for loop in group.makeIterator() {
            values[ObjectIdentifier(loop)] = make(loop)
        }
        self.values = values
        self.make = make
    }

    /// The value of `loop`.
    func value(for loop: any EventLoop) -> Value {
        let id = ObjectIdentifier(loop)
        if let value = values[id] { return value }
        return others.withLock { others in
            if let value = others[id] { return value }
            let value = make(loop)
            others[id] = value
            return value
        }
    }

    /// Every value made so far, with the loop it belongs to.
    var all: [Value] {
        Array(values.values) + others.withLock { Array($0.values) }
    }
}
