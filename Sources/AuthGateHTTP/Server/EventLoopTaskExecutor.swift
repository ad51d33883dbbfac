import NIOCore

/// Runs the nonisolated code of the tasks that prefer it on one event loop, with no executor hop
/// after each resumption.
///
/// NIO's event loops are Swift concurrency's global executor here (`NIOSingletons`), but NIO runs
/// each job as if isolated to the loop's own serial executor. A nonisolated async function
/// resumed on the loop therefore starts by leaving that executor for the generic one: one more
/// enqueue and one more job, on the same loop, for every `await` that suspended and for the start
/// of every task (6.5% of the gateway's samples during `GET /user`). A task started with this executor as its preference
/// (`Task(executorPreference:)`) runs its jobs as generic code on this executor, so a resumed
/// function goes on at once; its awaits on actors still hop to them and back as usual.
///
/// The tasks a client connection starts run on its loop this way: the router's answers
/// (``ApplicationPipeline``), the proxy's revocation checks and Hummingbird's handling of the
/// connection and of its HTTP/2 streams. Jobs enqueued after the loop has shut down are dropped,
/// as NIO drops its own; the gateway's loops live as long as the process.
final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop every job runs on.
    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
