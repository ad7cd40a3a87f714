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

    @Test func textLinesCarryTheRequestIDWhileARequestIsAnswered() {
        let handler = LogHandlers.factory(format: "text", level: .info)("tuisong")
        let provider = handler.metadataProvider
        #expect(provider?.get() == [:], "no request, no id")
        RequestContext.$requestID.withValue("req-7") {
            #expect(provider?.get()["request_id"] == .string("req-7"))
        }
    }

    @Test func aTextLineShowsTheRequestID() {
        // What the stream handler writes: its metadata, the provider's included.
        let output = TextCapture()
        var handler = StreamLogHandler(
            label: "tuisong", stream: output, metadataProvider: RequestContext.metadataProvider)
        handler.logLevel = .info
        let logger = Logger(label: "tuisong") { _ in handler }
        RequestContext.$requestID.withValue("req-8") {
            logger.info("request answered", metadata: ["status": "200"])
        }
        #expect(output.text.contains("request_id=req-8"), "\(output.text)")
        #expect(output.text.contains("status=200"))
    }
}

/// Collects what a `StreamLogHandler` writes.
private final class TextCapture: TextOutputStream, @unchecked Sendable {  // one test thread
    var text = ""
    func write(_ string: String) { text += string }
}
