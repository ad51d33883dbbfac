import Dispatch

/// Runs async work to completion from libFuzzer's synchronous callback. The harness thread is
/// not an event loop, so blocking it is fine; the gateway never does this.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    guard let value = box.value else { fatalError("runBlocking: the task ended without a value") }
    return value
}

/// The task's result, handed over through the semaphore (which orders the write before the read).
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
