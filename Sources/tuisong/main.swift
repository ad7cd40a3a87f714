import TuisongCLI
import TuisongGateway

// The gateway's command line with the transports this build ships.
await TuisongCommandLine.run(transports: .standard)
