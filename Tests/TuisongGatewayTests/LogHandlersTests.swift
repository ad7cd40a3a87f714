import Logging
import Testing
import TuisongGateway

/// The handler factory `tuisong` bootstraps swift-log with: every logger made by label alone
/// (each provider's `tuisong.<name>`) starts at `log.level`, in `log.format`. The factory is
/// called directly: swift-log allows one bootstrap per process.
@Suite struct LogHandlersTests {
    @Test(arguments: ["text", "json"], [Logger.Level.debug, .warning, .critical])
    func handlersStartAtTheConfiguredLevel(format: String, level: Logger.Level) {
        let handler = LogHandlers.factory(format: format, level: level)("tuisong.tencent")
        #expect(handler.logLevel == level)
        #expect((handler is JSONLogHandler) == (format == "json"))
    }
}
