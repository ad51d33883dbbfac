import NIOCore

/// Runs the nonisolated code of the tasks that prefer it on one event loop, with no executor hop
/// after each resumption.
///
/// NIO's event loops are Swift concurrency's global executor here (`NIOSingletons`), but NIO runs
/// each job as if isolated to the loop's own serial executor. A nonisolated async function
/// resumed on the loop therefore starts by leaving that executor for the generic one: one more
/// enqueue and one more job, on the same loop, for every `await` that suspended (about 7% of a
/// `GET /user`'s CPU). A task started with this executor as its preference
/// (`Task(executorPreference:)`) runs its jobs as generic code on this executor, so a resumed
/// function goes on at once; its awaits on actors still hop to them and back as usual.
///
/// The gateway's requests answered in the connection's pipeline (``ApplicationPipeline``, the
/// proxy's revocation check) run their tasks on their connection's loop this way.
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
