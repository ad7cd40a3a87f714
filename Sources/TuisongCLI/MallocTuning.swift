import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How `serve` asks glibc's allocator to give memory back. Measured with `make bench-memory`
/// (100,000 mixed requests; docs/benchmarks.md): the live heap stays under ~30 MB
/// (heaptrack), yet resident memory grew by ~0.35 KB a request without these, because
/// memory freed in the middle of a heap is kept by glibc, not returned.
///
/// - Four arenas a core (`arenas(processors:)`), half glibc's default. glibc gives each thread
///   that meets contention an arena of its own, up to 8 per core, and memory freed in one is not
///   reused by another: with the default, the server's threads (HTTP, the cooperative pool,
///   event loops, database queues) each kept their own high-water mark, and a chat load's peak
///   RSS was ~270 MB. Two arenas in all held it at ~140 MB, but then the threads queued for the
///   two arenas' locks: on two cores 10 % of a chat message's CPU was spent waiting for or waking
///   a lock inside malloc or free (perf, session nineteen). Eight arenas on two cores cut that to
///   a third or less, for ~7 MB more after `make bench-memory`'s 100,000 requests (63.4 → 70.9
///   MB), now that the trims below hand freed memory back.
/// - A fixed mmap threshold (128 KiB). glibc raises the threshold to the size of the largest
///   block freed, so after one 1 MiB request body every later large body came from the heap,
///   and the holes they left were never returned.
/// - A trim now and then. `malloc_trim(0)` hands back the free pages inside each arena (the
///   top-of-heap trim alone cannot); it takes well under a millisecond on this heap.
/// - No trim on every `free`. With the mmap threshold fixed, glibc's trim threshold stays at
///   128 KiB, so a free that leaves more than that free at an arena's top hands it back (`brk`
///   in the main arena, `madvise` in the other) and the next allocations fault the same pages in
///   again: a chat load at 150 ms made a `brk` every one to six messages and 4–13 page faults a
///   message. At 8 MiB (4 MiB already did) that churn stops (docs/benchmarks.md); the timed
///   trim below still hands the memory back.
///
/// An operator's own `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_` or
/// `GLIBC_TUNABLES` wins.
enum MallocTuning {
    /// Arenas for a machine of `processors` cores.
    static func arenas(processors: Int) -> Int32 { Int32(clamping: 4 * max(1, processors)) }
    static let mmapThreshold: Int32 = 128 * 1024
    static let trimThreshold: Int32 = 8 * 1024 * 1024
    static let trimInterval: TimeInterval = 10

    /// A `mallopt` parameter, numbered as in glibc's <malloc.h>.
    enum Parameter: Int32 {
        case trimThreshold = -1
        case mmapThreshold = -3
        case arenaMax = -8
    }

    /// The `mallopt` calls `serve` makes in `environment`: each setting the operator's
    /// environment does not already make, none under `GLIBC_TUNABLES` (which sets them all).
    static func settings(
        environment: [String: String], processors: Int = ProcessInfo.processInfo.activeProcessorCount
    ) -> [(parameter: Parameter, value: Int32)] {
        guard environment["GLIBC_TUNABLES"] == nil else { return [] }
        let ours: [(variable: String, parameter: Parameter, value: Int32)] = [
            ("MALLOC_ARENA_MAX", .arenaMax, arenas(processors: processors)),
            ("MALLOC_MMAP_THRESHOLD_", .mmapThreshold, mmapThreshold),
            ("MALLOC_TRIM_THRESHOLD_", .trimThreshold, trimThreshold),
        ]
        return ours.filter { environment[$0.variable] == nil }.map { ($0.parameter, $0.value) }
    }

    static func applyForServe() {
        #if canImport(Glibc)
            let environment = ProcessInfo.processInfo.environment
            guard environment["GLIBC_TUNABLES"] == nil else { return }
            // mallopt and malloc_trim are in <malloc.h>, which the Glibc module does not bring
            // in: looked up by name.
            guard let symbol = dlsym(nil, "mallopt") else { return }
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
            for setting in settings(environment: environment) { _ = mallopt(setting.parameter.rawValue, setting.value) }
            startTrimming()
        #endif
    }

    /// A thread of its own, so a busy cooperative pool never delays it and it never delays
    /// a request. Real time, not the injected clock: it paces the process's memory, not the
    /// gateway's logic, and no test waits on it.
    private static func startTrimming() {
        #if canImport(Glibc)
            guard let symbol = dlsym(nil, "malloc_trim") else { return }
            typealias MallocTrim = @convention(c) (Int) -> Int32
            let trim = unsafeBitCast(symbol, to: MallocTrim.self)
            let thread = Thread {
                while true {
                    Thread.sleep(forTimeInterval: trimInterval)
                    _ = trim(0)
                }
            }
            thread.name = "malloc-trim"
            thread.stackSize = 64 * 1024
            thread.start()
        #endif
    }
}
