internal import CNGHTTP2
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Monotonic time in nanoseconds (`CLOCK_MONOTONIC`): deadlines, timeouts and keepalives must
/// not jump when the wall clock is adjusted.
enum MonotonicTime {
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}

/// Something that owns a file descriptor registered with an `EventLoop`.
protocol EventLoopFileHandler: AnyObject {
    /// Called on the loop thread with the `epoll` event mask that fired.
    func handleEvents(_ events: UInt32)
}

/// A registration handle: `epoll_event.data` carries this id rather than the fd so an event for
/// a descriptor that was closed (and whose number was reused) in the same batch is dropped.
struct FileRegistration: Hashable {
    let id: UInt64
    let fd: Int32
}

/// A cancellable timer handle.
struct TimerID: Hashable {
    let id: UInt64
}

/// One thread running `epoll_wait` over non-blocking sockets, an `eventfd` to wake it when
/// work is submitted from other threads, and a timer heap.
///
/// Everything except `execute(_:)`, `shutdown()` and `isLoopThread` must be called on the loop
/// thread; the pool and its connections are confined to it, so they need no locks of their own.
final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: `inbox` is a Mutex; every other mutable field is touched only on the
    // loop thread (asserted in debug builds by `assertOnLoop`), `epollFD`/`wakeFD` are immutable.

    private struct Inbox {
        var tasks: [@Sendable () -> Void] = []
        var wakePending = false
        var stopped = false
    }

    private let epollFD: Int32
    private let wakeFD: Int32
    private let inbox = Mutex(Inbox())
    private let threadID = Mutex<pthread_t?>(nil)
    private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>(
        (false, []))

    // Loop-confined state.
    private var handlers: [UInt64: any EventLoopFileHandler] = [:]
    private var nextRegistrationID: UInt64 = 1
    private var timers = TimerHeap()
    private var running = true

    /// Runs on the loop thread at the end of every iteration, after all events, tasks and
    /// timers of that iteration. Set before `start()`; cleared when the loop ends.
    var iterationEndHandler: (() -> Void)?

    let name: String

    init(name: String) throws(HTTP2ClientError) {
        self.name = name
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else {
            throw HTTP2ClientError(
                .protocolError, "epoll_create1: \(String(cString: strerror(errno)))")
        }
        let wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wake >= 0 else {
            let message = String(cString: strerror(errno))
            close(epoll)
            throw HTTP2ClientError(.protocolError, "eventfd: \(message)")
        }
        epollFD = epoll
        wakeFD = wake
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = 0  // registration id 0 is the wake descriptor
        epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
    }

    deinit {
        close(wakeFD)
        close(epollFD)
    }

    /// Starts the loop thread. The thread keeps the loop alive until `shutdown()`.
    func start() {
        let thread = Thread { [self] in
            threadID.withLock { $0 = pthread_self() }
            // Foundation does not name the thread on Linux, which would otherwise show the
            // name of the thread that started it ("…default-qos") in top -H and perf.
            _ = tuisong_name_current_thread(name)
            run()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    var isLoopThread: Bool {
        guard let id = threadID.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    @inline(__always)
    func assertOnLoop() {
        assert(isLoopThread, "\(name): called off the event loop thread")
    }

    /// Runs `task` on the loop thread. Safe from any thread. Returns false (and drops the task)
    /// once the loop has stopped. Submissions in one loop iteration share one `eventfd` write.
    @discardableResult
    func execute(_ task: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, mustWake): (Bool, Bool) = inbox.withLock { inbox in
            guard !inbox.stopped else { return (false, false) }
            inbox.tasks.append(task)
            if inbox.wakePending { return (true, false) }
            inbox.wakePending = true
            return (true, true)
        }
        if mustWake {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
        return accepted
    }

    /// Stops the loop after the tasks already submitted ran, and waits for its thread to end.
    func shutdown() async {
        execute { [self] in running = false }
        if isLoopThread { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyDone = finished.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if alreadyDone { continuation.resume() }
        }
    }

    // MARK: Loop-thread API

    /// Registers `fd` for `events` (`EPOLLIN`, `EPOLLOUT`, level-triggered).
    func register(fd: Int32, events: UInt32, handler: any EventLoopFileHandler) -> FileRegistration {
        assertOnLoop()
        let id = nextRegistrationID
        nextRegistrationID += 1
        handlers[id] = handler
        var event = epoll_event()
        event.events = events
        event.data.u64 = id
        epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
        return FileRegistration(id: id, fd: fd)
    }

    func modify(_ registration: FileRegistration, events: UInt32) {
        assertOnLoop()
        var event = epoll_event()
        event.events = events
        event.data.u64 = registration.id
        epoll_ctl(epollFD, EPOLL_CTL_MOD, registration.fd, &event)
    }

    /// Removes the registration; call before closing the descriptor.
    func unregister(_ registration: FileRegistration) {
        assertOnLoop()
        handlers[registration.id] = nil
        epoll_ctl(epollFD, EPOLL_CTL_DEL, registration.fd, nil)
    }

    /// Runs `action` on the loop thread at or after the monotonic `deadline` (ns).
    @discardableResult
    func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> TimerID {
        assertOnLoop()
        return timers.insert(deadline: deadline, action: action)
    }

    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerID {
        schedule(at: MonotonicTime.now() &+ MonotonicTime.nanoseconds(delay), action)
    }

    func cancel(_ timer: TimerID) {
        assertOnLoop()
        timers.cancel(timer)
    }

    // MARK: The loop

    private func run() {
        let capacity = 128
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        while running {
            let timeout = waitTimeoutMilliseconds()
            let count = epoll_wait(epollFD, events, Int32(capacity), timeout)
            if count < 0 && errno != EINTR { break }
            if count > 0 {
                for index in 0..<Int(count) {
                    let id = events[index].data.u64
                    if id == 0 {
                        var value: UInt64 = 0
                        _ = read(wakeFD, &value, 8)
                        continue
                    }
                    // Looked up per event: an earlier handler in this batch may have closed it.
                    handlers[id]?.handleEvents(events[index].events)
                }
            }
            runSubmittedTasks()
            runDueTimers()
            iterationEndHandler?()
        }
        // Tasks submitted from now on are refused; those that raced in still run once.
        let leftovers = inbox.withLock { inbox in
            inbox.stopped = true
            return inbox.tasks.moveAll()
        }
        for task in leftovers { task() }
        iterationEndHandler?()
        iterationEndHandler = nil
        handlers.removeAll()
        timers = TimerHeap()
        let waiters = finished.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.done = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func runSubmittedTasks() {
        let tasks: [@Sendable () -> Void] = inbox.withLock { inbox in
            inbox.wakePending = false
            return inbox.tasks.isEmpty ? [] : inbox.tasks.moveAll()
        }
        for task in tasks { task() }
    }

    private func runDueTimers() {
        let now = MonotonicTime.now()
        while let action = timers.popDue(now: now) {
            action()
        }
    }

    private func waitTimeoutMilliseconds() -> Int32 {
        let pendingTasks = inbox.withLock { !$0.tasks.isEmpty }
        if pendingTasks { return 0 }
        guard let deadline = timers.nextDeadline() else { return -1 }
        let now = MonotonicTime.now()
        if deadline <= now { return 0 }
        // Rounded up so a timer never fires early and spins.
        let milliseconds = (deadline - now + 999_999) / 1_000_000
        return Int32(min(milliseconds, 60_000))
    }
}

extension Array {
    /// Returns the contents and leaves the array empty, keeping no second reference.
    fileprivate mutating func moveAll() -> [Element] {
        var taken: [Element] = []
        swap(&taken, &self)
        return taken
    }
}

/// A binary min-heap of timers keyed by deadline; cancellation is lazy (the action is dropped
/// from `actions` and the heap entry skipped when it surfaces).
struct TimerHeap {
    private struct Entry {
        let deadline: UInt64
        let id: UInt64
    }

    private var heap: [Entry] = []
    private var actions: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    mutating func nextDeadline() -> UInt64? {
        while let top = heap.first, actions[top.id] == nil {
            _ = popTop()
        }
        return heap.first?.deadline
    }

    mutating func insert(deadline: UInt64, action: @escaping () -> Void) -> TimerID {
        let id = nextID
        nextID += 1
        actions[id] = action
        heap.append(Entry(deadline: deadline, id: id))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
        return TimerID(id: id)
    }

    mutating func cancel(_ timer: TimerID) {
        actions[timer.id] = nil
    }

    mutating func popDue(now: UInt64) -> (() -> Void)? {
        while let top = heap.first {
            guard let action = actions[top.id] else {
                _ = popTop()
                continue
            }
            guard top.deadline <= now else { return nil }
            _ = popTop()
            actions[top.id] = nil
            return action
        }
        return nil
    }

    private mutating func popTop() -> Entry {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < heap.count && less(heap[left], heap[smallest]) { smallest = left }
                if right < heap.count && less(heap[right], heap[smallest]) { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }

    private func less(_ lhs: Entry, _ rhs: Entry) -> Bool {
        lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.id < rhs.id
    }
}
