import Testing

@testable import TuisongCLI

/// What `serve` asks of glibc's allocator, and that an operator's own setting of each wins.
@Suite struct MallocTuningTests {
    @Test func serveSetsTheArenasTheMmapThresholdAndTheTrimThreshold() {
        let settings = MallocTuning.settings(environment: [:], processors: 2)
        #expect(settings.map(\.parameter) == [.arenaMax, .mmapThreshold, .trimThreshold])
        let values: [Int32] = [8, 131_072, 8_388_608]
        #expect(settings.map(\.value) == values)
        // Four arenas a core, at least four.
        #expect(MallocTuning.settings(environment: [:], processors: 16).first?.value == 64)
        #expect(MallocTuning.settings(environment: [:], processors: 0).first?.value == 4)
        // The numbers glibc's <malloc.h> gives M_ARENA_MAX, M_MMAP_THRESHOLD, M_TRIM_THRESHOLD.
        let numbers: [Int32] = [-8, -3, -1]
        #expect(settings.map(\.parameter.rawValue) == numbers)
    }

    @Test func anOperatorsOwnTrimThresholdWins() {
        let settings = MallocTuning.settings(environment: ["MALLOC_TRIM_THRESHOLD_": "131072"])
        #expect(settings.map(\.parameter) == [.arenaMax, .mmapThreshold])
    }

    @Test func anOperatorsOwnArenasAndMmapThresholdWin() {
        let settings = MallocTuning.settings(environment: ["MALLOC_ARENA_MAX": "8", "MALLOC_MMAP_THRESHOLD_": "32768"])
        #expect(settings.map(\.parameter) == [.trimThreshold])
    }

    @Test func glibcTunablesLeaveEverySettingToTheOperator() {
        #expect(MallocTuning.settings(environment: ["GLIBC_TUNABLES": "glibc.malloc.arena_max=4"]).isEmpty)
    }
}
