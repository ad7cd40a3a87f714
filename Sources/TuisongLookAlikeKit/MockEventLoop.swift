internal import CNGHTTP2
internal import CTuisongShims
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// epoll tokens: those below `firstConnection` name the loop's own descriptors; a connection's
/// token is its id plus `firstConnection`.
enum EventLoopToken {
    static let wake: UInt64 = 0
    static let listener: UInt64 = 1
    static let firstConnection: UInt64 = 16
}

/// Deadlines for the latency fault, earliest first.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        var connectionID: UInt64
        var streamID: Int32

        func fires(before other: Entry) -> Bool {
            (deadline, sequence) < (other.deadline, other.sequence)
        }
    }

    private var entries: [Entry] = []
    private var sequence: UInt64 = 0

    var isEmpty: Bool { entries.isEmpty }
    var earliestDeadline: UInt64? { entries.first?.deadline }

    mutating func insert(deadline: UInt64, connectionID: UInt64, streamID: Int32) {
        sequence += 1
        entries.append(Entry(deadline: deadline, sequence: sequence, connectionID: connectionID, streamID: streamID))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].fires(before: entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(now: UInt64) -> Entry? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count && entries[left].fires(before: entries[smallest]) { smallest = left }
                if right < entries.count && entries[right].fires(before: entries[smallest]) { smallest = right }
                if smallest == parent { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}

/// One epoll thread serving many connections with non-blocking sockets and non-blocking TLS.
///
/// `@unchecked Sendable`: the server hands the loop to its thread and keeps a reference to wake
/// and join it. Only `inbox` (a Mutex), `stopRequested` (an atomic) and the immutable descriptors
/// are touched from other threads; every other member is used only on the loop's own thread
/// (or before that thread starts / after it was joined).
final class MockEventLoop: @unchecked Sendable {
    static let readBufferSize = 64 * 1024

    let core: MockServerCore
    let index: Int
    private let epollFD: Int32
    private let wakeFD: Int32
    private let inbox = Mutex<[Int32]>([])
    private let stopRequested = Atomic<Bool>(false)
    /// Set on loop 0 only, before the thread starts; connections are dealt round-robin.
    private var listenFD: Int32 = -1
    private var siblings: [MockEventLoop] = []
    private var nextSibling = 0
    private var connections: [UInt64: HTTP2ServerConnection] = [:]
    private var timers = TimerHeap()
    private var faultsGeneration: Int
    private var faults: ActiveFaults
    let readBuffer: UnsafeMutableRawPointer
    private var thread: pthread_t?

    init(core: MockServerCore, index: Int) throws(LookAlikeServerError) {
        self.core = core
        self.index = index
        (faultsGeneration, faults) = core.faultBoard.snapshot()
        let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw .posix("epoll_create1") }
        let wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            let error = LookAlikeServerError.posix("eventfd")
            Glibc.close(epollFD)
            throw error
        }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        try register(wakeFD, token: EventLoopToken.wake, writable: false)
    }

    deinit {
        Glibc.close(epollFD)
        Glibc.close(wakeFD)
        readBuffer.deallocate()
    }

    /// Makes this loop accept on `listenFD` and share connections with `siblings` (itself included).
    func adoptListener(_ listenFD: Int32, siblings: [MockEventLoop]) throws(LookAlikeServerError) {
        self.listenFD = listenFD
        self.siblings = siblings
        try register(listenFD, token: EventLoopToken.listener, writable: false)
    }

    // MARK: Thread

    func start() throws(LookAlikeServerError) {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(
            &thread, nil,
            { context in
                let loop = Unmanaged<MockEventLoop>.fromOpaque(context!).takeRetainedValue()
                _ = tuisong_name_current_thread("look-alike \(loop.index)")
                loop.run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<MockEventLoop>.fromOpaque(context).release()
            throw .posix("pthread_create", errno: result)
        }
        self.thread = thread
    }

    /// Asks the loop to close its connections and exit; safe from any thread.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    /// Waits for the thread to finish; call once, from the thread that called `start()`.
    func join() {
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, MemoryLayout<UInt64>.size)
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while !stopRequested.load(ordering: .acquiring) {
            let count = events.withUnsafeMutableBufferPointer { buffer in
                epoll_wait(epollFD, buffer.baseAddress, Int32(buffer.count), timeoutMilliseconds())
            }
            if count < 0 {
                if errno == EINTR { continue }
                core.logger.error(
                    "look-alike server: an event loop stops",
                    metadata: ["loop": "\(index)", "error": "\(LookAlikeServerError.posix("epoll_wait"))"])
                break
            }
            for event in events.prefix(Int(count)) {
                switch event.data.u64 {
                case EventLoopToken.wake: drainWake()
                case EventLoopToken.listener: acceptConnections()
                case let token:
                    connections[token - EventLoopToken.firstConnection]?.handle(events: event.events)
                }
            }
            fireDueTimers()
        }
        for connection in Array(connections.values) { connection.closeGracefully() }
        connections.removeAll()
        for socket in inbox.withLock({ fds in
            defer { fds.removeAll() }
            return fds
        }) { Glibc.close(socket) }
    }

    private func timeoutMilliseconds() -> Int32 {
        guard let deadline = timers.earliestDeadline else { return -1 }
        let now = MonotonicClock.nanoseconds()
        guard deadline > now else { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }

    // MARK: Descriptors

    private func register(_ fd: Int32, token: UInt64, writable: Bool) throws(LookAlikeServerError) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (writable ? EPOLLOUT.rawValue : 0)
        event.data.u64 = token
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else { throw .posix("epoll_ctl") }
    }

    func updateInterest(socket: Int32, token connectionID: UInt64, writable: Bool) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (writable ? EPOLLOUT.rawValue : 0)
        event.data.u64 = connectionID + EventLoopToken.firstConnection
        _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, socket, &event)
    }

    private func drainWake() {
        var value: UInt64 = 0
        _ = Glibc.read(wakeFD, &value, MemoryLayout<UInt64>.size)
        for socket in inbox.withLock({ fds in
            defer { fds.removeAll() }
            return fds
        }) {
            adopt(socket)
        }
    }

    private func acceptConnections() {
        while true {
            // accept4 hides behind _GNU_SOURCE in Swift's Glibc module; two fcntl calls do the same.
            let socket = accept(listenFD, nil, nil)
            if socket < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED: continue
                default:
                    // EMFILE and friends: leave the backlog for the next wake-up rather than spin.
                    core.logger.warning(
                        "look-alike server: accepting a connection failed",
                        metadata: ["error": "\(LookAlikeServerError.posix("accept4"))"])
                    return
                }
            }
            _ = fcntl(socket, F_SETFD, FD_CLOEXEC)
            _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
            let target = siblings.isEmpty ? self : siblings[nextSibling % siblings.count]
            nextSibling += 1
            if target === self {
                adopt(socket)
            } else {
                target.inbox.withLock { $0.append(socket) }
                target.wake()
            }
        }
    }

    private func adopt(_ socket: Int32) {
        var one: Int32 = 1
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let id = core.nextConnectionID()
        do {
            let connection = try HTTP2ServerConnection(id: id, socket: socket, loop: self)
            try register(socket, token: id + EventLoopToken.firstConnection, writable: false)
            connections[id] = connection
            core.recorder.update {
                $0.connectionsAccepted += 1
                $0.connectionsOpen += 1
            }
        } catch {
            core.logger.error("look-alike server: cannot adopt a connection", metadata: ["error": "\(error)"])
            Glibc.close(socket)
        }
    }

    func connectionClosed(_ connection: HTTP2ServerConnection) {
        if connections.removeValue(forKey: connection.id) != nil {
            core.recorder.update { $0.connectionsOpen -= 1 }
        }
    }

    // MARK: Faults and timers

    /// The faults in force; re-read only after `setFaults` bumped the generation.
    func currentFaults() -> ActiveFaults {
        if core.faultBoard.generation != faultsGeneration {
            (faultsGeneration, faults) = core.faultBoard.snapshot()
        }
        return faults
    }

    func schedule(after nanoseconds: UInt64, connectionID: UInt64, streamID: Int32) {
        timers.insert(
            deadline: MonotonicClock.nanoseconds() + nanoseconds, connectionID: connectionID, streamID: streamID)
    }

    private func fireDueTimers() {
        guard !timers.isEmpty else { return }
        let now = MonotonicClock.nanoseconds()
        var touched: [HTTP2ServerConnection] = []
        while let entry = timers.popDue(now: now) {
            guard let connection = connections[entry.connectionID] else { continue }
            connection.deliverDelayedResponse(streamID: entry.streamID)
            if !touched.contains(where: { $0 === connection }) { touched.append(connection) }
        }
        for connection in touched { connection.flush() }
    }
}
