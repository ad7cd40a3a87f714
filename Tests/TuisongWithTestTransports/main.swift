import TuisongCLI
import TuisongEcho
import TuisongGateway

// `tuisong` with the transports kept in the tests (Package.swift's `testTransports`): the
// standard registry and one line per test transport, as the gateway's own registry has a line
// per transport. The tests run it where they run `tuisong` (the CLI's flags and the console's
// form of a transport known only from its declaration).
await TuisongCommandLine.run(
    transports: .standard
        .adding(EchoTransport.declaration))
